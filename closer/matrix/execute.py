"""One matrix trial on a Dask worker: one `closer task run` (its sandbox, metered tools, pristine
evaluator and resume are the runner's), then its record read back into a store entry."""

from __future__ import annotations

import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path

from closer.errors import CloserError
from closer.inputs import load_json_model
from closer.matrix.paths import MatrixPaths, slug
from closer.matrix.plan import TrialJob
from closer.matrix.store import StoreEntry
from closer.procs import Command, run
from closer.tasks.runner import RunRecord, TrialPaths
from closer.tasks.trialstate import BEFORE_AGENT, reclaim_trial


def run_job(job: TrialJob, out: Path) -> dict:
    """Run the trial (a killed earlier attempt is set aside and restarted) and return its entry."""
    paths = MatrixPaths(out)
    restart_killed(job, paths)
    log = paths.log(job.key)
    log.parent.mkdir(parents=True, exist_ok=True)
    done = run(Command(task_run_argv(job)), log, check=False)
    record_file = TrialPaths(job.trial_dir).record
    if not record_file.is_file():
        raise CloserError(f"{job.key}: `closer task run` exited {done.returncode} without a record "
                          f"(log {log}): {done.log_tail(3)}")
    record = load_json_model(record_file, RunRecord, "run record")
    entry = entry_of(job, record)
    if job.a_task is not None and record.run_state == "success":
        from closer.matrix.checkpoint import find_checkpoint

        entry.a_checkpoint = find_checkpoint(record, job.a_task, paths.checkpoint_cache)
        entry.checkpoint_searched = True
    if job.layout_points and record.run_state == "success":
        from closer.matrix.checkpoint import layout_points

        entry.start, entry.first_feasible = layout_points(record, job.task_dir, paths.checkpoint_cache,
                                                          with_start=job.kind == "B")
        entry.layout_searched = True
    return entry.model_dump(mode="json")


def task_run_argv(job: TrialJob) -> list[str]:
    argv = [sys.executable, "-m", "closer", "task", "run", str(job.task_dir), *job.agent.run_options(),
            "--trial", str(job.trial), "--resume", "--out", str(job.runs)]
    if job.start_rtl is not None:
        argv += ["--start-rtl", str(job.start_rtl)]
    if job.budget_file is not None:
        argv += ["--budget", str(job.budget_file)]
    return argv


def restart_killed(job: TrialJob, paths: MatrixPaths) -> None:
    """A trial the kill of an earlier matrix run cut off after its agent started would be resumed by
    the runner as an infrastructure failure (never counted); the matrix measures it again instead:
    its folder is moved to <out>/interrupted/ (kept, not deleted) and the trial starts afresh. One
    killed before its agent started is left to the runner's --resume, which starts it afresh."""
    trial_dir = job.trial_dir
    if not trial_dir.exists() or TrialPaths(trial_dir).record.exists():
        return
    with reclaim_trial(trial_dir) as claim:  # refuses (exit 2) while the earlier run still lives
        if claim.progress.phase in BEFORE_AGENT:
            return
        aside_root = paths.root / "interrupted"
        aside_root.mkdir(exist_ok=True)
        n = 1
        while (aside := aside_root / f"{slug(job.key)}.{n}").exists():
            n += 1
        shutil.move(str(trial_dir), aside)


def entry_of(job: TrialJob, record: RunRecord) -> StoreEntry:
    return StoreEntry(
        key=job.key, role=job.role, design=job.design, kind="AB" if job.role == "ab" else job.kind,
        budget_tier=job.budget_tier, agent=job.agent_label, agent_backend=record.agent_backend,
        agent_model=record.agent_model, agent_quantization=record.agent_quantization,
        machinery_baseline=record.machinery_baseline, trial=job.trial, suite_version=job.suite_version,
        task_checksum=record.task_checksum, tool_versions=record.tool_versions, run_state=record.run_state,
        reward=record.reward, feasible=record.is_feasible, record=str(TrialPaths(job.trial_dir).record),
        composed_from=job.composed_from, finished_at=now())


def failed_composition(job: TrialJob, a_entry: StoreEntry) -> StoreEntry:
    """A's final RTL did not pass A's gates: the composition ends there with reward 0."""
    return StoreEntry(
        key=job.key, role="ab", design=job.design, kind="AB", budget_tier=job.budget_tier, agent=job.agent_label,
        agent_backend=a_entry.agent_backend, agent_model=a_entry.agent_model,
        agent_quantization=a_entry.agent_quantization, machinery_baseline=a_entry.machinery_baseline,
        trial=job.trial, suite_version=job.suite_version, task_checksum=None, tool_versions=a_entry.tool_versions,
        run_state=a_entry.run_state, reward=0.0, feasible=False, record=None, composed_from=a_entry.key,
        note="A's final RTL failed A's gates: no B trial (reward 0)", finished_at=now())


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
