"""verify is the public projection of the pristine evaluator (issue 15): the last `closer-tool verify`
estimate of a run equals its evaluation's public_reward. Through the public commands
(`closer task generate/run`, `closer evaluate`, the tool the workspace's tools.toml runs).
Task gcd-B-low: the sweep's closure loop over pnr (the longest: ~4 physical flows of the weak start)."""

from __future__ import annotations

from pathlib import Path

import pytest

from closer.tasks.paths import SuitePaths
from tests.projection_support import check_projection, rescore_has_hidden_curve, run_baseline
from tests.projection_support import suite  # noqa: F401  (the module fixture)

pytestmark = pytest.mark.slow


def test_sweep_on_b_closes_with_pnr_calls(suite: SuitePaths, tmp_path: Path) -> None:
    record = run_baseline(suite, "gcd-B-low", "sweep", tmp_path / "runs")
    check_projection(record, tmp_path)
    assert record["calls_by_tool"].get("pnr", 0) >= 1
    # the weak start's max-slew/max-cap at ss (one nor4_1 on 8 pins) is fixed by the synthesis
    # buffering and sizing the generated flow/settings.toml turns on (issue 17)
    assert record["reward"] > 0, record["failing_gates"]
    rescore_has_hidden_curve(record)
