"""Every cell class a design needs is usable: a block with an asynchronous active-low reset
(designs/timer_arst) synthesizes to the async-reset flops (dfrtp) and signs off through the real
flow: routed, DRC 0, LVS clean (their RESET_B is reached on its met1 port). Two-way: with those
flops on the dont-use list again, synthesis cannot legalize the flops, as before."""

from __future__ import annotations

import json

import pytest

from closer.errors import ToolError
from closer.flow.paths import FlowPaths
from closer.flow.runner import run_flow
from tests.conftest import require_tool


@pytest.fixture(scope="module")
def timer_run(tmp_path_factory, pdk_paths):
    for tool in ("verilator", "yosys", "sta"):
        require_tool(tool)
    out = tmp_path_factory.mktemp("timer_arst")
    run_flow("timer_arst", out=out)
    return FlowPaths(out, "timer_arst")


def test_async_reset_flops_are_used(timer_run):
    netlist = (timer_run.node_dir("synth") / "outputs" / "timer_arst.vg").read_text()
    assert netlist.count("sky130_fd_sc_hd__dfrtp_") == 17  # 8 count + tick + 8 bank bits


def test_async_reset_block_signs_off(timer_run):
    from closer.reward.gates import GATES, GateName, observe
    from closer.reward.metrics_file import load_metrics

    meta = json.loads(timer_run.metadata.read_text())
    assert meta["closer__route__unrouted_nets"] == 0
    assert meta["detailedroute__route__drc_errors"] == 0 and meta["closer__signoff__drc_errors"] == 0
    assert meta["closer__signoff__lvs_errors"] == 0
    obs = observe(GATES[GateName.STA], load_metrics([timer_run.metadata]))
    assert str(obs.observed) == "pass", obs.reason


def test_banning_the_async_flops_again_fails_synthesis(tmp_path, monkeypatch, pdk_paths):
    from closer.flow import platform

    listed = platform.dont_use_patterns()
    monkeypatch.setattr(platform, "dont_use_patterns", lambda name="sky130hd": [
        *listed, "sky130_fd_sc_hd__dfrtp_*", "sky130_fd_sc_hd__dfrbp_*", "sky130_fd_sc_hd__dfrtn_*",
        "sky130_fd_sc_hd__dfbb*", "sky130_fd_sc_hd__dfst*", "sky130_fd_sc_hd__dfsb*"])
    with pytest.raises(ToolError, match=r"step synth .*failed"):
        run_flow("timer_arst", to="synth", out=tmp_path)
    log = next((tmp_path / "sc").rglob("synth.log")).read_text()
    assert "cannot be legalized" in log
