"""Budget tiers of the metered tools: the tier data file, per-task overrides, and the budget check.

`closer/data/budgets.toml` is the one place the tier numbers live. A task's tool configuration
may override any of them (`BudgetOverride`); `resolve_budget` merges the two into the `Budget`
a run records and is checked against. `check_call` (closer.budgetcheck) is the one budget rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from closer.budgetcheck import Refusal, check_call  # noqa: F401  (the budget rule, re-exported)
from closer.errors import InputError
from closer.tomlio import load_toml_model
from closer.toolclass import ToolClass

BUDGETS_FILE = Path(__file__).resolve().parent / "data" / "budgets.toml"


def _uncapped_to_none(value: object) -> object:
    return None if value == "uncapped" else value


# A call cap: a non-negative count, or None ("uncapped" in TOML, which has no null).
Cap = Annotated[Annotated[int, Field(ge=0)] | None, BeforeValidator(_uncapped_to_none)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class CostWeights(_Strict):
    sim: float = Field(ge=0, description="cost units of one sim call")
    synth: float = Field(ge=0, description="cost units of one synth call")
    pnr: float = Field(ge=0, description="cost units of one pnr call")
    verify: float = Field(ge=0, description="cost units of one verify call")

    def of(self, tool: ToolClass) -> float:
        return getattr(self, tool.value)


class StagnationWindow(_Strict):
    window_calls: int = Field(gt=0, description="calls without a new best that make an episode")
    window_cost_units: float = Field(gt=0, description="cost without a new best that makes an episode")


class TierLimits(_Strict):
    sim: Cap
    synth: Cap
    pnr: Cap
    wall_s: float = Field(gt=0, description="wall-clock limit of the run, from its start")
    cost_units: float = Field(gt=0, description="B of the weighted-cost AUC axis")


class BudgetFile(_Strict):
    verify_cap_default: int = Field(ge=0)
    weights: CostWeights
    stagnation: StagnationWindow
    tiers: dict[str, TierLimits]


class PartialWeights(_Strict):
    sim: float | None = Field(None, ge=0)
    synth: float | None = Field(None, ge=0)
    pnr: float | None = Field(None, ge=0)
    verify: float | None = Field(None, ge=0)


class PartialStagnation(_Strict):
    window_calls: int | None = Field(None, gt=0)
    window_cost_units: float | None = Field(None, gt=0)


class BudgetOverride(_Strict):
    """What a task's tool configuration may say about its budget (`[budget]` table)."""

    tier: str = Field("low", description="tier name in budgets.toml")
    sim: Cap = None  # set explicitly (even to "uncapped") to override
    synth: Cap = None  # set explicitly (even to "uncapped") to override
    pnr: Cap = None  # set explicitly (even to "uncapped") to override
    verify: Cap = None  # set explicitly (even to "uncapped") to override
    wall_s: float | None = Field(None, gt=0)
    cost_units: float | None = Field(None, gt=0)
    weights: PartialWeights = PartialWeights()
    stagnation: PartialStagnation = PartialStagnation()


class Budget(_Strict):
    """The numbers a run runs under (recorded in its run.json)."""

    tier: str
    caps: dict[ToolClass, Annotated[int, Field(ge=0)] | None] = Field(
        description="calls allowed per class; None = uncapped")
    wall_s: float = Field(gt=0, description="wall-clock limit of the run, from its start")
    cost_units: float = Field(gt=0, description="B of the weighted-cost AUC axis")
    weights: CostWeights
    stagnation: StagnationWindow
    overridden: list[str] = Field(default_factory=list, description="keys the task overrode")

    def cap(self, tool: ToolClass) -> int | None:
        return self.caps[tool]


def load_budget_file(path: Path = BUDGETS_FILE) -> BudgetFile:
    return load_toml_model(path, BudgetFile, "budget file {path} does not exist")


def resolve_budget(override: BudgetOverride, budget_file: BudgetFile | None = None) -> Budget:
    """The tier's numbers with the task's overrides applied."""
    budget_file = budget_file or load_budget_file()
    tier = budget_file.tiers.get(override.tier)
    if tier is None:
        raise InputError(f"unknown budget tier {override.tier!r}; known: {', '.join(budget_file.tiers)}")
    caps: dict[ToolClass, int | None] = {
        ToolClass.SIM: tier.sim, ToolClass.SYNTH: tier.synth, ToolClass.PNR: tier.pnr,
        ToolClass.VERIFY: budget_file.verify_cap_default,
    }
    overridden = []
    for tool in ToolClass:
        if tool.value in override.model_fields_set:
            caps[tool] = getattr(override, tool.value)
            overridden.append(tool.value)
    weights = budget_file.weights.model_copy(update=_set_fields(override.weights))
    stagnation = budget_file.stagnation.model_copy(update=_set_fields(override.stagnation))
    overridden += [f"weights.{k}" for k in _set_fields(override.weights)]
    overridden += [f"stagnation.{k}" for k in _set_fields(override.stagnation)]
    wall_s, cost_units = tier.wall_s, tier.cost_units
    if override.wall_s is not None:
        wall_s = override.wall_s
        overridden.append("wall_s")
    if override.cost_units is not None:
        cost_units = override.cost_units
        overridden.append("cost_units")
    return Budget(tier=override.tier, caps=caps, wall_s=wall_s, cost_units=cost_units,
                  weights=weights, stagnation=stagnation, overridden=overridden)


def _set_fields(model: BaseModel) -> dict:
    return {k: v for k, v in model.model_dump().items() if v is not None}
