"""The public reward estimate of a task's metered calls.

The targets are the hidden objective, so the estimate an agent sees is feasibility only: 1.0 when
every public functional (and, for verify, gate-level) test passed, else the fraction that passed;
synthesis-only calls carry no estimate. The trajectory's best-so-far and AUC use this number;
the final reward comes from the evaluator on hidden conditions.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from closer import metrics as mk
from closer.budget import ToolClass
from closer.metered.estimator import RewardEstimate


def estimate(tool: ToolClass, metrics: Mapping[str, object], results_dir: Path) -> RewardEstimate | None:
    if tool not in (ToolClass.SIM, ToolClass.VERIFY):
        return None
    total, failed = metrics.get(mk.FUNC_TESTS_TOTAL), metrics.get(mk.FUNC_TESTS_FAILED)
    if not total:
        return RewardEstimate(0.0, False)
    if tool is ToolClass.VERIFY:
        gtotal, gfailed = metrics.get(mk.GLS_TESTS_TOTAL), metrics.get(mk.GLS_TESTS_FAILED)
        if not gtotal:
            return RewardEstimate(0.0, False)
        total, failed = total + gtotal, failed + gfailed
    passed = (total - failed) / total
    return RewardEstimate(round(passed, 6), failed == 0)
