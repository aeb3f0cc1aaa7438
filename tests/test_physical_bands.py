"""Band routing (closer.physical.route.bands): the bands, the crossings, the band DEFs and the
merge, on small hand-made layouts; the real qrouter on a design routed in bands is in
tests/test_physical_bands_flow.py."""

from __future__ import annotations

import re

import pytest

from closer.errors import InputError
from closer.pdk import pdk
from closer.physical.floorplan.floorplan import DBU, ROW_H, IoPin, Layout, Placed
from closer.physical.io import defio
from closer.physical.io.defnets import net_blocks, stubs, wire_segments
from closer.physical.io.lef import read_macros, read_tech
from closer.physical.io.netlist import Instance, Netlist
from closer.physical.route import bands
from closer.physical.route.route import RouteResult

CELL = "sky130_fd_sc_hd__inv_1"


@pytest.fixture(scope="module")
def lib():
    p = pdk()
    return read_macros(p.cell_lef), read_tech(p.tech_lef)


def _layout(rows: int = 12, cols: int = 200) -> Layout:
    return Layout("t", cols * 460 + 2 * 6440, rows * ROW_H + 4 * ROW_H, 6440, 2 * ROW_H, cols, rows)


def _design(layout: Layout, cells: dict[str, tuple[int, int]], nets: dict[str, list[tuple[str, str]]],
            ports: dict[str, str] | None = None) -> Netlist:
    """Inverters at (col, row); `nets` as the netlist has them."""
    for name, (col, row) in cells.items():
        layout.cells[name] = Placed(name, CELL, layout.core_x0 + col * 460, layout.row_y(row), layout.row_orient(row))
    instances = {n: Instance(n, CELL, {}) for n in cells}
    for net, terms in nets.items():
        for inst, pin in terms:
            if inst != "PIN":
                instances[inst].pins[pin] = net
    return Netlist("t", instances, ports or {}, nets)


def test_bands_cover_the_rows_and_keep_their_tracks_off_the_boundaries():
    layout = _layout(rows=50)
    planned = bands.plan(layout, bands.BandConfig(rows=12))
    assert [(b.row0, b.row1) for b in planned] == [(0, 12), (12, 25), (25, 38), (38, 50)]
    assert planned[0].y0 == 0 and planned[-1].y1 == layout.die_h
    for a, b in zip(planned, planned[1:]):
        assert a.y1 == b.y0 == layout.row_y(b.row0)          # a boundary is a rail line
        assert a.track_y1 < a.y1 and b.track_y0 > b.y0       # on no track of either band
    assert bands.plan(layout, bands.BandConfig(rows=100)) == [defio.Band(0, 50, 0, layout.die_h, 0, layout.die_h)]


def _crossing_design(layout: Layout, n: int):
    """n nets, each from a cell in row 1 to a cell in row 10 at the same column."""
    cells, nets = {}, {}
    for k in range(n):
        cells[f"a{k}"], cells[f"b{k}"] = (4 * k + 2, 1), (4 * k + 2, 10)
        nets[f"n{k}"] = [(f"a{k}", "Y"), (f"b{k}", "A")]
    return _design(layout, cells, nets)


def test_each_spanning_net_crosses_each_boundary_once_on_its_own_slot(lib):
    macros, tech = lib
    layout = _layout()
    netlist = _crossing_design(layout, 20)
    planned = bands.plan(layout, bands.BandConfig(rows=4))
    cross = bands.crossings(netlist, layout, macros, tech, planned, bands.BandConfig(rows=4))
    assert sorted((c.net, c.boundary) for c in cross) == sorted((f"n{k}", b) for k in range(20) for b in (0, 1))
    for b in (0, 1):
        taken = [(c.layer, c.x) for c in cross if c.boundary == b]
        assert len(taken) == len(set(taken))
        met2 = sorted(x for layer, x in taken if layer == "met2")
        assert all(q - p >= 2 * 460 for p, q in zip(met2, met2[1:]))  # spacing 2: the boundary has room
    # each crossing lands near its net's cells (the same column here)
    for c in cross:
        k = int(c.net[1:])
        assert abs(c.x - (layout.cells[f"a{k}"].x + 230)) <= 2 * 460


def test_routed_crossings_are_taken_where_the_whole_die_routing_crossed(lib):
    macros, tech = lib
    layout = _layout()
    netlist = _crossing_design(layout, 3)
    planned = bands.plan(layout, bands.BandConfig(rows=4))
    x = 230 + 460 * 100
    hint = {("n0", 0): [("met2", x + 460 * 20), ("met2", x)]}
    cross = bands.crossings(netlist, layout, macros, tech, planned, bands.BandConfig(rows=4), hint)
    chosen = next(c for c in cross if c.net == "n0" and c.boundary == 0)
    # of the two routed crossings, the one nearest the wanted x (n0's cells sit at column 2)
    assert (chosen.layer, chosen.x, chosen.from_routing) == ("met2", x, True)
    assert not any(c.from_routing for c in cross if c.net != "n0" or c.boundary != 0)


