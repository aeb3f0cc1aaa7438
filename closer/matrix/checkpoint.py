"""The points of a trial the protocol compares at, each scored by the pristine evaluator on a
snapshot of the trial (closer.tasks.rescore.evaluate_snapshot, in its sandbox):

* C's verified-RTL checkpoint (`find_checkpoint`): the first call of a C trial whose snapshot
  passes A's oracle (A versus C);
* the first feasible layout (`layout_points`): a B, C or A+B trial's own hidden reward at its first
  call whose public result was feasible on the full gates, and a B or A+B trial's at its starting
  RTL (B versus C after C's first feasible layout: what each made of the rest of its budget).

For the checkpoint:
Each distinct snapshot of the C trial's calls, in call order, is projected onto the A task (only
A's edit surface, the RTL, is taken: `closer.tasks.evaluate.build_tree`) and scored by the
pristine evaluator on A's hidden conditions (`closer.tasks.rescore.evaluate_snapshot`), until one
is feasible. Evaluations are cached by (A task, digest of the projected files), so the golden RTL
under other floorplan or flow settings, or in another trial, is evaluated once."""

from __future__ import annotations

import fnmatch
import hashlib
from pathlib import Path

from closer.matrix.store import Checkpoint, LayoutPoint
from closer.metered.run import load_run_info
from closer.metered.snapshot import load_snapshot
from closer.tasks.estimator import full_gate_tools
from closer.tasks.evaluate import load_task
from closer.tasks.paths import TaskPaths
from closer.tasks.rescore import (SnapshotJob, Trial, cached_evaluation, eligible_calls, evaluate_snapshot,
                                  reuse_trial_evaluation, Selection, snapshot_store, task_key)
from closer.tasks.runner import RunRecord
from closer.trajectory.measures import summarize_records
from closer.trajectory.reader import read_trajectory
from closer.trajectory.summary import resolve_params


def projected_digest(files: dict[str, str], surface: list[str]) -> str:
    """The digest of the snapshot files that A's edit surface takes."""
    taken = sorted((path, blob) for path, blob in files.items() if any(fnmatch.fnmatchcase(path, p) for p in surface))
    return hashlib.sha256(repr(taken).encode()).hexdigest()


def find_checkpoint(c_record: RunRecord, a_task: Path, cache: Path) -> Checkpoint | None:
    store, records = _calls(c_record)
    ran = {call.seq for call in eligible_calls(records, Selection(calls=None, last=None))}
    a_paths, a_config = load_task(a_task)
    cache_root = cache.resolve() / task_key(TaskPaths(a_paths.root))
    surface = list(a_config.edit_surface)
    cost, evaluations, seen = 0.0, 0, set()
    for call in records:
        cost += call.cost.units
        if call.seq not in ran:
            continue
        key = projected_digest(load_snapshot(store, call.surface_digest).files, surface)
        if key in seen:
            continue
        seen.add(key)
        evaluation, ran_now = _evaluation(store, call.surface_digest, a_paths.root, cache_root / key)
        evaluations += ran_now
        if evaluation.scored and evaluation.gate == 1:
            return Checkpoint(seq=call.seq, elapsed_s=call.elapsed_s, cost_units=round(cost, 6),
                              a_reward=evaluation.reward, evaluations=evaluations)
    return None


def layout_points(record: RunRecord, task: Path, cache: Path, with_start: bool) -> tuple[LayoutPoint | None,
                                                                                        LayoutPoint | None]:
    """(the starting RTL's point when `with_start`, the first feasible call's point) of a trial,
    each scored on the trial's own task; None where there is none (no call was feasible)."""
    store, records = _calls(record)
    total = sum(call.cost.units for call in records)
    cache_root = cache.resolve() / task_key(TaskPaths(task))
    trial, start = Trial(Path(record.paths["trial"]), record), None
    if with_start:
        reward, ran = _score(trial, store, load_run_info(store).baseline_snapshot, task, cache_root)
        start = LayoutPoint(seq=None, elapsed_s=0.0, cost_units=0.0, cost_after_units=round(total, 6),
                            reward=reward, evaluations=ran)
    params = resolve_params(store.run_info, full_gate_tools=full_gate_tools(record.kind))
    first = summarize_records(records, params).first_feasible
    call = next((c for c in records if first is not None and c.seq == first.seq), None)
    if call is None or call.surface_digest is None:
        return start, None
    reward, ran = _score(trial, store, call.surface_digest, task, cache_root)
    return start, LayoutPoint(seq=call.seq, elapsed_s=first.elapsed_s, cost_units=round(first.cost_units, 6),
                              cost_after_units=round(total - first.cost_units, 6), reward=reward, evaluations=ran)


def _calls(record: RunRecord):
    """The trial's snapshot store and its trajectory's calls (none without a trajectory)."""
    store = snapshot_store(record, Path(record.paths["trial"]))
    trajectory = Path(record.paths.get("trajectory", store.trajectory))
    return store, read_trajectory(trajectory).records if trajectory.is_file() else []


def _score(trial: Trial, store, digest: str, task: Path, cache_root: Path) -> tuple[float | None, int]:
    """The hidden reward of snapshot `digest` on `task` (cached by digest; the trial's own
    evaluation when the snapshot is what it scored), and the evaluations run for it."""
    reuse_trial_evaluation(trial, store, [digest], cache_root)
    evaluation, ran = _evaluation(store, digest, task, cache_root / digest)
    return evaluation.reward, ran


def _evaluation(store, digest: str, task: Path, entry: Path):
    """The evaluation of snapshot `digest` on `task` cached at `entry`, else run there; and
    whether it ran (1) or was cached (0)."""
    evaluation = cached_evaluation(entry)
    if evaluation is not None:
        return evaluation, 0
    return evaluate_snapshot(SnapshotJob(store.root, store.control_dir, digest, task, entry)), 1
