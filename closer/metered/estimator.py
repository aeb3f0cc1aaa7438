"""The pluggable public reward estimate of a metered call.

Either the task names reward targets (`[reward] targets = "targets.toml"`, relative to the control
dir) and the reward library `closer.reward` scores each call's public metrics against them
(`TargetsEstimator`), or it names its own estimator (`[reward] estimator = "module:attr"`; a
module file in the control dir, `.closer/<module>.py`, is loaded from there). The estimator is
called after a call that ran cleanly, with the call's public metrics, and returns a
`RewardEstimate`, or None when that call's metrics cannot be scored (e.g. a sim call has no
timing). Without either, records carry `reward = None`.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from closer.errors import InputError
from closer.toolclass import ToolClass

if TYPE_CHECKING:
    from closer.metered.config import RewardConfig
    from closer.metered.views import RewardView
    from closer.trajectory.record import MetricValue


@dataclass(frozen=True)
class RewardEstimate:
    reward: float | None
    feasible: bool | None  # whether the reward's gates passed
    # False: the call did not evaluate the stage's full gate set; its estimate is recorded as
    # partial_reward (informational) and is never feasible or a best-so-far
    full_gate: bool = True

    def record_fields(self) -> dict[str, float | bool | None]:
        """The trajectory record's reward, feasible and partial_reward for this estimate."""
        if self.full_gate:
            return {"reward": self.reward, "feasible": self.feasible, "partial_reward": None}
        return {"reward": None, "feasible": None, "partial_reward": self.reward}


NO_ESTIMATE: dict[str, float | bool | None] = {"reward": None, "feasible": None, "partial_reward": None}


class RewardEstimator(Protocol):
    def __call__(self, tool: ToolClass, metrics: Mapping[str, MetricValue],
                 results_dir: Path) -> RewardEstimate | None: ...


class TargetsEstimator:
    """The reward library's R = G · exp(−Σ w·max(0, log(m/m*))) on one call's public metrics."""

    def __init__(self, targets_path: Path):
        from closer.reward import load_targets

        self.targets = load_targets(targets_path)

    def __call__(self, tool: ToolClass, metrics: Mapping[str, MetricValue],
                 results_dir: Path) -> RewardEstimate | None:
        from closer.reward import GateUnmeasured, MetricNotFound, compute_reward, metrics_from_mapping

        try:
            result = compute_reward(metrics_from_mapping(metrics, f"{tool.value} call metrics"), self.targets)
        except (GateUnmeasured, MetricNotFound):
            return None  # this call's metrics do not cover the targets: no estimate, not a zero
        return RewardEstimate(result.reward, result.gate == 1)


def load_estimator(reward: RewardConfig | RewardView, search_dir: Path) -> RewardEstimator | None:
    if reward.targets is not None:
        return TargetsEstimator(search_dir / reward.targets)
    spec = reward.estimator
    if spec is None:
        return None
    module_name, attr = spec.split(":")
    try:
        module = _import(module_name, search_dir)
        estimator = getattr(module, attr)
    except (ImportError, AttributeError, SyntaxError) as exc:
        raise InputError(f"reward estimator {spec!r} cannot be loaded: {exc}") from exc
    if not callable(estimator):
        raise InputError(f"reward estimator {spec!r} is not callable")
    return estimator


def _import(module_name: str, search_dir: Path) -> ModuleType:
    """A task's own module is loaded from its control dir afresh (never a stale sys.modules entry
    from another workspace); any other name is imported normally."""
    local = search_dir / f"{module_name.replace('.', '/')}.py"
    if not local.is_file():
        return importlib.import_module(module_name)
    spec = importlib.util.spec_from_file_location(f"_closer_task_{module_name}_{abs(hash(local))}", local)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {local}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
