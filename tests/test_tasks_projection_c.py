"""verify is the public projection of the pristine evaluator (issue 15): the last `closer-tool verify`
estimate of a run equals its evaluation's public_reward. Through the public commands
(`closer task generate/run`, `closer evaluate`, the tool the workspace's tools.toml runs).
Task gcd-C-low: oracle, null, and sweep over the reference RTL (a physical-closure baseline)."""

from __future__ import annotations

from pathlib import Path

import pytest

from closer.tasks.paths import SuitePaths
from tests.projection_support import check_projection, rescore_has_hidden_curve, run_baseline
from tests.projection_support import suite  # noqa: F401  (the module fixture)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("agent", ["oracle", "null", "sweep"])
def test_verify_equals_public_reward_on_c(suite: SuitePaths, tmp_path: Path, agent: str) -> None:
    record = run_baseline(suite, "gcd-C-low", agent, tmp_path / "runs")
    check_projection(record, tmp_path)
    if agent == "oracle":
        assert record["reward"] == 1.0 and record["public_reward"] == 1.0
    if agent == "sweep":  # over the reference RTL (a physical-closure baseline on C): issue 15's done-when
        assert record["calls_by_tool"].get("pnr", 0) >= 1 and record["reward"] > 0, record["failing_gates"]
        assert record["machinery_baseline"]
        rescore_has_hidden_curve(record)
