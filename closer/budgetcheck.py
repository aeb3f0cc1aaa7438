"""The one budget rule (`check_call`), in a module of its own: the metered call's hot path checks
a run's budget (closer.budget.Budget, or its view closer.metered.views.BudgetView) without the
budget's models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from closer.toolclass import ToolClass

if TYPE_CHECKING:
    from closer.budget import Budget
    from closer.metered.views import BudgetView


@dataclass(frozen=True)
class Refusal:
    kind: Literal["refused_budget", "refused_time"]
    message: str


def check_call(budget: Budget | BudgetView, tool: ToolClass, used: int, elapsed_s: float) -> Refusal | None:
    """None if a `tool` call may run now, with `used` calls of that class already counted."""
    if elapsed_s >= budget.wall_s:
        return Refusal(kind="refused_time", message=(
            f"refused: the run's wall-clock budget is spent ({elapsed_s:.0f} s of "
            f"{budget.wall_s:.0f} s, tier {budget.tier}); no more tool calls"))
    cap = budget.cap(tool)
    if cap is not None and used >= cap:
        return Refusal(kind="refused_budget", message=(
            f"refused: the {tool.value} budget is spent ({used} of {cap} calls, tier "
            f"{budget.tier}); other tool classes may still have budget (see `closer-tool status`)"))
    return None
