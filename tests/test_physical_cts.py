"""The clock tree (closer.physical.cts.cts): balanced clusters, the netlist and the Verilog it writes
(read back by Yosys: every sink on a buffer's net, each buffer on the clock)."""

from __future__ import annotations

import json
from pathlib import Path

from closer.physical.cts import cts
from closer.physical.floorplan.floorplan import FloorplanConfig, make_floorplan
from closer.physical.io.lef import read_macros
from closer.physical.io.netlist import read_netlist, yosys_json
from closer.physical.place.place import PlaceConfig, place


def test_clusters_are_balanced_and_bounded():
    points = [((f"i{k}", "CLK"), float(k % 10), float(k // 10)) for k in range(77)]
    groups = cts._clusters(points, 16)
    assert len(groups) == 5 and max(map(len, groups)) <= 16 and min(map(len, groups)) >= 15
    assert sorted(p[0] for g in groups for p in g) == sorted(p[0] for p in points)
    assert cts._clusters(points[:16], 16) == [points[:16]]


def test_clock_ports_from_a_canonical_sdc():
    assert cts.clock_ports("create_clock -name core_clock -period 10 [get_ports clk]\n") == ["clk"]
    assert cts.clock_ports("create_clock -name c -period 5 [get_ports {clock}]\nset_load 1 x\n") == ["clock"]


def test_tree_on_the_weak_gcd_netlist(repo, pdk_paths, tmp_path: Path):
    """Synthesize the weak gcd (53 flops), place it, build the tree, write and re-read the
    Verilog: the clock drives only buffers, every flop is on a buffer's net, fanouts <= 16."""
    from closer.physical.io.netlist import synthesize

    lib = pdk_paths.liberty("tt_025C_1v80")
    src = synthesize([repo.design_dir("gcd") / "weak" / "rtl" / "gcd.v"], "gcd", lib, tmp_path / "gcd.v",
                     tmp_path / "synth.log")
    netlist = read_netlist(yosys_json(src, "gcd", lib, tmp_path / "n.json", tmp_path / "j.log"), "gcd")
    macros = read_macros(pdk_paths.cell_lef)
    layout = make_floorplan(netlist, macros, FloorplanConfig())
    place(netlist, macros, layout, PlaceConfig())
    flops = [s for s in netlist.nets["clk"] if s[0] != "PIN"]
    tree = cts.build_tree(netlist, layout, macros, "clk", cts.CtsConfig())
    assert tree.sinks == len(flops) > 16 and tree.levels == 1 and len(tree.buffers) == -(-len(flops) // 16)
    assert all(b.name in layout.cells for b in tree.buffers)
    out = cts.write_verilog(src, tmp_path / "gcd_cts.v", netlist, tree)
    back = json.loads(yosys_json(out, "gcd", lib, tmp_path / "b.json", tmp_path / "b.log").read_text())
    cells = back["modules"]["gcd"]["cells"]
    clk_bit = back["modules"]["gcd"]["ports"]["clk"]["bits"][0]
    on_clk = [n for n, c in cells.items() if clk_bit in sum(c["connections"].values(), [])]
    assert sorted(on_clk) == sorted(b.name for b in tree.buffers)
    buffer_out = {c["connections"]["X"][0] for n, c in cells.items() if n.startswith("cts_")}
    flop_clk = [c["connections"]["CLK"][0] for c in cells.values() if "CLK" in c["connections"]]
    assert len(flop_clk) == len(flops) and set(flop_clk) <= buffer_out


def test_clock_skew_report_parser():
    from closer.physical.signoff.sta import clock_skew

    recorded = ("Clock core_clock\nLatency      CRPR       Skew\ncount[0]$_SDFF_PP0_/CLK ^\n 0.2806\n"
                "_381_/CLK ^\n 0.2706    0.0000     0.0100\n\n")  # fifo8's layout, ss, skew edited
    assert clock_skew(recorded) == (0.01, 0.2806)
    assert clock_skew("") == (None, None) and clock_skew("Clock core_clock\nNo paths found.\n") == (None, None)


def test_skew_is_reported_with_the_parasitics(tmp_path: Path):
    """report_clock_skew comes after read_spef: before it, the tree's wires were not in the skew
    (OpenSTA reported 0.0000 on fifo8's layout; 0.0023 ns at ss with the SPEF)."""
    from closer.physical.signoff.sta import StaReports, sta_script

    reports = StaReports.of(tmp_path, "ss_spef")
    script = sta_script(Path("c.lib"), Path("n.v"), "top", Path("c.sdc"), Path("n.spef"), None, None,
                        reports, propagated_clock=True).splitlines()
    skew = next(i for i, line in enumerate(script) if line.startswith("report_clock_skew"))
    assert script.index("read_spef {n.spef}") < skew
    assert script.index("set_propagated_clock [all_clocks]") < skew
    ideal = sta_script(Path("c.lib"), Path("n.v"), "top", Path("c.sdc"), Path("n.spef"), None, None, reports)
    assert "report_clock_skew" not in ideal and "set_propagated_clock" not in ideal
