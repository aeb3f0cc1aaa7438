"""verify is the public projection of the pristine evaluator (issue 15): the last `closer-tool verify`
estimate of a run equals its evaluation's public_reward. Through the public commands
(`closer task generate/run`, `closer evaluate`, the tool the workspace's tools.toml runs).
Task gcd-B-low: the oracle, and `closer-tool pnr` on the weak start showing its failing gates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from closer.tasks.paths import SuitePaths
from tests.projection_support import check_projection, public_tool, run_baseline
from tests.projection_support import suite  # noqa: F401  (the module fixture)

pytestmark = pytest.mark.slow


def test_oracle_on_b_verify_equals_public_reward(suite: SuitePaths, tmp_path: Path) -> None:
    record = run_baseline(suite, "gcd-B-low", "oracle", tmp_path / "runs")
    check_projection(record, tmp_path)
    assert record["reward"] == 1.0
    assert all(not v.startswith("unknown") for k, v in record["tool_versions"].items() if k.startswith("metered__"))
    evaluation = json.loads(Path(record["paths"]["evaluation"]).read_text())
    # the hidden scoring timed the hidden corners too; the public one did not
    hidden = json.loads((Path(record["paths"]["evaluation"]).parent / "hidden" / "metrics.json").read_text())
    public = json.loads((Path(record["paths"]["evaluation"]).parent / "public" / "metrics.json").read_text())
    assert "finish__timing__hold__ws__corner__tt_100C_1v80" in hidden
    assert "finish__timing__hold__ws__corner__tt_100C_1v80" not in public
    assert hidden["closer__place__hpwl"] != public["closer__place__hpwl"]  # another placer seed
    assert evaluation["gates"]["sta"] == "pass"


def test_null_b_pnr_shows_its_failing_gates(suite: SuitePaths, tmp_path: Path) -> None:
    """The weak start with synthesis buffering and sizing off (flow/settings.toml), which leaves
    it where the generated settings left it before the flow had them: max-slew/max-cap at ss; no
    route repair rounds, so route/DRC/LVS may fail too (what an agent's pnr call then shows).
    (At the generated settings the weak start now signs off: test_sweep_on_b_closes_with_pnr_calls
    reaches a feasible result on its first pnr call.)"""
    import shutil

    ws = tmp_path / "ws"
    shutil.copytree(suite.task("gcd-B-low").workspace, ws, symlinks=True)
    settings = ws / "flow" / "settings.toml"
    settings.write_text(settings.read_text().replace("synth_buffering = true", "synth_buffering = false")
                        .replace("synth_sizing = true", "synth_sizing = false")
                        .replace("repair_rounds = 8", "repair_rounds = 0")
                        .replace("timing_repair_rounds = 2", "timing_repair_rounds = 0"))
    assert "repair_rounds = 0" in settings.read_text()  # repair would take minutes on a layout failing anyway
    metrics, out = public_tool(ws, "pnr", tmp_path / "pnr")
    assert not metrics["closer__estimate__feasible"] and metrics["closer__estimate__reward"] == 0.0
    assert "gates: func pass, lec pass, gls pass" in out and "reward estimate (public conditions): 0" in out
    failing = [g for g in ("sta", "route", "drc", "lvs") if f"{g} fail" in out]
    assert failing and all(f"gate {g}: fail:" in out for g in failing)
    for line in ("unrouted nets:", "DRC errors:", "LVS:", "corner ss_100C_1v60: setup WS", "area:"):
        assert line in out
    assert "stage pnr started" in out and "physical Route done" in out  # progress
    png = tmp_path / "pnr" / "pnr" / "gcd.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "pnr" / "pnr" / "gcd.def").is_file() and (tmp_path / "pnr" / "pnr" / "gcd.gds").is_file()
    assert "2400" not in out and "40000" not in out  # no target value reaches the agent
