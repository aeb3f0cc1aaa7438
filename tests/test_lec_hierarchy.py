"""LEC of a hierarchical design: the RTL side is flattened with the flow's hierarchy separator
(closer.flow.settings.HIERARCHY_SEPARATOR), so the submodules' registers pair by name with the
synthesized netlist's (`u_a/count[3]`) and induction proves every signal. Real Yosys on the flow's
own netlist of tests/fixtures/lec_hier (two lanes, each a counter and a direction register).
Two-way: the netlist proves equivalent; flattened with `.` instead (how the gold side was built
before: firdma stayed inconclusive) the lanes' registers do not pair and nothing is proven
equivalent; with two of a lane's counter flops' D inputs exchanged the netlist is refuted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from closer.flow.runner import run_flow
from closer.tasks import lec
from tests.conftest import require_tool

pytestmark = pytest.mark.slow
DESIGN = Path(__file__).parent / "fixtures" / "lec_hier"


@pytest.fixture(scope="module")
def netlist(tmp_path_factory) -> Path:
    for tool in ("verilator", "yosys"):
        require_tool(tool)
    out = tmp_path_factory.mktemp("lec_hier") / "flow"
    run_flow(str(DESIGN), to="synth", backend="classic", out=out)
    path = out / "sc" / "lec_hier" / "job" / "synth" / "0" / "outputs" / "lec_hier.vg"
    assert path.is_file()
    assert "u_a/count" in path.read_text(), "the netlist names the lanes' registers with `/`"
    return path


def _lec(netlist: Path, pdk_paths, work: Path) -> lec.LecResult:
    job = lec.LecJob(rtl=[DESIGN / "rtl" / "lane.v", DESIGN / "rtl" / "lec_hier.v"], top="lec_hier",
                     netlist=netlist, liberty=pdk_paths.liberty("tt_025C_1v80"), work=work,
                     reset=lec.find_reset(lec.netlist_inputs(netlist)))
    return lec.run_lec(job)


def test_the_lanes_registers_pair_and_the_netlist_is_proved(netlist, pdk_paths, tmp_path: Path):
    result = _lec(netlist, pdk_paths, tmp_path)
    assert result.result == "equivalent" and result.unproven == 0, result.reason
    log = result.logs[0].read_text()
    assert re.search(r"u_a/count\[\d\]", log), "the lane's counter is among the paired signals"


def test_flattened_with_a_dot_the_lanes_stay_unpaired(netlist, pdk_paths, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(lec, "HIERARCHY_SEPARATOR", ".")
    result = _lec(netlist, pdk_paths, tmp_path)
    assert result.result != "equivalent" and result.unproven > 0, result.reason


def test_exchanged_counter_inputs_are_refuted(netlist, pdk_paths, tmp_path: Path):
    text = netlist.read_text()
    flops = list(re.finditer(r"\.D\((\S+?)\),\s*\.Q\(\\u_a/count\[\d\]", text))
    if len(flops) < 2:  # the cell's pins in the other order
        flops = list(re.finditer(r"\\u_a/count\[\d\]\S*\s+\(\s*\.CLK\(\w+\),\s*\.D\((\S+?)\)", text))
    assert len(flops) >= 2, "no counter flops of lane u_a in the netlist"
    a, b = flops[:2]
    mutant = tmp_path / "mutant.vg"
    mutant.write_text(text[:a.start(1)] + b[1] + text[a.end(1):b.start(1)] + a[1] + text[b.end(1):])
    result = _lec(mutant, pdk_paths, tmp_path / "mutant")
    assert result.result == "not_equivalent" and result.counterexample_cycle, result.reason
