"""Hard macros in closer.physical: the SKY130 1 KB SRAM placed from the floorplan settings, its
rows kept free, its power pins joined to the grid, its pins reached on the routing grid, and the
layout drawn with it as a black box of LEF pins (the PDK has no SRAM GDS)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from closer.errors import InputError
from closer.pdk import pdk
from closer.physical.floorplan.floorplan import FloorplanConfig, make_floorplan, rail_ys
from closer.physical.floorplan.macros import MacroPlacement
from closer.physical.io.lef import read_macros, read_tech
from closer.physical.io.netlist import read_netlist, synthesize, yosys_json
from closer.physical.route import blockpins
from tests.conftest import require_tool

FIXTURE = Path(__file__).parent / "fixtures" / "macro" / "sram_wrap.v"
SRAM = "sky130_sram_1kbyte_1rw1r_32x256_8"
PLACE = MacroPlacement("u_sram", 20.0, 20.0, "N", 20.0)


@pytest.fixture(scope="module")
def wrap(tmp_path_factory):
    """The wrapper's gate netlist (real Yosys) and what the floorplan needs."""
    require_tool("yosys")
    p = pdk()
    sram = p.macro(SRAM)
    liberty = sram.liberty_for("tt_025C_1v80")
    work = tmp_path_factory.mktemp("sram_wrap")
    v = synthesize([FIXTURE], "sram_wrap", p.liberty("tt_025C_1v80"), work / "sram_wrap.v", work / "synth.log",
                   macro_liberties=(liberty,))
    netlist = read_netlist(yosys_json(v, "sram_wrap", p.liberty("tt_025C_1v80"), work / "n.json", work / "j.log",
                                      (liberty,)), "sram_wrap")
    macros = {**read_macros(p.cell_lef), SRAM: read_macros(sram.lef)[SRAM]}
    return v, netlist, macros, read_tech(p.tech_lef)


def test_macro_bus_pins_are_one_pin_a_bit(wrap):
    _, netlist, _, _ = wrap
    pins = netlist.instances["u_sram"].pins
    assert {f"din0[{i}]" for i in range(32)} <= set(pins) and "addr0[7]" in pins and "din0" not in pins


def test_floorplan_blocks_the_macro_rows_and_joins_its_power(wrap):
    _, netlist, macros, _ = wrap
    layout = make_floorplan(netlist, macros, FloorplanConfig(), (PLACE,))
    x0, y0, x1, y1 = layout.block_boxes["u_sram"]
    assert (x0 - layout.core_x0, y0 - layout.core_y0) == (19780, 19040)  # 20 um snapped to the site / row grid
    assert (x1 - x0, y1 - y0) == (479780, 397500)
    covered = {r for r in range(layout.rows) if layout.row_y(r + 1) > y0 - 20000 and layout.row_y(r) < y1 + 20000}
    assert covered <= layout.blocked_rows and layout.rows > len(layout.blocked_rows)
    assert all(tap.y not in {layout.row_y(r) for r in layout.blocked_rows} for tap in layout.physical)
    # no rail crosses the macro; one stub per power pin lands on a rail of its net below it
    for net in ("VPWR", "VGND"):
        assert not [y for y in rail_ys(layout, net) if y0 <= y <= y1]
    stubs = {s.pin: s for s in layout.power_stubs}
    assert set(stubs) == {"vccd1", "vssd1"}
    assert stubs["vccd1"].net == "VPWR" and stubs["vccd1"].rail_y in rail_ys(layout, "VPWR") and stubs["vccd1"].rail_y < y0
    assert stubs["vssd1"].net == "VGND" and stubs["vssd1"].rail_y in rail_ys(layout, "VGND")
    # the macro sits on the core's bottom rows: the IO pins go on the top edge only
    from closer.physical.floorplan.floorplan import io_slots
    assert {edge for edge, _ in io_slots(layout)} == {"top"}


@pytest.mark.parametrize("placements, message", [
    ((), "without a placement"),
    ((PLACE, MacroPlacement("u_nothing", 0, 0)), "no macro instance of that name"),
    ((MacroPlacement("u_sram", 0, 0, "R90"),), "orient 'R90' not supported"),
    ((MacroPlacement("u_sram", -1, 0),), "must be >= 0"),
])
def test_bad_macro_placements_are_refused(wrap, placements, message):
    _, netlist, macros, _ = wrap
    with pytest.raises(InputError, match=message):
        make_floorplan(netlist, macros, FloorplanConfig(), placements)


