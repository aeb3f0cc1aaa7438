"""Hold repair with delay cells (closer.physical.repair.hold), two-way with the real OpenSTA: a
placed shift register whose SDC asks for 0.4 ns of hold margin fails hold at ff; the repair's
delay cells go into the netlist, the layout and the Verilog, and OpenSTA timing the written
netlist on its own finds hold met at ff and setup still met at ss. The unrepaired netlist is
rejected by the same check."""

from __future__ import annotations

from pathlib import Path

import pytest

from closer.errors import ToolError
from closer.physical.io.netlist import Instance, Netlist
from closer.physical.repair import hold
from closer.physical.signoff import sta

FF, SS = "ff_n40C_1v95", "ss_100C_1v60"
SHIFT_RTL = """
module sr (input wire clk, input wire d, output wire q);
    reg [3:0] s;
    always @(posedge clk) s <= {s[2:0], d};
    assign q = s[3];
endmodule
"""
SDC = ("create_clock -name core_clock -period 5.0 [get_ports clk]\n"
       "set_clock_uncertainty -hold 0.4 [all_clocks]\n"
       "set_input_delay 1.0 -clock core_clock [get_ports d]\n"
       "set_output_delay 1.0 -clock core_clock [get_ports q]\n")


def test_parse_hold_maps_names_and_refuses_foreign_cells(tmp_path: Path):
    n = Netlist("t", {"r_0_": Instance("r_0_", "sky130_fd_sc_hd__dfxtp_1", {"D": "x"})}, {}, {},
                original={"r_0_": "r[0]$_DFF_P_"})
    text = (f"CLOSER_BEFORE -2e-10 -6e-10\nCLOSER_CHAIN r[0]$_DFF_P_ D {hold.DELAY_CELLS[-1]}\n"
            "CLOSER_AFTER 1e-10 0.0\nCLOSER_HOLD_DONE\n")
    r = hold.parse_hold(text, FF, n, tmp_path / "log")
    assert r.chains == {("r_0_", "D"): [hold.DELAY_CELLS[-1]]} and r.cells == 1
    assert (r.ws_before_ns, r.ws_after_ns) == pytest.approx((-0.2, 0.1))
    with pytest.raises(ToolError, match="outside"):
        hold.parse_hold(text.replace(hold.DELAY_CELLS[-1], "sky130_fd_sc_hd__buf_1"), FF, n, tmp_path / "log")
    with pytest.raises(ToolError, match="not a pin"):
        hold.parse_hold(text.replace(" D ", " Q "), FF, n, tmp_path / "log")


@pytest.mark.slow
def test_delay_cells_fix_a_hold_violation_the_check_rejects(pdk_paths, tmp_path: Path):
    from closer.physical.cts import cts
    from closer.physical.floorplan.floorplan import FloorplanConfig, make_floorplan
    from closer.physical.io.lef import read_macros
    from closer.physical.io.netlist import read_netlist, synthesize, yosys_json
    from closer.physical.place.place import PlaceConfig, place

    rtl, sdc = tmp_path / "sr.v", tmp_path / "sr.sdc"
    rtl.write_text(SHIFT_RTL)
    sdc.write_text(SDC)
    lib = pdk_paths.liberty("tt_025C_1v80")
    src = synthesize([rtl], "sr", lib, tmp_path / "sr_net.v", tmp_path / "s.log")
    netlist = read_netlist(yosys_json(src, "sr", lib, tmp_path / "n.json", tmp_path / "j.log"), "sr")
    macros = read_macros(pdk_paths.cell_lef)
    layout = make_floorplan(netlist, macros, FloorplanConfig())
    place(netlist, macros, layout, PlaceConfig())

    before = sta.run_sta(FF, pdk_paths.liberty(FF), src, "sr", sdc, None, tmp_path)
    assert before.hold_ws_ns < 0  # the check rejects the unrepaired netlist

    r = hold.repair_hold(FF, pdk_paths.liberty(FF), src, "sr", sdc, False, netlist, hold.HoldConfig(), tmp_path / "w")
    assert r.chains and r.ws_before_ns == pytest.approx(before.hold_ws_ns, abs=1e-3) and r.ws_after_ns >= 0
    inserted = hold.insert_chains(netlist, layout, macros, r.chains)
    assert len(inserted.buffers) == r.cells and all(b.name in layout.cells for b in inserted.buffers)
    repaired = cts.write_verilog(src, tmp_path / "sr_hold.v", netlist, inserted)

    after = sta.run_sta(FF, pdk_paths.liberty(FF), repaired, "sr", sdc, None, tmp_path)
    assert after.hold_ws_ns >= 0 and after.hold_ws_ns >= r.ws_after_ns - 1e-3
    assert sta.run_sta(SS, pdk_paths.liberty(SS), repaired, "sr", sdc, None, tmp_path).setup_ws_ns >= 0
