"""Setup repair by gate sizing (closer.physical.repair.sizing): the size ladders, the Verilog edit,
and OpenSTA's sizing run two-way on a real netlist (a failing gcd gets better and the edited
netlist, timed again by OpenSTA, shows the slack the repair reported; a met design is left alone)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from closer.errors import ToolError
from closer.physical.io.netlist import Instance, Netlist
from closer.physical.repair import sizing
from closer.physical.signoff import sta

SS = "ss_100C_1v60"


def test_ladders_go_up_one_family_and_skip_dont_use():
    masters = ["sky130_fd_sc_hd__nand2_1", "sky130_fd_sc_hd__nand2_4", "sky130_fd_sc_hd__nand2_2",
               "sky130_fd_sc_hd__nand2_8", "sky130_fd_sc_hd__nand2b_1", "sky130_fd_sc_hd__tapvpwrvgnd_1",
               "sky130_fd_sc_hd__buf_16"]
    ladders = sizing.size_ladders(masters, ("*__nand2_8",))
    assert ladders["sky130_fd_sc_hd__nand2_1"] == ["sky130_fd_sc_hd__nand2_2", "sky130_fd_sc_hd__nand2_4"]
    assert ladders["sky130_fd_sc_hd__nand2_4"] == [] and ladders["sky130_fd_sc_hd__nand2b_1"] == []
    assert "sky130_fd_sc_hd__nand2_8" not in ladders


def _netlist() -> Netlist:
    instances = {"a_b_": Instance("a_b_", "sky130_fd_sc_hd__inv_1", {}),
                 "_7_": Instance("_7_", "sky130_fd_sc_hd__nand2_1", {})}
    return Netlist("t", instances, {}, {}, original={"a_b_": "a[0]$b", "_7_": "_7_"})


def test_verilog_edit_changes_exactly_the_resized_instances(tmp_path: Path):
    src = tmp_path / "in.v"
    src.write_text("module t();\n  sky130_fd_sc_hd__inv_1 \\a[0]$b  (\n    .A(x)\n  );\n"
                   "  sky130_fd_sc_hd__nand2_1 _7_ (.A(x));\n  sky130_fd_sc_hd__nand2_1 _77_ (.A(x));\nendmodule\n")
    resized = {"a_b_": ("sky130_fd_sc_hd__inv_1", "sky130_fd_sc_hd__inv_2"),
               "_7_": ("sky130_fd_sc_hd__nand2_1", "sky130_fd_sc_hd__nand2_2")}
    text = sizing.write_verilog(src, tmp_path / "out.v", _netlist(), resized).read_text()
    assert "sky130_fd_sc_hd__inv_2 \\a[0]$b  (" in text and "sky130_fd_sc_hd__nand2_2 _7_ (" in text
    assert "sky130_fd_sc_hd__nand2_1 _77_ (" in text
    with pytest.raises(ToolError, match="not found once"):
        sizing.write_verilog(src, tmp_path / "bad.v", _netlist(),
                             {**resized, "_9_": resized["_7_"]})


def test_parse_sizing_names_and_refuses_unknown_instances(tmp_path: Path):
    text = ("CLOSER_BEFORE -5e-10 -2e-9\nCLOSER_RESIZE a[0]$b sky130_fd_sc_hd__inv_2 -\n"
            "CLOSER_AFTER 1e-11 0.0\nCLOSER_SIZING_DONE\n")
    r = sizing.parse_sizing(text, SS, _netlist(), tmp_path / "log")
    assert r.resized == {"a_b_": ("sky130_fd_sc_hd__inv_1", "sky130_fd_sc_hd__inv_2")}
    assert (r.ws_before_ns, r.tns_before_ns, r.ws_after_ns) == pytest.approx((-0.5, -2.0, 0.01))
    with pytest.raises(ToolError, match="not in the netlist"):
        sizing.parse_sizing(text.replace("a[0]$b", "ghost"), SS, _netlist(), tmp_path / "log")


def _gcd_netlist(repo, pdk_paths, tmp_path: Path, period_ns: float) -> tuple[Path, Path, Netlist]:
    from closer.physical.io.netlist import read_netlist, synthesize, yosys_json

    lib = pdk_paths.liberty("tt_025C_1v80")
    src = synthesize([repo.design_dir("gcd") / "rtl" / "gcd.v"], "gcd", lib, tmp_path / "gcd.v", tmp_path / "s.log")
    netlist = read_netlist(yosys_json(src, "gcd", lib, tmp_path / "n.json", tmp_path / "j.log"), "gcd")
    sdc = tmp_path / "gcd.sdc"
    sdc.write_text(f"create_clock -name core_clock -period {period_ns} [get_ports clk]\n")
    return src, sdc, netlist


@pytest.mark.slow
def test_sizing_improves_a_failing_gcd_and_leaves_a_met_one(repo, pdk_paths, tmp_path: Path):
    from closer.physical.io.lef import read_macros

    macros = read_macros(pdk_paths.cell_lef)
    src, sdc, netlist = _gcd_netlist(repo, pdk_paths, tmp_path, 4.0)
    lib = pdk_paths.liberty(SS)
    cfg = sizing.SizingConfig(max_passes=8, buffer_passes=0, setup_derate=1.0, drv_repair=False)  # setup sizing alone
    r = sizing.size_for_setup(SS, lib, src, "gcd", sdc, None, False, netlist, macros, cfg, tmp_path / "w")
    assert r.ws_before_ns < 0 and r.resized and r.ws_after_ns > r.ws_before_ns and r.tns_after_ns > r.tns_before_ns
    assert all(re.sub(r"_\d+$", "", old) == re.sub(r"_\d+$", "", new) for old, new in r.resized.values())
    sized = sizing.write_verilog(src, tmp_path / "sized.v", netlist, r.resized)
    assert sta.run_sta(SS, lib, sized, "gcd", sdc, None, tmp_path / "w").setup_ws_ns == pytest.approx(r.ws_after_ns, abs=1e-3)
    met = relaxed_run(lib, src, netlist, macros, cfg, tmp_path)
    assert met.ws_before_ns >= 0 and not met.resized and met.ws_after_ns == met.ws_before_ns


def relaxed_run(lib: Path, src: Path, netlist: Netlist, macros, cfg: sizing.SizingConfig,
                tmp_path: Path) -> sizing.SizingResult:
    """The same repair of the same netlist at a 40 ns clock, which it meets."""
    relaxed = tmp_path / "relaxed.sdc"
    relaxed.write_text("create_clock -name core_clock -period 40 [get_ports clk]\n")
    return sizing.size_for_setup(SS, lib, src, "gcd", relaxed, None, False, netlist, macros, cfg, tmp_path / "m")


def test_script_reads_the_cap_drivers_as_data_and_drv_repair_can_be_off(tmp_path: Path):
    names = tmp_path / "cap.txt"
    args = (tmp_path / "x.lib", tmp_path / "x.v", "top", tmp_path / "x.sdc", None, False, {}, )
    on = sizing.sizing_script(*args, sizing.SizingConfig(dont_use=()), tmp_path / "out", names)
    assert f"open {{{names}}} r" in on and "pin_slew_limit_violations" in on
    assert on.index("CLOSER_BEFORE") < on.index("pin_slew_limit_violations") < on.index("find_timing_paths")
    off = sizing.sizing_script(*args, sizing.SizingConfig(dont_use=(), drv_repair=False), tmp_path / "out", names)
    assert "pin_slew_limit_violations" not in off and str(names) not in off


@pytest.mark.slow
def test_drv_sizing_upsizes_overloaded_drivers_and_leaves_a_clean_netlist(repo, pdk_paths, tmp_path: Path):
    """gcd mapped without fanout buffering, at a 40 ns clock (setup met): gates driving wide nets
    miss max transition at ss; the repair upsizes them and OpenSTA, timing the edited netlist
    again, finds no violation. On the repaired netlist nothing is resized, unless a driver is
    named as over its max capacitance: that one goes one size up."""
    from closer.physical.io.lef import read_macros

    macros = read_macros(pdk_paths.cell_lef)
    src, sdc, netlist = _gcd_netlist(repo, pdk_paths, tmp_path, 40.0)
    lib = pdk_paths.liberty(SS)
    assert sta.run_sta(SS, lib, src, "gcd", sdc, None, tmp_path / "w0").max_slew_violations > 0
    cfg = sizing.SizingConfig()
    r = sizing.size_for_setup(SS, lib, src, "gcd", sdc, None, False, netlist, macros, cfg, tmp_path / "w")
    assert r.resized and r.drv_resized == len(r.resized) and r.ws_before_ns >= 0
    sized = sizing.write_verilog(src, tmp_path / "sized.v", netlist, r.resized)
    assert sta.run_sta(SS, lib, sized, "gcd", sdc, None, tmp_path / "w1").max_slew_violations == 0
    clean = sizing.size_for_setup(SS, lib, sized, "gcd", sdc, None, False, netlist, macros, cfg, tmp_path / "c")
    assert not clean.resized and clean.drv_resized == 0
    flop = next(name for name, inst in netlist.instances.items() if inst.master == "sky130_fd_sc_hd__dfxtp_1")
    named = sizing.size_for_setup(SS, lib, sized, "gcd", sdc, None, False, netlist, macros, cfg, tmp_path / "n",
                                  (netlist.original.get(flop, flop),))
    assert named.resized == {flop: ("sky130_fd_sc_hd__dfxtp_1", "sky130_fd_sc_hd__dfxtp_2")}
    assert named.drv_resized == 1


CHAIN_V = """module chain (a, b, c, d, y);
  input a, b, c, d;
  output y;
  wire n0, n1;
  sky130_fd_sc_hd__inv_2 u0 (.A(a), .Y(n0));
  sky130_fd_sc_hd__nand4_1 u1 (.A(n0), .B(b), .C(c), .D(d), .Y(n1));
  sky130_fd_sc_hd__buf_1 u2 (.A(n1), .X(y));
