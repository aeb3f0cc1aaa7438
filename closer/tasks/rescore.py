"""`closer trajectory rescore RUN`: the hidden anytime curve of a trial.

Each distinct edit-surface snapshot of the trial's calls is rebuilt onto the pristine task
workspace and scored by the pristine evaluator (`closer.tasks.evaluate.evaluate`) on the hidden
conditions, in a process pool. Evaluations are cached by (task, evaluator version, surface
digest), so a snapshot is evaluated once, also across invocations; a snapshot equal to the
trial's final evaluated surface reuses the trial's own evaluation. The result, the hidden
best-so-far curve beside the public one with the AUC of both, goes to `rescore.json` in the trial
folder (schema: closer/schemas/trajectory-rescore.schema.json); record.json is never rewritten.

    <cache>/<task key>/<surface digest>/
      evaluation/evaluation.json     the EvaluationRecord (its presence is the cache hit)
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import as_completed
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from closer import __version__
from closer.budget import ToolClass
from closer.errors import InputError
from closer.metered.paths import WorkspacePaths
from closer.metered.snapshot import load_snapshot, restore_snapshot
from closer.procs import worker_pool
from closer.flow import reuse as flow_reuse
from closer.tasks.estimator import full_gate_tools
from closer.tasks.evaluate import EvaluationRecord, build_tree, load_task
from closer.tasks.paths import SuitePaths, TaskPaths, tree_checksum
from closer.tasks.runner import RunRecord, evaluate_in_sandbox
from closer.trajectory.measures import CurvePoint, Milestone, SummaryParams, auc_step, summarize_records
from closer.trajectory.reader import read_trajectory
from closer.trajectory.record import TrajectoryRecord
from closer.trajectory.summary import resolve_params
from closer.inputs import load_json_model

RESCORE_FILE = "rescore.json"
CACHE_DIR = "rescore-cache"
Progress = Callable[[str], None]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HiddenResult(_Model):
    reward: float | None
    scored: bool
    feasible: bool = Field(description="every required gate passed on the hidden conditions")
    failing_gates: list[str]
    evaluation: str = Field(description="the evaluation.json this result was read from")


class RescoredCall(_Model):
    seq: int
    tool: ToolClass
    surface_digest: str
    elapsed_s: float
    cost_units: float = Field(description="cumulative weighted cost including this call")
    public_reward: float | None = Field(description="public estimate (full-gate calls only)")
    partial_reward: float | None = Field(description="informational estimate of a call that is not full-gate")
    hidden: HiddenResult | None = Field(description="None: this snapshot has not been evaluated")


class Selection(_Model):
    calls: list[ToolClass] | None = Field(description="tool classes whose snapshots were evaluated (None: all)")
    last: int | None = Field(description="only the last K selected calls (None: all)")


class RescoreCounts(_Model):
    distinct_snapshots: int
    selected_snapshots: int
    evaluated: int = Field(description="evaluations run by this invocation")
    cache_hits: int
    reused_trial_evaluation: int


class RescoreFile(_Model):
    """rescore.json: the public and the hidden best-so-far of one trial."""

    schema_version: Literal["1"] = "1"
    task_id: str
    agent: str
    trial: int
    run_id: str | None
    rescored_at: str
    closer_version: str = __version__
    task_dir: str
    cache: str
    selection: Selection
    counts: RescoreCounts
    complete: bool = Field(description="every call that ran has a hidden result")
    params: SummaryParams
    calls: list[RescoredCall]
    curve_public: list[CurvePoint]
    curve_hidden: list[CurvePoint] = Field(description="best-so-far of the hidden reward over the evaluated calls")
    auc_wall_public: float
    auc_cost_public: float
    auc_wall_hidden: float
    auc_cost_hidden: float
    best_public_reward: float | None
    best_hidden_reward: float | None
    first_feasible_public: Milestone | None
    first_feasible_hidden: Milestone | None


@dataclass(frozen=True)
class Trial:
    dir: Path
    record: RunRecord


@dataclass(frozen=True)
class SnapshotJob:
    store: Path       # the workspace whose snapshot store holds the digest
    control: Path | None  # its run (control) dir when outside the workspace
    digest: str
    task_dir: Path
    out: Path         # <cache>/<task key>/<digest>


def find_trials(run: Path) -> list[Trial]:
    """RUN is a trial folder (record.json in it) or a runs root with record.json files below."""
    files = [run / "record.json"] if (run / "record.json").is_file() else sorted(run.rglob("record.json"))
    if not files:
        raise InputError(f"{run}: no record.json in or under it (a trial folder or a runs root of `closer task run`)")
    trials = []
    for path in files:
        trials.append(Trial(path.parent, load_json_model(path, RunRecord, "run record")))
    return trials


def task_dir_of(trial: Trial, suite: Path | None) -> Path:
    if suite is not None:
        return SuitePaths(suite).task(trial.record.task_id).root
    if "task" not in trial.record.paths:
        raise InputError(f"{trial.dir / 'record.json'}: paths.task missing (recorded before schema 2); "
                         "pass --suite SUITE")
    return Path(trial.record.paths["task"])


def snapshot_store(record: RunRecord, trial_dir: Path) -> WorkspacePaths:
    """The run's snapshot store (the one place that maps a record to it)."""
    if "workspace" not in record.paths:
        raise InputError(f"{trial_dir / 'record.json'}: paths.workspace missing")
    control = record.paths.get("run")  # the run dir outside the workspace (sandboxed runs)
    return WorkspacePaths(Path(record.paths["workspace"]), control_dir=Path(control) if control else None)


