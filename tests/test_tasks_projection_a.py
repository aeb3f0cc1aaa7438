"""verify is the public projection of the pristine evaluator (issue 15): the last `closer-tool verify`
estimate of a run equals its evaluation's public_reward. Through the public commands
(`closer task generate/run`, `closer evaluate`, the tool the workspace's tools.toml runs).
Task gcd-A-low: oracle, null and sweep (~1-2 min each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from closer.tasks.paths import SuitePaths
from tests.projection_support import check_projection, run_baseline
from tests.projection_support import suite  # noqa: F401  (the module fixture)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("agent", ["oracle", "null", "sweep"])
def test_verify_equals_public_reward_on_a(suite: SuitePaths, tmp_path: Path, agent: str) -> None:
    record = run_baseline(suite, "gcd-A-low", agent, tmp_path / "runs")
    check_projection(record, tmp_path)
    assert record["reward"] == (1.0 if agent == "oracle" else record["reward"])
