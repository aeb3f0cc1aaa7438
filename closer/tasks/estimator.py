"""The public reward estimate of a task's metered calls, and which calls count.

Only a call that evaluates the stage's full gate set (`FULL_GATE_TOOLS`) gives an estimate that
can be feasible and can move best-so-far and the AUC; every other call's estimate is recorded as
`partial_reward`, for information only (docs/trajectory.md, "Measures").

`verify` and `pnr` run the pristine evaluator's scoring on the public conditions and write its
result into their metrics (`closer__estimate__reward`, `closer__estimate__feasible`; see
closer.tasks.public_check): the estimate is that reward, which is the evaluation's
`public_reward` for the same tree. `sim` and `synth` evaluate only part of the gates and carry no
estimate (they never raise the best-so-far curve and are never feasible).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from closer import metrics as mk
from closer.budget import ToolClass
from closer.metered.estimator import RewardEstimate
from closer.tasks.models import TaskKind

# A pnr result evaluates the physical gates only if it measured them (a flow that stopped early
# did not).
PHYSICAL_GATE_KEYS = (mk.ROUTE_DRC_ERRORS, mk.SIGNOFF_DRC_ERRORS, mk.SIGNOFF_LVS_ERRORS, mk.ANTENNA_VIOLATING_NETS)
_PHYSICAL = {ToolClass.VERIFY: [], ToolClass.PNR: list(PHYSICAL_GATE_KEYS)}

# kind -> tool class -> metric keys the call's metrics must hold to have evaluated every gate
FULL_GATE_TOOLS: dict[TaskKind, dict[ToolClass, list[str]]] = {
    TaskKind.A: {ToolClass.VERIFY: []},
    TaskKind.B: _PHYSICAL,
    TaskKind.C: _PHYSICAL,
}


def full_gate_tools(kind: TaskKind | str) -> dict[ToolClass, list[str]]:
    return {tool: list(keys) for tool, keys in FULL_GATE_TOOLS[TaskKind(kind)].items()}


def evaluates_full_gates(tool: ToolClass, metrics: Mapping[str, object], kind: TaskKind | None = None) -> bool:
    """Whether a call's result evaluated the full gate set of `kind` (of any kind if None: an A
    workspace has no pnr tool, so the union is A's rule there)."""
    kinds = [kind] if kind is not None else list(TaskKind)
    for k in kinds:
        keys = FULL_GATE_TOOLS[k].get(tool)
        if keys is not None and all(key in metrics for key in keys):
            return True
    return False

ESTIMATE_REWARD = "closer__estimate__reward"
ESTIMATE_FEASIBLE = "closer__estimate__feasible"


def estimate(tool: ToolClass, metrics: Mapping[str, object], results_dir: Path) -> RewardEstimate | None:
    if tool not in (ToolClass.VERIFY, ToolClass.PNR) or ESTIMATE_REWARD not in metrics:
        return None
    # verify and pnr score the tree with the kind's whole gate set (closer.tasks.score): a gate the
    # flow did not measure fails the scoring there, so their estimate is always a full-gate one
    reward = metrics[ESTIMATE_REWARD]
    if reward is None:
        return RewardEstimate(None, False)
    return RewardEstimate(float(reward), bool(metrics.get(ESTIMATE_FEASIBLE)))
