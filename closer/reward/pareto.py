"""The Pareto set of several reward results over their target metrics (all lower-is-better).

Rewards saturate at 1, so two results that both meet every target look equal by reward; the
Pareto set compares the raw metric values instead. Only results whose gate is 1 compete;
the others are listed as infeasible.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from closer.reward.errors import MetricsFileError
from closer.reward.models import RewardResult


@dataclass(frozen=True)
class ParetoRow:
    label: str
    reward: float
    gate: int
    values: dict[str, float | None]  # term name -> raw metric value


@dataclass(frozen=True)
class ParetoSet:
    objectives: dict[str, str]  # term name -> metric
    rows: list[ParetoRow]
    front: list[ParetoRow]
    dominated: list[ParetoRow]
    infeasible: list[ParetoRow]

    def as_dict(self) -> dict:
        def row(r: ParetoRow) -> dict:
            return {"label": r.label, "reward": r.reward, "gate": r.gate, "values": r.values}
        return {"objectives": self.objectives, "pareto": [row(r) for r in self.front],
                "dominated": [row(r) for r in self.dominated],
                "infeasible": [row(r) for r in self.infeasible]}


def load_result(path: Path) -> RewardResult:
    """A `closer reward --json` output file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MetricsFileError(f"{path}: cannot read ({exc.strerror})") from None
    if not text.strip():
        raise MetricsFileError(f"{path}: file is empty")
    try:
        return RewardResult.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(file)"
        raise MetricsFileError(f"{path}: not a reward result: {loc}: {first['msg']}") from None


def dominates(a: ParetoRow, b: ParetoRow, names: list[str]) -> bool:
    at_most = all(a.values[n] <= b.values[n] for n in names)
    better = any(a.values[n] < b.values[n] for n in names)
    return at_most and better


def pareto_set(results: list[tuple[str, RewardResult]]) -> ParetoSet:
    if not results:
        raise MetricsFileError("no results given")
    first_label, first = results[0]
    objectives = {name: term.metric for name, term in first.terms.items()}
    if not objectives:
        raise MetricsFileError(f"{first_label}: has no target terms to compare")
    rows = []
    for label, result in results:
        theirs = {name: term.metric for name, term in result.terms.items()}
        if theirs != objectives:
            raise MetricsFileError(
                f"{label}: targets {theirs} differ from {first_label}'s {objectives}; "
                "Pareto sets compare results scored against the same targets"
            )
        rows.append(ParetoRow(label, result.reward, result.gate,
                              {name: result.terms[name].value for name in objectives}))
    names = list(objectives)
    feasible = [r for r in rows if r.gate == 1 and all(v is not None for v in r.values.values())]
    feasible_ids = {id(r) for r in feasible}
    infeasible = [r for r in rows if id(r) not in feasible_ids]
    front = [r for r in feasible if not any(dominates(o, r, names) for o in feasible if o is not r)]
    front_ids = {id(r) for r in front}
    dominated = [r for r in feasible if id(r) not in front_ids]
    front.sort(key=lambda r: (-r.reward, r.label))
    return ParetoSet(objectives, rows, front, dominated, infeasible)