def test_overlapping_macros_are_refused(wrap):
    """Two macros whose outlines or halos meet are refused (their metal would short)."""
    import copy

    _, netlist, macros, _ = wrap
    two = copy.deepcopy(netlist)
    two.instances["u_sram2"] = copy.deepcopy(two.instances["u_sram"])
    two.instances["u_sram2"].name = "u_sram2"
    apart = MacroPlacement("u_sram2", 20.0, 480.0, "N", 20.0)
    make_floorplan(two, macros, FloorplanConfig(), (PLACE, apart))
    with pytest.raises(InputError, match="overlap"):
        make_floorplan(two, macros, FloorplanConfig(), (PLACE, MacroPlacement("u_sram2", 20.0, 430.0, "N", 20.0)))


def test_a_power_pin_with_no_met4_strip_is_refused(wrap):
    """The stubs join met4 strips; a macro whose power pin has none is an error, not a silent open."""
    import copy

    _, netlist, macros, _ = wrap
    odd = copy.deepcopy(macros)
    odd[SRAM].pins["vccd1"].rects = [(layer, r) for layer, r in odd[SRAM].pins["vccd1"].rects if layer != "met4"]
    with pytest.raises(InputError, match="power pin vccd1 has no met4 strip"):
        make_floorplan(netlist, odd, FloorplanConfig(), (PLACE,))


def _spaced(rects_a, rects_b, spacing):
    return all(blockpins._gap(a, b) >= spacing for a in rects_a for b in rects_b)


def test_pin_reaches_land_on_the_routing_grid_and_keep_their_spacing(wrap):
    _, netlist, macros, tech = wrap
    layout = make_floorplan(netlist, macros, FloorplanConfig(), (PLACE,))
    found = blockpins.reaches(layout, netlist, macros, tech)
    connected = {p for p in netlist.instances["u_sram"].pins if p in {q.name for q in macros[SRAM].signal_pins()}}
    assert {r.pin for r in found} == connected
    x0, y0, x1, y1 = layout.block_boxes["u_sram"]
    for r in found:
        layer = tech.layer(r.layer)
        sx = blockpins._grid(tech, layer, "x")
        sy = blockpins._grid(tech, layer, "y")
        inside = [(x, y) for x in range(r.square[0], r.square[2] + 1) if (x - sx[0]) % sx[1] == 0
                  for y in range(r.square[1], r.square[3] + 1, 5) if (y - sy[0]) % sy[1] == 0]
        assert inside, f"{r.pin}: the router's pin holds no grid point"
        sq = r.square
        assert sq[2] <= x0 or sq[0] >= x1 or sq[3] <= y0 or sq[1] >= y1, f"{r.pin}: pin inside the macro"
        for other in found:
            if other.pin != r.pin and other.layer == r.layer:
                assert _spaced(r.rects, other.rects, blockpins.SPACING[r.layer]), (r.pin, other.pin)
    # the 0.68 um crowded pins (addr1[5..7], 0.3 um apart) go out to different depths
    crowded = sorted((r for r in found if r.pin in ("addr1[5]", "addr1[6]", "addr1[7]")), key=lambda r: r.pin)
    assert len({r.rects[1][1] for r in crowded}) > 1


def test_spacing_check_sees_a_crowded_reach(wrap):
    """The other way: a reach moved next to its neighbour fails the spacing the reaches keep."""
    _, netlist, macros, tech = wrap
    layout = make_floorplan(netlist, macros, FloorplanConfig(), (PLACE,))
    found = {r.pin: r for r in blockpins.reaches(layout, netlist, macros, tech)}
    a, b = found["addr1[6]"], found["addr1[7]"]
    shifted = tuple((x1 + 300, y1, x2 + 300, y2) for x1, y1, x2, y2 in a.rects)
    assert _spaced(a.rects, b.rects, 300) and not _spaced(shifted, b.rects, 300)


@pytest.fixture(scope="module")
def wrap_run(wrap, tmp_path_factory):
    """The wrapper through closer.physical to LVS (real qrouter, KLayout), repairs off."""
    from closer.physical import run_physical
    from closer.physical.flow import PhysicalConfig
    from closer.physical.repair.repair import RepairConfig
    from closer.physical.route.route import have_qrouter

    require_tool("sta")
    if not have_qrouter():
        pytest.fail("qrouter 1.4.88 not built: run scripts/build-qrouter.sh")
    v, *_ = wrap
    out = tmp_path_factory.mktemp("sram_phys")
    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=10.0, macros=(PLACE,), repair=RepairConfig(rounds=0, item_rounds=0))
    return run_physical(v, "sram_wrap", None, out, cfg, stop_after="Lvs"), out


