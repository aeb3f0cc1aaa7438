"""Replay: re-run every recorded call on its own snapshot and check the public results reproduce.

Each call's edit surface is restored from the content-addressed store into a scratch workspace
and its tool class's commands are run again (outside the budget and the trajectory). The flow is
deterministic, so outcome, exit codes, public metrics and the reward estimate must match exactly;
any difference is reported per call, never hidden.
"""

from __future__ import annotations

import tempfile
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from closer.budget import ToolClass
from closer.errors import CloserError
from closer.metered.config import load_tool_config
from closer.metered.estimator import NO_ESTIMATE, load_estimator
from closer.metered.execute import estimate_reward, execute_tool
from closer.metered.paths import WorkspacePaths
from closer.metered.run import load_run_info
from closer.metered.snapshot import load_snapshot, restore_snapshot
from closer.trajectory.reader import TrajectoryReader
from closer.trajectory.record import Outcome, TrajectoryRecord


class ReplayStatus(StrEnum):
    REPRODUCED = "reproduced"
    MISMATCH = "mismatch"
    SKIPPED = "skipped"
    UNREADABLE = "unreadable"  # a torn trajectory line: a call whose result cannot be compared


class CallReplay(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seq: int  # 0 for an unreadable line (the note names its line number)
    tool: ToolClass | None
    status: ReplayStatus
    differences: list[str] = []
    note: str = ""
    wall_s: float = 0.0


def replay_run(ws: WorkspacePaths, scratch: Path | None = None) -> list[CallReplay]:
    config = load_tool_config(ws.tools_config)
    estimator = load_estimator(config.reward, ws.control)
    run_id = load_run_info(ws).run_id if ws.run_info.exists() else None
    reader = TrajectoryReader(ws.trajectory, run_id)
    results = []
    with tempfile.TemporaryDirectory(prefix="closer-replay-", dir=scratch) as tmp:
        for rec in reader:
            results.append(_replay_one(ws, config, estimator, rec, Path(tmp) / f"{rec.seq:04d}"))
    # torn bytes are never dropped silently: each torn line is a call that cannot be compared
    results += [CallReplay(seq=0, tool=None, status=ReplayStatus.UNREADABLE, note=bad.describe(ws.trajectory))
                for bad in reader.bad_lines if bad.reason != "empty line"]
    return results


def _replay_one(ws: WorkspacePaths, config, estimator, rec: TrajectoryRecord, root: Path) -> CallReplay:
    if rec.outcome.refused:
        return CallReplay(seq=rec.seq, tool=rec.tool, status=ReplayStatus.SKIPPED, note="refused: nothing ran")
    if rec.outcome is Outcome.INFRA_ERROR:
        return CallReplay(seq=rec.seq, tool=rec.tool, status=ReplayStatus.SKIPPED,
                          note=f"infra_error is not a tool result: {rec.message}")
    if rec.surface_digest is None:
        return CallReplay(seq=rec.seq, tool=rec.tool, status=ReplayStatus.MISMATCH,
                          differences=["record has no snapshot"])
    try:
        root.mkdir(parents=True)
        restore_snapshot(ws, load_snapshot(ws, rec.surface_digest), root)
        cmds = config.commands_for(rec.tool, ws.tools_config)
    except CloserError as exc:
        return CallReplay(seq=rec.seq, tool=rec.tool, status=ReplayStatus.MISMATCH, differences=[str(exc)])
    again = execute_tool(root, cmds, rec.args, WorkspacePaths(root).call_results(rec.seq, rec.tool), cmds.timeout_s)
    estimate = estimate_reward(estimator, rec.tool, again, root) if estimator and again.outcome is Outcome.OK else None
    differences = _compare(rec, again.outcome, again.exit_codes, again.metrics,
                           estimate.record_fields() if estimate else NO_ESTIMATE)
    status = ReplayStatus.MISMATCH if differences else ReplayStatus.REPRODUCED
    return CallReplay(seq=rec.seq, tool=rec.tool, status=status, differences=differences, wall_s=again.wall_s)


def _compare(rec: TrajectoryRecord, outcome, exit_codes, metrics, scored: dict) -> list[str]:
    diffs = []
    if outcome != rec.outcome:
        diffs.append(f"outcome: recorded {rec.outcome.value}, replay {outcome.value}")
    if exit_codes != rec.exit_codes:
        diffs.append(f"exit codes: recorded {rec.exit_codes}, replay {exit_codes}")
    for key in sorted(set(rec.metrics) | set(metrics)):
        before, after = rec.metrics.get(key, "<absent>"), metrics.get(key, "<absent>")
        if before != after or type(before) is not type(after):
            diffs.append(f"metric {key}: recorded {before!r}, replay {after!r}")
    for field, value in scored.items():
        if value != getattr(rec, field):
            diffs.append(f"{field}: recorded {getattr(rec, field)}, replay {value}")
    return diffs