def test_a_boundary_with_more_crossings_than_columns_is_refused(lib):
    macros, tech = lib
    layout = _layout(cols=30)
    netlist = _crossing_design(layout, 7)
    # squeeze: each net crosses twice, 7 nets, but give the core only a few columns
    planned = bands.plan(layout, bands.BandConfig(rows=4))
    slots = bands._slots(layout, tech)
    assert sum(len(v) for v in slots.values()) >= 7  # room here ...
    narrow = Layout("t", 12 * 460 + 2 * 6440, layout.die_h, 6440, layout.core_y0, 12, layout.rows, dict(layout.cells))
    many = _design(narrow, {f"c{k}": (0, 1) for k in range(30)} | {f"d{k}": (0, 10) for k in range(30)},
                   {f"m{k}": [(f"c{k}", "Y"), (f"d{k}", "A")] for k in range(30)})
    with pytest.raises(InputError, match="crossing columns"):  # ... and none there
        bands.crossings(many, narrow, macros, tech, bands.plan(narrow, bands.BandConfig(rows=4)), bands.BandConfig(rows=4))


def test_band_nets_give_each_band_its_terminals_and_crossing_pins(lib):
    macros, tech = lib
    layout = _layout()
    netlist = _crossing_design(layout, 2)
    planned = bands.plan(layout, bands.BandConfig(rows=4))
    cross = bands.crossings(netlist, layout, macros, tech, planned, bands.BandConfig(rows=4))
    per_band = bands.band_nets(netlist, layout, macros, planned, cross, tech)
    low, mid, high = per_band
    assert low[0]["n0"] == [("a0", "Y"), ("PIN", "closer_band0_n0")]
    assert mid[0]["n0"] == [("PIN", "closer_band0_n0"), ("PIN", "closer_band1_n0")]  # a feed-through
    assert high[0]["n0"] == [("b0", "A"), ("PIN", "closer_band1_n0")]
    pin_low = next(p for p in low[1] if p.net == "n0")
    pin_mid = next(p for p in mid[1] if p.name == "closer_band0_n0")
    line = planned[0].y1
    assert (pin_low.y, pin_mid.y) == (line - 170, line + 170) and pin_low.x == pin_mid.x


def test_a_band_def_holds_its_rows_cells_pins_and_tracks_only(lib, tmp_path):
    macros, tech = lib
    layout = _layout()
    netlist = _crossing_design(layout, 2)
    layout.io_pins = {"io": IoPin("io", "input", 6440 + 2300, "bottom")}
    netlist.ports["io"] = "input"
    planned = bands.plan(layout, bands.BandConfig(rows=4))
    cross = bands.crossings(netlist, layout, macros, tech, planned, bands.BandConfig(rows=4))
    per_band = bands.band_nets(netlist, layout, macros, planned, cross, tech)
    text = defio.write_def(layout, netlist, tech, tmp_path / "mid.def", planned[1], per_band[1][1], per_band[1][0]).read_text()
    assert re.findall(r"^ROW ROW_(\d+)", text, re.M) == [str(r) for r in range(4, 8)]
    assert "COMPONENTS 0 ;" in text and "- io " not in text  # no cell and no die-edge pin in the middle band
    assert "closer_band0_n0 + DIRECTION INOUT" in text and "+ NET n0" not in text.split("END PINS")[0].split("PINS")[1]
    first = int(re.search(r"TRACKS Y (\d+) DO \d+ STEP 340 LAYER met1", text).group(1))
    assert first == planned[1].y0 + 170
    low = defio.write_def(layout, netlist, tech, tmp_path / "low.def", planned[0], per_band[0][1], per_band[0][0]).read_text()
    assert "- io + NET io" in low and "- a0 " in low and "- b0 " not in low


def test_edge_obstructions_leave_the_crossing_columns_free(lib):
    macros, tech = lib
    layout = _layout()
    planned = bands.plan(layout, bands.BandConfig(rows=4))
    x = 230 + 460 * 50
    cross = [bands.Crossing("n", 0, x, "met2")]
    lines = bands.edge_obstructions(layout, tech, planned, 0, cross, 340)
    met2 = [tuple(map(float, ln.split()[1:5])) for ln in lines if ln.endswith("met2")]
    assert met2 and all(y1 < (planned[0].y1 - 170) / DBU < y2 for _, y1, _, y2 in met2)
    assert not any(x1 <= x / DBU <= x2 for x1, _, x2, _ in met2)          # the crossing's column is open
    assert any(x1 <= (x + 460) / DBU <= x2 for x1, _, x2, _ in met2)     # its neighbour is not
    assert bands.edge_obstructions(layout, tech, [planned[0]], 0, [], 340) == ()  # a single band has no boundary


