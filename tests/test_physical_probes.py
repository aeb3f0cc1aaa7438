"""Bulk terminal probes (closer.physical.signoff.probes) with the real KLayout extractor: each
probe point gets the net of the shape under it, None off every shape, and points closer than a
probe box (whose boxes merge) each still get their own answer."""

from __future__ import annotations

import klayout.db as kdb

from closer.physical.signoff import probes


def _extracted(points: dict[str, list[tuple[float, float]]]):
    layout = kdb.Layout()
    layout.dbu = 0.001
    top = layout.create_cell("TOP")
    met1 = layout.layer(68, 20)
    top.shapes(met1).insert(kdb.Box(0, 0, 1000, 100))      # net A: 0..1 um
    top.shapes(met1).insert(kdb.Box(2000, 0, 3000, 100))   # net B: 2..3 um
    probe_layers = probes.add_probe_layers(layout, top, points)
    l2n = kdb.LayoutToNetlist(kdb.RecursiveShapeIterator(layout, top, []))
    conductors = {"met1": l2n.make_layer(met1, "met1")}
    l2n.connect(conductors["met1"])
    regions = probes.connect_probes(l2n, probe_layers, conductors)
    l2n.extract_netlist()
    return probes.probed_nets(l2n, regions, conductors), layout.dbu


def test_each_point_gets_the_net_under_it_or_none():
    pts = [(0.01, 0.05), (0.9, 0.05), (2.5, 0.05), (5.0, 0.05)]
    found, dbu = _extracted({"met1": pts})
    a, a2, b, off = (found[probes.key("met1", p, dbu)] for p in pts)
    assert a is not None and a == a2 and b is not None and b != a
    assert off is None


def test_points_closer_than_a_box_each_get_their_answer():
    # 1 dbu apart: their boxes overlap and come back merged; the first lies on net A's edge
    pts = [(0.5, 0.05), (0.501, 0.05), (1.0, 0.05), (1.001, 0.05)]
    found, dbu = _extracted({"met1": pts})
    keys = [probes.key("met1", p, dbu) for p in pts]
    assert all(k in found for k in keys)
    assert found[keys[0]] == found[keys[1]] is not None
