"""Gated log-penalty reward from ORFS metrics: R = G · exp(−Σ_j w_j · max(0, log(m_j / m*_j))).

    from closer.reward import load_metrics, load_targets, compute_reward
    result = compute_reward(load_metrics("metadata.json"), load_targets("targets.toml"))
    result.reward, result.model_dump(mode="json")

See docs/reward.md for the formula, the gate table and the metric keys.
"""

from closer.reward.compute import compute_reward
from closer.reward.errors import (
    GateUnmeasured, MetricNotFound, MetricsFileError, TargetsFileError,
)
from closer.reward.metrics_file import Metrics, load_metrics, metrics_from_mapping
from closer.reward.models import GateStatus, RewardResult, Term, result_json
from closer.reward.targets import GateName, LoadedTargets, Target, Targets, load_targets, targets_from_dict

__all__ = [
    "compute_reward", "load_metrics", "load_targets", "metrics_from_mapping", "targets_from_dict",
    "Metrics", "Targets", "Target", "LoadedTargets", "GateName", "GateStatus", "RewardResult",
    "Term", "result_json", "GateUnmeasured", "MetricNotFound", "MetricsFileError", "TargetsFileError",
]