endmodule
"""
# n1's load puts u1's output over max transition at ss; n0's is just low enough for u0 to drive
# nand4_1's input and too high once u1 grows (a larger nand4 loads its inputs more): measured at ss,
# n0 from 0.207 to 0.208 pF (nand4_1: u1/Y and u2/A over; nand4_2: u0/Y and u1/A over)
CHAIN_SDC = """set_input_transition 0.1 [get_ports {a b c d}]
set_load 0.060 [get_nets n1]
set_load 0.2075 [get_nets n0]
"""


@pytest.mark.slow
def test_a_slew_violation_moved_upstream_by_an_upsizing_is_followed_there(pdk_paths, tmp_path: Path):
    """Max-transition repair in passes (PicoRV32: a nand4_1 that, upsized, put its input net over
    the limit, so a choice by the total left it and 7 violations): the violating driver takes the
    size that clears its own net, the next pass the driver of its input net, and OpenSTA finds
    the edited netlist clean. Two-way: where that input driver cannot grow, the passes end with
    as many violations as they began with and their changes are undone."""
    from closer.physical.io.lef import read_macros
    from closer.physical.io.netlist import read_netlist, yosys_json

    macros = read_macros(pdk_paths.cell_lef)
    src, sdc = tmp_path / "chain.v", tmp_path / "chain.sdc"
    src.write_text(CHAIN_V)
    sdc.write_text(CHAIN_SDC)
    netlist = read_netlist(yosys_json(src, "chain", pdk_paths.liberty("tt_025C_1v80"), tmp_path / "n.json",
                                      tmp_path / "j.log"), "chain")
    lib = pdk_paths.liberty(SS)
    assert sta.run_sta(SS, lib, src, "chain", sdc, None, tmp_path / "w0").max_slew_violations == 2
    r = sizing.size_for_setup(SS, lib, src, "chain", sdc, None, False, netlist, macros, sizing.SizingConfig(),
                              tmp_path / "w")
    assert set(r.resized) == {"u0", "u1"} and r.drv_resized == 2
    assert r.resized["u1"][0] == "sky130_fd_sc_hd__nand4_1" and r.resized["u0"][0] == "sky130_fd_sc_hd__inv_2"
    sized = sizing.write_verilog(src, tmp_path / "sized.v", netlist, r.resized)
    assert sta.run_sta(SS, lib, sized, "chain", sdc, None, tmp_path / "w1").max_slew_violations == 0
    stuck = sizing.SizingConfig(dont_use=(*sizing.SizingConfig().dont_use, "sky130_fd_sc_hd__inv_[4-8]",
                                          "sky130_fd_sc_hd__inv_1?"))
    kept = sizing.size_for_setup(SS, lib, src, "chain", sdc, None, False, netlist, macros, stuck, tmp_path / "s")
    assert not kept.resized and kept.drv_resized == 0