def task_key(task: TaskPaths) -> str:
    """Evaluations depend on the task (public and hidden part) and the evaluator version."""
    text = f"{tree_checksum(task.root)}:{tree_checksum(task.hidden.root)}:{__version__}"
    return f"{task.root.name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def eligible_calls(records: list[TrajectoryRecord], selection: Selection) -> list[TrajectoryRecord]:
    """Calls whose snapshot is evaluated: they ran (refused calls did not), in the chosen classes,
    the last K of them."""
    ran = [r for r in records if not r.outcome.refused and r.surface_digest is not None]
    if selection.calls is not None:
        ran = [r for r in ran if r.tool in selection.calls]
    return ran[-selection.last:] if selection.last else ran


def rescore_trial(trial: Trial, selection: Selection, jobs: int, suite: Path | None = None,
                  cache: Path | None = None, progress: Progress = print) -> RescoreFile:
    record = trial.record
    paths, task = load_task(task_dir_of(trial, suite))
    store = snapshot_store(record, trial.dir)
    records = _records(Path(record.paths.get("trajectory", store.trajectory)))
    cache_root = (cache or trial.dir / CACHE_DIR).resolve() / task_key(paths)
    digests = list(dict.fromkeys(r.surface_digest for r in eligible_calls(records, selection)))
    cached = {d for d in digests if cached_evaluation(cache_root / d) is not None}
    reused = reuse_trial_evaluation(trial, store, [d for d in digests if d not in cached], cache_root)
    todo = [d for d in digests if d not in cached and d not in reused]
    progress(f"rescore {record.task_id} {record.agent} trial {record.trial}: {len(records)} calls, "
             f"{len(digests)} snapshots selected: {len(cached)} cached, {len(reused)} from the trial's evaluation, "
             f"{len(todo)} to evaluate (jobs {jobs})")
    _evaluate_all([SnapshotJob(store.root, store.control_dir, d, paths.root, cache_root / d) for d in todo], records, jobs, progress)
    params = resolve_params(store.run_info if store.run_info.is_file() else None,
                            full_gate_tools=full_gate_tools(task.kind))
    counts = RescoreCounts(distinct_snapshots=len({r.surface_digest for r in records if r.surface_digest}),
                           selected_snapshots=len(digests), evaluated=len(todo), cache_hits=len(cached),
                           reused_trial_evaluation=len(reused))
    result = build_rescore(record, records, params, cache_root, selection, counts, paths.root)
    out = trial.dir / RESCORE_FILE
    tmp = out.with_suffix(".tmp")
    tmp.write_text(result.model_dump_json(indent=2) + "\n")
    tmp.replace(out)
    progress(f"  wrote {out}: AUC wall public {result.auc_wall_public:.4f} / hidden {result.auc_wall_hidden:.4f}, "
             f"best public {result.best_public_reward} / hidden {result.best_hidden_reward}")
    return result


def _records(trajectory: Path) -> list[TrajectoryRecord]:
    """The trial's calls; an agent that made no metered call left no trajectory (empty curves)."""
    return read_trajectory(trajectory).records if trajectory.exists() else []


def cached_evaluation(entry: Path) -> EvaluationRecord | None:
    path = entry / "evaluation" / "evaluation.json"
    if not path.is_file():
        return None
    try:
        return load_json_model(path, EvaluationRecord, "cached evaluation")
    except InputError:
        return None  # a half-written, damaged or older entry: evaluate again


def reuse_trial_evaluation(trial: Trial, store: WorkspacePaths, digests: list[str], cache_root: Path) -> set[str]:
    """A snapshot whose files are exactly the surface the trial's evaluation took needs no new
    evaluation: copy that evaluation into the cache."""
    path = Path(trial.record.paths.get("evaluation", trial.dir / "evaluation" / "evaluation.json"))
    if not digests or not path.is_file():
        return set()
    try:
        evaluation = load_json_model(path, EvaluationRecord, "trial evaluation")
    except InputError:
        return set()  # no usable evaluation to reuse: every snapshot is evaluated
    for digest in digests:
        if evaluation.accepted and load_snapshot(store, digest).files == evaluation.surface_files:
            target = cache_root / digest / "evaluation" / "evaluation.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            return {digest}
    return set()


