"""The global router (closer.physical.route.groute): capacities from the tech LEF's tracks and the
power grid, two-pin decomposition, negotiated congestion two-way (a crowded channel is spread
until no boundary is over capacity; demand no spreading can meet stays reported as overflow),
and the guides it writes for qrouter. Pure Python on synthetic grids and the real tech LEF."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

from closer.pdk import pdk
from closer.physical.io.lef import read_tech
from closer.physical.route import groute


def _grid(rows: int, cols: int, h: float, v: float) -> groute.Capacity:
    return groute.Capacity(10.0, np.full((rows, cols - 1), h), np.full((rows - 1, cols), v))


def test_capacity_counts_the_tracks_of_each_direction_less_the_rails():
    tech = read_tech(pdk().tech_lef)
    gcell = groute.GCELL_ROWS * 2.72
    die = SimpleNamespace(die_w=round(4 * gcell * 1000), die_h=round(3 * gcell * 1000))
    cfg = groute.GrouteConfig(utilization=1.0)
    free = groute.capacity(die, tech, 5, [], cfg)
    assert free.h.shape == (3, 3) and free.v.shape == (2, 4)
    met1, met2, met3, met4 = (tech.layer(n) for n in ("met1", "met2", "met3", "met4"))
    assert free.h[0, 0] == np.floor(gcell / met1.pitch_y + gcell / met3.pitch_y)  # li1 is the cells'
    assert free.v[0, 0] == np.floor(gcell / met2.pitch_x + gcell / met4.pitch_x)
    rail = [("met1", 0.0, 2.48, 4 * gcell, 2.96)]  # one met1 rail through the bottom row of GCells
    railed = groute.capacity(die, tech, 5, rail, cfg)
    assert (railed.h[0] < free.h[0]).all() and (railed.h[1:] == free.h[1:]).all() and (railed.v == free.v).all()
    assert groute.capacity(die, tech, 3, [], cfg).v[0, 0] == np.floor(gcell / met2.pitch_x)  # li1..met2 only


def test_connections_are_a_minimum_spanning_tree_of_the_pin_gcells():
    conns = groute.connections({"n": [(5, 5), (95, 5), (5, 95), (15, 5), (6, 6)], "local": [(1, 1), (2, 2)]},
                               10.0, (10, 10))
    assert conns["local"] == []  # both pins in one GCell
    edges = conns["n"]
    assert len(edges) == 3  # four distinct GCells
    assert sum(abs(a[0] - b[0]) + abs(a[1] - b[1]) for a, b in edges) == 1 + 8 + 9


def test_negotiation_spreads_a_crowded_channel_and_reports_what_cannot_fit():
    """Ten nets along row 2 of a 5 x 12 grid whose boundaries take 4 tracks: the L shapes all take
    row 2 (10 > 4); negotiation moves them to the rows around until none is over. With room for
    only 1 track per boundary in 5 rows, 10 nets cannot fit: overflow is left and reported."""
    points = {f"n{k}": [(5.0, 25.0), (115.0, 25.0 + 0.1 * k)] for k in range(10)}
    roomy = groute.route(points, _grid(5, 12, 4, 8), groute.GrouteConfig())
    assert roomy.rounds[0] > 0 and roomy.rounds[-1] == 0 and roomy.overflow == 0
    assert roomy.metrics()["closer__groute__overfull_first"] == roomy.rounds[0]
    assert (roomy.usage_h <= roomy.capacity.h).all() and roomy.usage_h.sum() >= 10 * 11
    for net, cells in roomy.guides.items():  # each guide connects its pins' GCells
        assert (2, 0) in cells and (2, 11) in cells
    tight = groute.route(points, _grid(5, 12, 1, 8), groute.GrouteConfig(rounds=6))
    assert tight.overflow > 0 and tight.metrics()["closer__groute__overflow"] == tight.overflow


def test_a_connection_goes_round_a_macro_wider_than_the_search_margin():
    """Pins below and above a 16-GCell-wide block of boundaries with no tracks (a macro's
    obstructions), the pins 1 GCell apart in x: the straight path crosses the block; the search
    box (margin 3) holds no way round, so the search widens to the grid and the guide goes round
    the block's end. With the block removed the guide stays straight."""
    rows, cols = 12, 20
    cap = _grid(rows, cols, 6, 6)
    cap.v[3:8, 0:16] = 0  # vertical boundaries of rows 3..8, columns 0..15
    cap.h[4:8, 0:16] = 0
    points = {"n": [(55.0, 15.0), (65.0, 95.0)]}  # GCells (1, 5) and (9, 6)
    around = groute.route(points, cap, groute.GrouteConfig())
    assert around.overflow == 0 and around.rounds[-1] == 0
    cells = set(around.guides["n"])
    assert not any(3 < r < 8 and c < 16 for r, c in cells)  # nothing through the block
    assert any(c >= 16 for _, c in cells) and (1, 5) in cells and (9, 6) in cells
    straight = groute.route(points, _grid(rows, cols, 6, 6), groute.GrouteConfig())
    assert max(c for _, c in straight.guides["n"]) <= 6


