"""LEC with inferred memories (issue 17): the RTL side's `$mem_v2` (no SAT model) is mapped to
flops with `memory_map`, as synthesis maps it, so designs with a memory are proved or refuted.
Real Yosys on the flow's own netlists of fifo8 (8 x 8, one read port) and regfile (two read
ports). Two-way: the netlist proves equivalent; with two memory bits' D inputs
exchanged it is refuted with a counterexample."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from closer.designs.model import load_design
from closer.flow.runner import run_flow
from closer.tasks import lec
from tests.conftest import require_tool

pytestmark = pytest.mark.slow


def _netlist(design: str, tmp: Path) -> Path:
    run_flow(design, to="synth", backend="classic", out=tmp / "flow")
    netlist = tmp / "flow" / "sc" / design / "job" / "synth" / "0" / "outputs" / f"{design}.vg"
    assert netlist.is_file()
    return netlist


def _lec(design: str, netlist: Path, pdk_paths, work: Path) -> lec.LecResult:
    loaded, paths = load_design(design)
    job = lec.LecJob(rtl=paths.rtl(loaded), top=loaded.top, netlist=netlist,
                     liberty=pdk_paths.liberty("tt_025C_1v80"), work=work,
                     parameters=loaded.config("default").parameters,
                     reset=lec.find_reset(lec.netlist_inputs(netlist)))
    return lec.run_lec(job)


def _swap_word_inputs(netlist: Path, out: Path) -> Path:
    """The D inputs of the first two memory-bit flops exchanged (bits 0 and 1 of one word)."""
    text = netlist.read_text()
    flops = list(re.finditer(r"\\(?:mem|regs)\[\d+\]\[\d+\]\$\S+\s+\(\s*\.CLK\(\w+\),\s*\.D\((\S+?)\)", text))
    assert len(flops) >= 2, "no memory flops in the netlist"
    (a, b) = flops[:2]
    swapped = (text[:a.start(1)] + b[1] + text[a.end(1):b.start(1)] + a[1] + text[b.end(1):])
    out.write_text(swapped)
    return out


@pytest.mark.parametrize("design", ["fifo8", "regfile"])
def test_memory_design_is_proved_and_a_mutant_refuted(design, pdk_paths, tmp_path: Path):
    for tool in ("verilator", "yosys"):
        require_tool(tool)
    netlist = _netlist(design, tmp_path)
    golden = _lec(design, netlist, pdk_paths, tmp_path / "golden")
    assert golden.result == "equivalent" and golden.unproven == 0, golden.reason

    mutant = _lec(design, _swap_word_inputs(netlist, tmp_path / "mutant.vg"), pdk_paths, tmp_path / "mutant")
    assert mutant.result == "not_equivalent" and mutant.counterexample_cycle, mutant.reason