def _evaluate_all(jobs_list: list[SnapshotJob], records: list[TrajectoryRecord], jobs: int, progress: Progress) -> None:
    if not jobs_list:
        return
    seqs = {j.digest: [r.seq for r in records if r.surface_digest == j.digest] for j in jobs_list}
    with worker_pool(jobs, "spawn") as pool:
        futures = {}
        for job in jobs_list:
            progress(f"  snapshot {job.digest[:12]} (calls {', '.join(map(str, seqs[job.digest]))}): evaluating")
            futures[pool.submit(evaluate_snapshot, job)] = job
        for done, future in enumerate(as_completed(futures), start=1):
            job = futures[future]
            ev = future.result()
            gates = f", failing {', '.join(ev.failing_gates)}" if ev.failing_gates else ""
            progress(f"  [{done}/{len(jobs_list)}] snapshot {job.digest[:12]}: hidden reward {ev.reward}{gates} "
                     f"({ev.wall_s:.0f} s)")


def evaluate_snapshot(job: SnapshotJob) -> EvaluationRecord:
    """The snapshot's files onto the pristine task workspace, then the pristine evaluator in its
    sandbox (the snapshot is the agent's: its RTL runs only there). Only a shared flow cache
    ($CLOSER_FLOW_CACHE) is used: the trial's own was dropped after its evaluation."""

    paths, task = load_task(job.task_dir)
    store = WorkspacePaths(job.store, control_dir=job.control)
    job.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="candidate-", dir=job.out) as tmp:
        surface, candidate = Path(tmp) / "surface", Path(tmp) / "workspace"
        restore_snapshot(store, load_snapshot(store, job.digest), surface)
        build_tree(paths.workspace, surface, task.edit_surface, candidate)
        return evaluate_in_sandbox(candidate, paths, job.out / "evaluation", job.out / "evaluate.log",
                                   flow_reuse.cache_dir(None))


def build_rescore(record: RunRecord, records: list[TrajectoryRecord], params: SummaryParams, cache_root: Path,
                  selection: Selection, counts: RescoreCounts, task_dir: Path) -> RescoreFile:
    public = summarize_records(records, params)
    calls = _rescored_calls(records, params, cache_root)
    hidden_curve, first_hidden = hidden_best_so_far(calls)
    return RescoreFile(
        task_id=record.task_id, agent=record.agent, trial=record.trial, run_id=record.run_id,
        rescored_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), task_dir=str(task_dir),
        cache=str(cache_root), selection=selection, counts=counts,
        complete=all(c.hidden is not None for c in calls), params=params, calls=calls,
        curve_public=public.curve, curve_hidden=hidden_curve,
        auc_wall_public=public.auc_wall, auc_cost_public=public.auc_cost,
        auc_wall_hidden=auc_step([(p.elapsed_s, p.best) for p in hidden_curve], params.wall_s),
        auc_cost_hidden=auc_step([(p.cost_units, p.best) for p in hidden_curve], params.cost_units),
        best_public_reward=public.best_reward, best_hidden_reward=hidden_curve[-1].best if hidden_curve else None,
        first_feasible_public=public.first_feasible, first_feasible_hidden=first_hidden,
    )


def _rescored_calls(records: list[TrajectoryRecord], params: SummaryParams, cache_root: Path) -> list[RescoredCall]:
    """Every call that ran, on the summary's axes, with the cached hidden result of its snapshot."""
    out, cost, elapsed = [], 0.0, 0.0
    for rec in records:
        cost += rec.cost.units
        elapsed = max(elapsed, rec.elapsed_s)
        if rec.outcome.refused or rec.surface_digest is None:
            continue
        full = params.evaluates_full_gates(rec)
        out.append(RescoredCall(
            seq=rec.seq, tool=rec.tool, surface_digest=rec.surface_digest, elapsed_s=elapsed, cost_units=cost,
            public_reward=rec.reward if full else None,
            partial_reward=rec.partial_reward if rec.partial_reward is not None else (None if full else rec.reward),
            hidden=_hidden(cache_root / rec.surface_digest)))
    return out


def _hidden(entry: Path) -> HiddenResult | None:
    ev = cached_evaluation(entry)
    if ev is None:
        return None
    return HiddenResult(reward=ev.reward, scored=ev.scored, feasible=bool(ev.scored and ev.gate == 1),
                        failing_gates=ev.failing_gates, evaluation=str(entry / "evaluation" / "evaluation.json"))


def hidden_best_so_far(calls: list[RescoredCall]) -> tuple[list[CurvePoint], Milestone | None]:
    curve: list[CurvePoint] = []
    first: Milestone | None = None
    for c in calls:
        if c.hidden is None or c.hidden.reward is None:
            continue
        if c.hidden.feasible and first is None:
            first = Milestone(seq=c.seq, elapsed_s=c.elapsed_s, cost_units=c.cost_units)
        if not curve or c.hidden.reward > curve[-1].best:
            curve.append(CurvePoint(seq=c.seq, elapsed_s=c.elapsed_s, cost_units=c.cost_units, best=c.hidden.reward))
    return curve, first


def load_rescore(trial_dir: Path) -> RescoreFile | None:
    path = trial_dir / RESCORE_FILE
    if not path.exists() and not path.is_symlink():
        return None
    return load_json_model(path, RescoreFile, "rescore file")
