"""The public reward estimate of a task's metered calls.

`verify` and `pnr` run the pristine evaluator's scoring on the public conditions and write its
result into their metrics (`closer__estimate__reward`, `closer__estimate__feasible`; see
closer.tasks.public_check): the estimate is that reward, which is the evaluation's
`public_reward` for the same tree. `sim` and `synth` evaluate only part of the gates and carry no
estimate (they never raise the best-so-far curve and are never feasible).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from closer.budget import ToolClass
from closer.metered.estimator import RewardEstimate

ESTIMATE_REWARD = "closer__estimate__reward"
ESTIMATE_FEASIBLE = "closer__estimate__feasible"


def estimate(tool: ToolClass, metrics: Mapping[str, object], results_dir: Path) -> RewardEstimate | None:
    if tool not in (ToolClass.VERIFY, ToolClass.PNR) or ESTIMATE_REWARD not in metrics:
        return None
    reward = metrics[ESTIMATE_REWARD]
    if reward is None:
        return RewardEstimate(None, False)
    return RewardEstimate(float(reward), bool(metrics.get(ESTIMATE_FEASIBLE)))
