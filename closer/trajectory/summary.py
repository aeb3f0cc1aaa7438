"""Summarize a trajectory file: locate its run header, resolve B and the windows, stream the records."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from closer import collector
from closer.budget import BudgetOverride, ToolClass, resolve_budget
from closer.errors import InputError
from closer.inputs import load_json_model, validation_message
from closer.metered.paths import CONTROL_DIR, WorkspacePaths
from closer.trajectory.measures import SummaryParams, TrajectorySummary, Summarizer
from closer.trajectory.reader import TrajectoryReader
from closer.trajectory.record import RunInfo


def trajectory_files(path: Path) -> tuple[Path, Path | None]:
    """(trajectory.jsonl, run.json if present) from a trajectory file, a control dir or a workspace."""
    if path.is_file():
        run_json = path.parent / "run.json"
        return path, run_json if run_json.is_file() else None
    if not path.exists():
        raise InputError(f"{path} does not exist")
    ws = WorkspacePaths.locate(path) if path.name != CONTROL_DIR else WorkspacePaths(path.parent)
    return ws.trajectory, ws.run_info if ws.run_info.is_file() else None


def load_run_header(run_json: Path) -> RunInfo:
    return load_json_model(run_json, RunInfo, "run header")


def resolve_params(run_json: Path | None, tier: str | None = None, wall_s: float | None = None,
                   cost_units: float | None = None, window_calls: int | None = None,
                   window_cost_units: float | None = None,
                   thresholds: list[float] | None = None,
                   full_gate_tools: dict[ToolClass, list[str]] | None = None) -> SummaryParams:
    """B and the stagnation windows: explicit values, else the run's run.json, else the tier's;
    `full_gate_tools` is the task kind's rule of which calls count (None: every call's reward)."""
    if run_json is not None and tier is None:
        budget = load_run_header(run_json).budget
        source = str(run_json)
    else:
        budget = resolve_budget(BudgetOverride(tier=tier or "low"))
        source = f"tier {budget.tier} (budgets.toml)"
    explicit = {k: v for k, v in {"wall_s": wall_s, "cost_units": cost_units, "window_calls": window_calls,
                                  "window_cost_units": window_cost_units}.items() if v is not None}
    if explicit:
        source += " with " + ", ".join(f"{k}={v}" for k, v in explicit.items())
    try:
        return _params(budget, explicit, thresholds, source, full_gate_tools)
    except ValidationError as exc:
        raise InputError(f"summary parameters: {validation_message(exc)}") from None


def _params(budget, explicit: dict, thresholds, source: str, full_gate_tools) -> SummaryParams:
    return SummaryParams(
        wall_s=explicit.get("wall_s", budget.wall_s),
        cost_units=explicit.get("cost_units", budget.cost_units),
        window_calls=explicit.get("window_calls", budget.stagnation.window_calls),
        window_cost_units=explicit.get("window_cost_units", budget.stagnation.window_cost_units),
        thresholds=sorted(thresholds or []), source=source, full_gate_tools=full_gate_tools,
    )


def summarize_trajectory(trajectory: Path, params: SummaryParams,
                         run_id: str | None = None) -> TrajectorySummary:
    """`run_id`: the run's id (from run.json); every record must carry it."""
    reader = TrajectoryReader(trajectory, run_id, views=True)
    acc = Summarizer(params)
    with collector.paused():
        acc.add_all(reader)
        return acc.result(str(trajectory), [b.describe(trajectory) for b in reader.bad_lines])