def test_guides_file_has_a_rectangle_per_row_run(tmp_path):
    result = groute.GlobalRoute(10.0, _grid(3, 3, 1, 1), np.zeros((3, 2)), np.zeros((2, 3)),
                                {"a": [(0, 0), (0, 1), (1, 1)], "b": [(2, 2)]})
    text = groute.write_guides(result, tmp_path / "g.txt").read_text().splitlines()
    assert text == ["a 0.000 0.000 20.000 10.000 10.000 10.000 20.000 20.000", "b 20.000 20.000 30.000 30.000"]
    grown = groute.write_guides(result, tmp_path / "g1.txt", halo=1).read_text().splitlines()
    assert grown[1] == "b 10.000 10.000 40.000 40.000"


@pytest.mark.parametrize("bad", [0.0, 1.5])
def test_config_rejects_a_utilization_outside_0_1(bad):
    from closer.errors import InputError

    with pytest.raises(InputError, match="utilization"):
        groute.GrouteConfig(utilization=bad)


@pytest.mark.slow
def test_the_flow_routes_the_counter_inside_its_global_route(tmp_path, pdk_paths):
    """RouteConfig.guides_min_nets: from that many nets the Route step plans a global route,
    writes it (groute.json, guides.txt) and qrouter loads the guides (patch 03); the counter
    still routes completely and signs off its LVS. Real Yosys, qrouter, KLayout."""
    import json

    from closer.physical import PhysicalConfig, run_physical
    from closer.physical.io.netlist import synthesize
    from closer.physical.route.route import RouteConfig, have_qrouter

    if not have_qrouter():
        pytest.fail("qrouter 1.4.88 not built: run scripts/build-qrouter.sh")
    netlist = synthesize([pdk_paths.root / "smoke" / "counter.v"], "counter", pdk_paths.liberty("tt_025C_1v80"),
                         tmp_path / "counter.v", tmp_path / "synth.log")
    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=5.0, route=RouteConfig(guides_min_nets=1))
    m = run_physical(netlist, "counter", None, tmp_path / "phys", cfg).metrics
    route_dir = tmp_path / "phys" / "route"
    assert m["closer__route__guided"] is True and m["closer__groute__overflow"] == 0
    assert m["closer__route__unrouted_nets"] == 0 and m["closer__signoff__lvs__clean"] is True
    plan = json.loads((route_dir / "groute.json").read_text())
    assert plan["closer__groute__wirelength"] == m["closer__groute__wirelength"] > 0
    guides = (route_dir / "guides.txt").read_text().splitlines()
    assert re.search(r"closer guides: (\d+) nets", (route_dir / "qrouter_full.log").read_text()).group(1) == str(len(guides))
