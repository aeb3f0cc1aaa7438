"""C's verified-RTL checkpoint: the first call of a C trial whose snapshot passes A's oracle.

Each distinct snapshot of the C trial's calls, in call order, is projected onto the A task (only
A's edit surface, the RTL, is taken: `closer.tasks.evaluate.build_tree`) and scored by the
pristine evaluator on A's hidden conditions (`closer.tasks.rescore.evaluate_snapshot`), until one
is feasible. Evaluations are cached by (A task, digest of the projected files), so the golden RTL
under other floorplan or flow settings, or in another trial, is evaluated once."""

from __future__ import annotations

import fnmatch
import hashlib
from pathlib import Path

from closer.matrix.store import Checkpoint
from closer.metered.snapshot import load_snapshot
from closer.tasks.evaluate import load_task
from closer.tasks.paths import TaskPaths
from closer.tasks.rescore import (SnapshotJob, cached_evaluation, eligible_calls, evaluate_snapshot, Selection,
                                  snapshot_store, task_key)
from closer.tasks.runner import RunRecord
from closer.trajectory.reader import read_trajectory


def projected_digest(files: dict[str, str], surface: list[str]) -> str:
    """The digest of the snapshot files that A's edit surface takes."""
    taken = sorted((path, blob) for path, blob in files.items() if any(fnmatch.fnmatchcase(path, p) for p in surface))
    return hashlib.sha256(repr(taken).encode()).hexdigest()


def find_checkpoint(c_record: RunRecord, a_task: Path, cache: Path) -> Checkpoint | None:
    store = snapshot_store(c_record, Path(c_record.paths["trial"]))
    trajectory = Path(c_record.paths.get("trajectory", store.trajectory))
    records = read_trajectory(trajectory).records if trajectory.is_file() else []
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
        evaluation = cached_evaluation(cache_root / key)
        if evaluation is None:
            evaluations += 1
            job = SnapshotJob(store.root, store.control_dir, call.surface_digest, a_paths.root, cache_root / key)
            evaluation = evaluate_snapshot(job)
        if evaluation.scored and evaluation.gate == 1:
            return Checkpoint(seq=call.seq, elapsed_s=call.elapsed_s, cost_units=round(cost, 6),
                              a_reward=evaluation.reward, evaluations=evaluations)
    return None