def _band_result(tmp_path, k: int, nets: dict[str, str], stub: dict[str, str]) -> bands.BandResult:
    body = "\n".join(f"- {n}\n  ( PIN x )\n  + USE SIGNAL \n+ ROUTED {w} ;" for n, w in nets.items())
    tail = "\n".join(f"- {n}\n+ ROUTED {w} ;" for n, w in stub.items())
    path = tmp_path / f"b{k}.def"
    path.write_text(f"DESIGN t ;\nNETS {len(nets)} ;\n{body}\nEND NETS\n\nSPECIALNETS {len(stub)} ;\n{tail}\nEND DESIGN\n")
    return bands.BandResult(defio.Band(0, 1, 0, 1, 0, 1), len(nets), 0, 0, RouteResult(path, path, 0))


def test_merge_joins_a_nets_band_wiring_across_the_boundary(tmp_path):
    placed = ("DESIGN t ;\nNETS 2 ;\n- n\n  ( a Y ) ( b A )\n  + USE SIGNAL ;\n- m\n  ( c Y ) ( d A )\n  + USE SIGNAL ;\n"
              "END NETS\nEND DESIGN\n")
    planned = [defio.Band(0, 4, 0, 10880, 0, 10879), defio.Band(4, 8, 10880, 30000, 10881, 30000)]
    routing = bands.BandRouting(
        [_band_result(tmp_path, 0, {"n": "met2 ( 1150 5000 ) ( * 10710 )", "m": "met1 ( 10 170 ) ( 900 * )"},
                      {"n": "met1 320 ( 1 2 ) ( * 3 )"}),
         _band_result(tmp_path, 1, {"n": "met2 ( 1150 11050 ) ( * 20000 )"}, {"n": "met1 320 ( 5 6 ) ( * 7 )"})],
        [bands.Crossing("n", 0, 1150, "met2")])
    merged = bands.merge(placed, routing, planned, 340)
    blocks = {b.split()[1]: b for b in net_blocks(merged)[2] if b.startswith("- ")}
    assert "( a Y ) ( b A )" in blocks["n"] and "PIN x" not in blocks["n"]  # the design's own connections
    segs = wire_segments(blocks["n"])
    assert ("met2", (1150, 10710), (1150, 11050)) in segs                   # across the rail line
    assert ("met2", (1150, 5000), (1150, 10710)) in segs and ("met2", (1150, 11050), (1150, 20000)) in segs
    assert wire_segments(blocks["m"]) == [("met1", (10, 170), (900, 170))]
    assert stubs(merged) == ["- n\n+ ROUTED met1 320 ( 1 2 ) ( * 3 )\n  NEW met1 320 ( 5 6 ) ( * 7 ) ;"]


def test_the_rc_def_has_the_crossing_pins_and_their_loads_are_dropped_again():
    placed = "DESIGN t ;\nPINS 1 ;\n- io + NET io ;\nEND PINS\nNETS 1 ;\n- n\n  ( a Y ) ( b A )\n  + USE SIGNAL\n+ ROUTED met2 ( 1 2 ) ( * 3 ) ;\nEND NETS\nEND DESIGN\n"
    planned = [defio.Band(0, 4, 0, 10880, 0, 10879), defio.Band(4, 8, 10880, 30000, 10881, 30000)]
    text = bands.with_crossing_pins(placed, [bands.Crossing("n", 0, 1150, "met2")], planned, 340)
    assert "PINS 3 ;" in text
    # OUTPUT: a design output is a load of its net in qrouter's RC trees (patch 08)
    assert "- closer_band0_n_0 + DIRECTION OUTPUT" in text and "PLACED ( 1150 10710 )" in text and "PLACED ( 1150 11050 )" in text
    assert "( a Y ) ( b A )\n  ( PIN closer_band0_n_0 ) ( PIN closer_band0_n_1 )\n  + USE SIGNAL" in text
    rc = "n 1 a/Y 3 ( 1.5 0.002 ( 2 0.001 PIN/closer_band0_n_0 , b/A ) , PIN/closer_band0_n_1 )\n"
    cleaned = bands.without_crossing_loads(rc)
    assert "closer_band" not in cleaned and "b/A" in cleaned and "( 2 0.001" in cleaned


def test_a_port_named_like_a_crossing_pin_is_refused(lib):
    macros, tech = lib
    layout = _layout()
    netlist = _crossing_design(layout, 1)
    netlist.ports["closer_band0_x"] = "input"
    with pytest.raises(InputError, match="closer_band"):
        bands.crossings(netlist, layout, macros, tech, bands.plan(layout, bands.BandConfig(rows=4)), bands.BandConfig(rows=4))
