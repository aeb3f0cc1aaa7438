"""`closer matrix run`: the matrix's trials on Dask distributed. The client plans, submits, and
is the store's only writer; the workers run one `closer task run` each (closer.matrix.execute).
A+B compositions are submitted as their A trials finish."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from closer.errors import CloserError, InputError
from closer.inputs import load_json_model
from closer.matrix.execute import failed_composition, run_job
from closer.matrix.paths import MatrixPaths
from closer.matrix.plan import TrialJob, composed_job, composed_key, plain_jobs
from closer.matrix.spec import ClusterKind, ClusterSpec, MatrixSpec
from closer.matrix.store import ResultStore, StoreEntry
from closer.tasks.models import TaskKind
from closer.tasks.runner import RunRecord

JOBQUEUE_CLASSES = {ClusterKind.SLURM: "SLURMCluster", ClusterKind.PBS: "PBSCluster", ClusterKind.LSF: "LSFCluster"}


@contextlib.contextmanager
def dask_client(cluster: ClusterSpec) -> Iterator[object]:
    """A LocalCluster (one thread per worker process: a trial is one process at a time), an existing
    scheduler, or a dask-jobqueue cluster scaled to `workers` jobs."""
    from distributed import Client, LocalCluster

    if cluster.kind is ClusterKind.ADDRESS:
        with Client(cluster.address) as client:
            yield client
        return
    if cluster.kind is ClusterKind.LOCAL:
        made = LocalCluster(n_workers=cluster.workers, threads_per_worker=1, processes=True,
                            dashboard_address=None, silence_logs=40)
    else:
        import dask_jobqueue  # only HPC specs need it

        made = getattr(dask_jobqueue, JOBQUEUE_CLASSES[cluster.kind])(**cluster.options)
        made.scale(jobs=cluster.workers)
    with made, Client(made) as client:
        yield client


def generate_tasks(spec: MatrixSpec, paths: MatrixPaths) -> tuple[dict[tuple[str, str, str], Path], dict[str, str]]:
    """Each design's suite (generated once; a re-run regenerates the same content or refuses)."""
    from closer.tasks.generate import generate_suite

    tasks, versions = {}, {}
    for design in spec.designs:
        suite = paths.suite(design)
        manifest = generate_suite(design, suite, spec.kinds, spec.budgets, require_check=not spec.unchecked)
        versions[design] = manifest.suite_version
        for entry in manifest.tasks:
            tasks[(design, entry.kind.value, entry.budget_tier)] = suite / entry.path
    return tasks, versions


class MatrixRun:
    def __init__(self, spec: MatrixSpec, out: Path, console: Console) -> None:
        self.spec, self.paths, self.console = spec, MatrixPaths(out.resolve()), console
        self.store = ResultStore(self.paths.store)
        self.tasks, self.versions = generate_tasks(spec, self.paths)
        self.done = self.store.done()
        self.ran: list[str] = []

    def run(self) -> list[StoreEntry]:
        from distributed import as_completed

        jobs = plain_jobs(self.spec, self.tasks, self.versions, self.paths)
        by_key = {job.key: job for job in jobs}
        keys = set(by_key) | {self._composed_key(a) for a in jobs if self._composes(a)}
        todo = self.pending(jobs)
        failures = 0
        with _terminate_as_interrupt(), dask_client(self.spec.cluster) as client, self._progress() as bar:
            task = bar.add_task("trials", total=len(keys), completed=len(keys & set(self.done)))
            futures = as_completed([self._submit(client, job) for job in todo])
            for future in futures:
                try:
                    entry = StoreEntry.model_validate(future.result())
                except Exception as exc:  # a trial that failed to run is not stored: the next run retries it
                    failures += 1
                    self.console.print(f"{future.key}: {type(exc).__name__}: {exc}", soft_wrap=True, markup=False,
                                       style="red")
                    continue
                self._finish(entry)
                bar.advance(task)
                job = by_key.get(entry.key)
                if job is not None and self._composes(job):
                    ab = self._compose(job)
                    if ab is None:
                        bar.advance(task)  # a composition whose A failed its gates is stored at once
                    else:
                        futures.add(self._submit(client, ab))
        if failures:
            raise CloserError(f"{failures} trial(s) failed to run (not stored; a re-run retries them); "
                              f"logs in {self.paths.root / 'logs'}")
        return self.store.entries()

    def pending(self, jobs: list[TrialJob]) -> list[TrialJob]:
        """What is left to run: the trials without a store entry, and the compositions of the A
        trials that have one (those of failed A trials are stored now, with reward 0)."""
        missing = [job for job in jobs if job.key not in self.done]
        follow_ups = [ab for a in jobs if self._composes(a) and a.key in self.done
                      and (ab := self._compose(a)) is not None]
        return missing + follow_ups

    def _composes(self, job: TrialJob) -> bool:
        return self.spec.compose and job.kind == TaskKind.A.value

    @staticmethod
    def _composed_key(a_job: TrialJob) -> str:
        return composed_key(a_job.design, a_job.budget_tier, a_job.agent_label, a_job.trial)

    def _compose(self, a_job: TrialJob) -> TrialJob | None:
        """The composition of a finished A trial: a B job to run, or None when there is nothing to
        run (already stored, or A failed its gates: a reward-0 entry is stored now)."""
        key = self._composed_key(a_job)
        if key in self.done:
            return None
        a_entry = self.done[a_job.key]
        if not a_entry.feasible or a_entry.record is None:
            placeholder = a_job.model_copy(update={"key": key, "role": "ab", "composed_from": a_job.key})
            self._store(failed_composition(placeholder, a_entry))
            return None
        a_record = load_json_model(Path(a_entry.record), RunRecord, "run record")
        b_task = self.tasks[(a_job.design, TaskKind.B.value, a_job.budget_tier)]
        c_task = self.tasks[(a_job.design, TaskKind.C.value, a_job.budget_tier)]
        return composed_job(a_job, a_record, b_task, c_task, self.paths)

    def _submit(self, client, job: TrialJob):
        return client.submit(run_job, job, self.paths.root, key=f"trial-{job.key}", pure=False, retries=0)

    def _finish(self, entry: StoreEntry) -> None:
        self._store(entry)
        self.ran.append(entry.key)
        self.console.print(f"{entry.key}: {entry.run_state}, reward {entry.reward}, feasible {entry.feasible}",
                           soft_wrap=True, markup=False)

    def _store(self, entry: StoreEntry) -> None:
        self.store.append(entry)
        self.done[entry.key] = entry

    def _progress(self) -> Progress:
        return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=self.console, transient=False)


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the run like Ctrl-C: the cluster is closed, its workers and their trials end."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_matrix(spec: MatrixSpec, out: Path, console: Console | None = None) -> list[StoreEntry]:
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: not a folder")
    out.mkdir(parents=True, exist_ok=True)
    return MatrixRun(spec, out, console or Console(stderr=True)).run()