def test_macro_is_placed_fixed_and_drawn_as_a_black_box(wrap_run):
    import klayout.db as kdb

    result, out = wrap_run
    final = (out / "final.def").read_text()
    assert re.search(rf"- u_sram {SRAM} \+ FIXED \( 26220 24480 \) N ;", final)
    assert "( u_sram vccd1 )" in final and "( u_sram vssd1 )" in final
    layout = kdb.Layout()
    layout.read(str(result.gds))
    cell = layout.cell(SRAM)
    assert cell is not None and not cell.is_ghost_cell()
    met4 = layout.find_layer(71, 20)
    assert cell.shapes(met4).size() >= 60            # its met4 pins (and power straps) are metal
    steps = {s["step"]: s["metrics"] for s in json.loads((out / "steps.json").read_text())}
    assert steps["ReadNetlist"]["closer__macros__count"] == 1
    assert "LEF pins only" in steps["ReadNetlist"]["closer__macros__gds"]


def test_lvs_sees_the_macro_power_joined_and_its_pins_reached(wrap_run):
    _, out = wrap_run
    lvs = json.loads((out / "lvs" / "lvs.json").read_text())
    opens = {o["net"] for o in lvs["opens"]}
    assert not {"VPWR", "VGND"} & opens
    macro_nets = {n for o in lvs["opens"] for p in o["pieces"] for t in p if t.startswith("u_sram/") for n in [o["net"]]}
    unrouted = set(json.loads((out / "route" / "unrouted.json").read_text())["unrouted"])
    # every macro net qrouter routed reaches its pin (measured: 0-1 of ~115 left open, no repair)
    assert len(macro_nets - unrouted) <= 2, sorted(macro_nets - unrouted)


def test_lvs_rejects_the_macro_without_its_power_stubs(wrap_run):
    """The other way: the same layout with the stubs' met4 taken out leaves the macro's power open."""
    from closer.physical.signoff import gds, lvs
    from closer.physical.steps.checks import port_names

    result, out = wrap_run
    text = (out / "final.def").read_text()
    cut = re.sub(r"\n\s*NEW met4 \d+ \( \d+ \d+ \) \( \d+ \d+ \)(?=[^\n]*\n[^\n]*M1M2_PR)", "", text)
    assert cut != text
    (out / "nostub.def").write_text(cut)
    ctx = result.context
    p = pdk()
    g = gds.def_to_gds(out / "nostub.def", p.tech_lef, p.cell_lef, p.gds, out / "nostub.gds",
                       port_names(ctx.netlist), ctx.black_boxes())
    v = lvs.run_lvs(g, ctx.layout, ctx.netlist, ctx.macros)
    assert {"VPWR", "VGND"} & {o["net"] for o in v.opens}
    # and the unchanged layout drawn the same way has them joined
    g0 = gds.def_to_gds(out / "final.def", p.tech_lef, p.cell_lef, p.gds, out / "again.gds",
                        port_names(ctx.netlist), ctx.black_boxes())
    assert not {"VPWR", "VGND"} & {o["net"] for o in lvs.run_lvs(g0, ctx.layout, ctx.netlist, ctx.macros).opens}


def test_global_routing_sees_no_tracks_through_the_macro(wrap):
    """The SRAM's met1-met4 obstructions are blockages of the global router's grid: the
    boundaries inside the macro have no tracks (the router's layers stop at met4), those beside
    it keep theirs. Without them the grid offered tracks over the macro and planned guides
    through it (firdma full, twelfth session)."""
    from closer.physical.route import groute

    _, netlist, macros, tech = wrap
    layout = make_floorplan(netlist, macros, FloorplanConfig(), (PLACE,))
    cfg = groute.GrouteConfig()
    blocked = groute.macro_blockages(layout, macros)
    assert {layer for layer, *_ in blocked} >= {"met1", "met2", "met3", "met4"}
    with_macro = groute.capacity(layout, tech, 5, groute.power_blockages(layout) + blocked, cfg)
    without = groute.capacity(layout, tech, 5, groute.power_blockages(layout), cfg)
    g = with_macro.gcell_um
    x0, y0, x1, y1 = (v / 1000 for v in layout.block_boxes["u_sram"])
    inside_r = [r for r in range(with_macro.v.shape[0]) if y0 + g <= r * g and (r + 2) * g <= y1 - g]
    inside_c = [c for c in range(with_macro.h.shape[1]) if x0 + g <= c * g and (c + 2) * g <= x1 - g]
    assert inside_r and inside_c
    assert (with_macro.h[np.ix_(inside_r, inside_c)] == 0).all() and (with_macro.v[np.ix_(inside_r, inside_c)] == 0).all()
    assert (without.h[np.ix_(inside_r, inside_c)] > 0).all()  # the grid before: tracks over the macro
    top = [r for r in range(with_macro.h.shape[0]) if r * g >= y1 + 20.0]  # rows above the macro and its halo
    assert top and (with_macro.h[top] == without.h[top]).all()
