"""Run: `.venv/bin/python -m pytest -p tests.conftest bench/flow_signoff_mac16_test.py` (one full
mac16 flow; kept out of `make test` for its time: passed on 2026-12-02 in 3,946 s wall / 1,196 s
CPU at load average 8-12 when the bench built mac16 with its own Yosys script, most of it the
setup repair's two full reroutes: docs/physical.md "mac16 under the official rules"; not run
since it goes through `closer flow run`: the bench's mac16 row in docs/flow-scaling.md is that run).

The bench's 16 x 16 MAC (bench/flow_scaling.py, density 0.20) signs off under the official rules
(issue 18's done-when): 0 markers under the official deck (sky130A_mr.drc, FEOL + BEOL +
off-grid), 0 antenna violations after the diode repair, LVS clean, nothing unrouted. It is built
exactly as the bench builds it (`run_one`: `closer flow run` of its design folder since
2026-12-02; before, the bench's own Yosys script and `run_physical`), so the bench's numbers and
this test agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.flow_scaling import run_one
from closer.flow.paths import FlowPaths
from tests.conftest import require_tool

pytestmark = pytest.mark.slow


def test_mac16_is_clean_under_the_official_deck_antenna_and_lvs(tmp_path: Path, pdk_paths):
    for tool in ("yosys", "sta", "klayout"):
        require_tool(tool)
    row = run_one("mac16", tmp_path / "mac16")
    assert "error" not in row, row.get("error")
    m = row["metrics"]
    assert m["closer__route__unrouted_nets"] == 0 and m["detailedroute__route__drc_errors"] == 0
    assert m["closer__signoff__official_drc__errors"] == 0, {
        k: v for k, v in m.items() if k.startswith("closer__signoff__official_drc__")}
    assert m["closer__signoff__official_drc__rules"] > 200  # the deck ran its FEOL and BEOL sections
    assert m["detailedroute__antenna__violating__nets"] == 0, m["closer__signoff__antenna__violating_net_names"]
    assert m["closer__signoff__antenna__checks"] > 10_000
    assert m["closer__signoff__lvs__clean"] is True
    assert m["closer__gate__drc__pass"] and m["closer__gate__antenna__pass"] and m["closer__gate__lvs__pass"]
    phys = FlowPaths(Path(row["run_dir"]), "mac16").node_dir("pnr") / "phys"
    report = json.loads((phys / "signoff_drc" / "signoff_drc.json").read_text())
    assert report["total"] == 0 and report["options"]["feol"] == "true" and report["options"]["offgrid"] == "true"
