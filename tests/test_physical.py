"""closer.physical: the DRC deck and LVS two-way tested, and the counter taken through the real
tools (placement -> qrouter -> KLayout GDS -> DRC -> LVS -> OpenSTA) end to end; on it, the official
deck, the antenna check and the pin labels two-way tested (issue 18)."""

from __future__ import annotations

import copy
import json
import random
import re
import shutil
from pathlib import Path

import pytest

from closer.physical import PhysicalConfig, run_physical
from closer.physical.repair.repair import RepairConfig
from closer.physical.signoff.drc import run_drc
from closer.physical.signoff.antenna import check_antenna
from closer.physical.signoff.drc_deck import RULES
from closer.physical.io.lef import read_tech
from closer.physical.signoff.lvs import run_lvs
from closer.physical.signoff.parasitics import parse_rc
from closer.physical.signoff.signoff_drc import run_signoff_drc
from tests.conftest import counter_through_physical, require_tool

kdb = pytest.importorskip("klayout.db")

MET1, MET2, VIA, MCON, LI1, MET3 = (68, 20), (69, 20), (68, 44), (67, 44), (67, 20), (70, 20)
POLY, LABEL_MET2 = (66, 20), (69, 5)


def _gds(tmp: Path, shapes: list[tuple[tuple[int, int], tuple[int, int, int, int]]], name="t.gds") -> Path:
    layout = kdb.Layout()
    layout.dbu = 0.001
    top = layout.create_cell("TOP")
    for (layer, dt), box in shapes:
        top.shapes(layout.layer(layer, dt)).insert(kdb.Box(*box))
    path = tmp / name
    layout.write(str(path))
    return path


# ---- DRC deck: each rule kind accepts a legal shape and flags a perturbed one ---------------

DECK_CASES = [
    # (rule, legal shapes, perturbed shapes)
    ("m1.1", [(MET1, (0, 0, 140, 1000))], [(MET1, (0, 0, 130, 1000))]),
    ("m1.2", [(MET1, (0, 0, 300, 1000)), (MET1, (440, 0, 740, 1000))],
     [(MET1, (0, 0, 300, 1000)), (MET1, (430, 0, 730, 1000))]),
    ("m1.6", [(MET1, (0, 0, 290, 290))], [(MET1, (0, 0, 290, 230))]),
    ("m3.2", [(MET3, (0, 0, 300, 2000)), (MET3, (600, 0, 900, 2000))],
     [(MET3, (0, 0, 300, 2000)), (MET3, (590, 0, 890, 2000))]),
    ("li.3", [(LI1, (0, 0, 170, 1000)), (LI1, (340, 0, 510, 1000))],
     [(LI1, (0, 0, 170, 1000)), (LI1, (330, 0, 500, 1000))]),
    ("via.1a", [(VIA, (0, 0, 150, 150)), (MET1, (-85, -55, 235, 205)), (MET2, (-55, -85, 205, 235))],
     [(VIA, (0, 0, 160, 150)), (MET1, (-85, -55, 245, 205)), (MET2, (-55, -85, 215, 235))]),
    ("via.4a", [(VIA, (0, 0, 150, 150)), (MET1, (-85, -55, 235, 205)), (MET2, (-55, -85, 205, 235))],
     [(VIA, (0, 0, 150, 150)), (MET1, (-85, -50, 235, 205)), (MET2, (-55, -85, 205, 235))]),
    ("via.5a", [(VIA, (0, 0, 150, 150)), (MET1, (-85, -55, 235, 205)), (MET2, (-55, -85, 205, 235))],
     [(VIA, (0, 0, 150, 150)), (MET1, (-60, -60, 210, 210)), (MET2, (-55, -85, 205, 235))]),
    ("ct.2", [(MCON, (0, 0, 170, 170)), (MCON, (360, 0, 530, 170)), (LI1, (0, 0, 530, 170)), (MET1, (-60, -30, 590, 200))],
     [(MCON, (0, 0, 170, 170)), (MCON, (350, 0, 520, 170)), (LI1, (0, 0, 520, 170)), (MET1, (-60, -30, 580, 200))]),
    ("ct.4", [(MCON, (0, 0, 170, 170)), (LI1, (0, 0, 170, 600)), (MET1, (-60, -30, 330, 200))],
     [(MCON, (0, 0, 170, 170)), (LI1, (5, 0, 170, 600)), (MET1, (-60, -30, 330, 200))]),
    ("x.1b.met1", [(MET1, (0, 0, 300, 300))], [(MET1, (0, 0, 302, 300))]),
    # a met1 ring around a 0.4 x 0.4 um hole (0.16 um^2) vs a 0.245 x 0.2 um one (0.049 < 0.14)
    ("m1.7", [(MET1, (0, 0, 680, 140)), (MET1, (0, 540, 680, 680)), (MET1, (0, 0, 140, 680)), (MET1, (540, 0, 680, 680))],
     [(MET1, (0, 0, 525, 140)), (MET1, (0, 340, 525, 480)), (MET1, (0, 0, 140, 480)), (MET1, (385, 0, 525, 480))]),
]


@pytest.mark.parametrize("rule,legal,bad", DECK_CASES, ids=[c[0] for c in DECK_CASES])
def test_drc_rule_two_way(tmp_path, rule, legal, bad):
    clean = run_drc(_gds(tmp_path, legal, "legal.gds"))
    assert clean.total == 0, clean.nonzero()
    dirty = run_drc(_gds(tmp_path, bad, "bad.gds"), tmp_path / "markers")
    assert dirty.counts[rule] >= 1, dirty.nonzero()
    assert (tmp_path / "markers" / "drc.lyrdb").is_file()


def test_deck_rule_names_unique_and_values_positive():
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    assert all(r.value >= 0 for r in RULES)


def test_drc_accepts_the_standard_cells(tmp_path, pdk_paths):
    """Every sky130_fd_sc_hd cell the flow can place, side by side: no BEOL violation. (The two
    tapvgnd variants carry a 0.0667 um^2 met1 island < m1.6's 0.083; the flow never uses them.)"""
    layout = kdb.Layout()
    layout.read(str(pdk_paths.gds))
    top = layout.create_cell("ALL")
    x = 0
    skipped = {"sky130_fd_sc_hd__tapvgnd_1", "sky130_fd_sc_hd__tapvgnd2_1"}
    for cell in sorted(layout.each_cell(), key=lambda c: c.name):
        if cell.name.startswith("sky130_fd_sc_hd__") and cell.name not in skipped and cell.parent_cells() == 0:
            top.insert(kdb.CellInstArray(cell.cell_index(), kdb.Trans(x, 0)))
            x += cell.bbox().width() + 3000
    path = tmp_path / "all.gds"
    layout.write(str(path))
    assert run_drc(path, top_name="ALL").total == 0


# ---- the counter through the real tools ------------------------------------------------------

@pytest.fixture(scope="module")
def counter_run(tmp_path_factory, pdk_paths):
    work = tmp_path_factory.mktemp("counter")
    return counter_through_physical(work, pdk_paths, PhysicalConfig(clock_port="clk", clock_period_ns=5.0)), work


def test_counter_routes_and_passes_lvs(counter_run):
    result, _ = counter_run
    m = result.metrics
    assert m["closer__route__unrouted_nets"] == 0
    assert m["closer__signoff__lvs__clean"] is True
    assert m["detailedroute__route__wirelength"] > 0
    assert m["finish__design__instance__utilization"] < 0.5
    assert m["finish__timing__setup__ws"] is not None and m["finish__power__total"] > 0
    assert m["closer__timing__spef_warnings"] == 0  # count[0..7] are escaped scalar ports here
    meta = json.loads(result.metadata.read_text())
    assert meta["metrics"]["detailedroute__route__drc_errors"] == m["detailedroute__route__drc_errors"]
    assert "qrouter 1.4.88" in meta["provenance"]["physical"]["tools"]["router"]


def _placed_counter(work: Path, pdk_paths):
    """The counter run's layout, netlist and cell LEF, rebuilt (placement is deterministic)."""
    from closer.physical.floorplan.floorplan import insert_fill, make_floorplan
    from closer.physical.io.lef import read_macros
    from closer.physical.io.netlist import read_netlist
    from closer.physical.place.place import place

    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=5.0)
    macros = read_macros(pdk_paths.cell_lef)
    netlist = read_netlist(work / "phys" / "netlist.json", "counter")
    layout = make_floorplan(netlist, macros, cfg.floorplan)
    place(netlist, macros, layout, cfg.place)  # deterministic: the same placement as the run
    insert_fill(layout, macros)
    return layout, netlist, macros


def _run_lvs_on(gds: Path, work: Path, pdk_paths):
    layout, netlist, macros = _placed_counter(work, pdk_paths)
    return run_lvs(gds, layout, netlist, macros)


def _edit(gds: Path, out: Path, edit) -> Path:
    layout = kdb.Layout()
    layout.read(str(gds))
    edit(layout, layout.top_cell())
    layout.write(str(out))
    return out


def test_lvs_two_way_open_and_short(counter_run, pdk_paths, tmp_path):
    result, work = counter_run
    assert _run_lvs_on(result.gds, work, pdk_paths).ok

    def delete_signal_via(layout, top):
        # routed vias are instances of KLayout's via cells; the power straps sit outside the core
        core_vias = [i for i in top.each_inst() if i.cell.name == "VIA_M1M2_PR"
                     and layout.top_cell().bbox().left + 8000 < i.bbox().center().x < top.bbox().right - 8000]
        core_vias[0].delete()

    opened = _run_lvs_on(_edit(result.gds, tmp_path / "open.gds", delete_signal_via), work, pdk_paths)
    assert not opened.ok and opened.opens and not opened.shorts

    def bridge_two_io_pins(layout, top):
        pins = sorted((s.bbox() for s in top.shapes(layout.find_layer(*MET2)).each()
                       if s.bbox().bottom == 0 and s.bbox().height() == 680), key=lambda b: b.left)
        a, b = pins[0], pins[1]
        top.shapes(layout.find_layer(*MET2)).insert(kdb.Box(a.left, 0, b.right, 140))

    shorted = _run_lvs_on(_edit(result.gds, tmp_path / "short.gds", bridge_two_io_pins), work, pdk_paths)
    assert not shorted.ok and shorted.shorts


def test_drc_flags_a_spacing_violation_in_the_routed_counter(counter_run, tmp_path):
    result, _ = counter_run
    base = result.metrics["detailedroute__route__drc_errors"]

    def crowd_an_io_pin(layout, top):
        pin = next(s.bbox() for s in top.shapes(layout.find_layer(*MET2)).each()
                   if s.bbox().bottom == 0 and s.bbox().height() == 680)
        top.shapes(layout.find_layer(*MET2)).insert(kdb.Box(pin.right + 100, 0, pin.right + 240, 680))

    bad = run_drc(_edit(result.gds, tmp_path / "crowded.gds", crowd_an_io_pin))
    assert bad.counts["m2.2"] >= 1 and bad.total > base


# ---- issue 18: official deck, antenna, pin labels on the routed counter -------------------

@pytest.mark.slow
def test_counter_is_clean_under_the_official_deck_and_antenna(counter_run):
    result, work = counter_run
    m = result.metrics
    assert m["closer__signoff__official_drc__errors"] == 0 and m["closer__signoff__official_drc__rules"] > 200
    assert m["detailedroute__antenna__violating__nets"] == 0 and m["closer__signoff__antenna__checks"] > 0
    assert m["closer__gate__drc__pass"] and m["closer__gate__antenna__pass"] and m["closer__gate__signoff__pass"]
    report = json.loads((work / "phys" / "signoff_drc" / "signoff_drc.json").read_text())
    assert report["total"] == 0 and report["options"]["feol"] == "true" and report["options"]["beol"] == "true"


@pytest.mark.slow
def test_official_deck_rejects_injected_feol_and_beol_violations(counter_run, pdk_paths, tmp_path):
    """In one process, and with the deck's sections in two (BEOL; FEOL with off-grid) and their
    reports merged: the same markers either way."""
    result, _ = counter_run

    def inject(layout, top):
        top.shapes(layout.layer(*POLY)).insert(kdb.Box(-8000, -8000, -7900, -6000))  # FEOL: 0.1 um poly < 0.15
        top.shapes(layout.layer(*MET1)).insert(kdb.Box(-5000, -5000, -4900, -4900))  # BEOL: 0.1 um met1 < 0.14

    bad = _edit(result.gds, tmp_path / "bad.gds", inject)
    found = run_signoff_drc(bad, "counter", tmp_path / "drc", pdk_paths.signoff_drc_deck)
    assert found.counts["poly.1a"] >= 1 and found.counts["m1.1"] >= 1, found.nonzero()
    split = run_signoff_drc(bad, "counter", tmp_path / "drc2", pdk_paths.signoff_drc_deck, jobs=2)
    assert split.counts == found.counts and len(split.counts) > 200
    assert set(found.nonzero()) <= {"poly.1a", "m1.1", "m1.6"}  # nothing else: the rest of the layout is clean


def test_antenna_check_flags_a_long_stub(counter_run, pdk_paths, tmp_path):
    result, work = counter_run
    layout, netlist, macros = _placed_counter(work, pdk_paths)
    tech = read_tech(pdk_paths.tech_lef)
    assert check_antenna(result.gds, layout, netlist, macros, tech).violations == []
    pin = next(p for p in layout.io_pins.values() if p.edge == "bottom" and netlist.ports[p.name] == "input"
               and p.name != "clk")

    def long_stub(klay, top):  # 3 mm of met2 hanging off an input pin, below the die
        x = pin.x
        top.shapes(klay.layer(*MET2)).insert(kdb.Box(x - 70, -3_000_000, x + 70, 10))

    bad = _edit(result.gds, tmp_path / "stub.gds", long_stub)
    found = check_antenna(bad, layout, netlist, macros, tech, tmp_path / "antenna")
    assert [v.net for v in found.violations] == [pin.name]
    assert found.violations[0].layer == "met2" and found.violations[0].ratio > found.violations[0].limit
    assert json.loads((tmp_path / "antenna" / "antenna.json").read_text())["violating_nets"] == [pin.name]


@pytest.mark.slow
def test_antenna_repair_inserts_diodes_until_clean(counter_run, tmp_path):
    """Two-way repair: with the limits tightened to a tenth (a test-only knob that can only
    tighten) the routed counter has violations; diodes beside the flagged gates, a new route and
    sign-off clear them, with DRC (both decks) and LVS still clean."""
    from closer.physical.signoff.antenna import AntennaConfig

    _, work = counter_run
    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=5.0, corners=("tt_025C_1v80",),
                         antenna=AntennaConfig(limit_scale=0.1))
    result = run_physical(work / "counter.v", "counter", None, tmp_path / "tight", cfg)
    m = result.metrics
    assert m["closer__antenna__violating_nets_before_repair"] > 0 and m["closer__antenna__repair_rounds"] >= 1
    assert m["closer__antenna__repair_skipped"] is None and m["closer__antenna__repair_skipped_unrouted_nets"] == 0
    assert m["detailedroute__antenna__violating__nets"] == 0 and m["detailedroute__antenna_diodes_count"] >= 1
    before = json.loads((tmp_path / "tight" / "antenna" / "before_round1.json").read_text())  # kept, not overwritten
    assert before["violating_nets"][:50] == m["closer__antenna__violating_net_names_before_repair"]
    # each reroute's repair has its own record folder: the first one's is not overwritten
    repairs = sorted(p.parent.name for p in (tmp_path / "tight" / "route").glob("repair*/repair.json"))
    assert repairs == ["repair"] + [f"repair-{k}" for k in range(2, m["closer__antenna__repair_rounds"] + 2)]
    assert m["closer__antenna__worst_margin_before_repair"] > 1.0 >= m["closer__signoff__antenna__worst_margin"]
    assert m["closer__signoff__lvs__clean"] is True and m["closer__route__unrouted_nets"] == 0
    assert m["closer__signoff__official_drc__errors"] == 0 and m["detailedroute__route__drc_errors"] == 0
    steps = [s["step"] for s in result.steps]  # the official deck once, on the repaired GDS
    assert steps.count("SignoffDrc") == 1 and steps.index("SignoffDrc") > steps.index("Antenna")
    diodes = result.netlist.read_text().count("sky130_fd_sc_hd__diode_2 ant_diode_")
    assert diodes == m["detailedroute__antenna_diodes_count"]  # the layout's netlist carries them (STA, LVS)
    # incremental: each round reroutes only the diode nets (and nets over a diode's cell); every
    # other net keeps its wiring and pin stubs exactly
    for record in sorted((tmp_path / "tight" / "route").glob("diodes*/diodes.json")):
        r = json.loads(record.read_text())
        chosen = set(r["diode_nets"]) | set(r["nets_over_diodes"])
        before, after = (_net_entries(Path(r[k]).read_text()) for k in ("base", "routed"))
        assert chosen and {n for n in before.keys() | after.keys() if before.get(n) != after.get(n)} <= chosen
        assert sum(1 for n in before if n not in chosen) > 10  # most of the counter's nets were kept
    assert m["closer__antenna__rerouted_nets"] < m["closer__netlist__nets"] / 2
    assert m["closer__antenna__discarded_rounds"] == []  # each round mended more than it broke
    assert not list((tmp_path / "tight" / "antenna").glob("round*_discarded"))
    with pytest.raises(Exception, match="only tightens"):
        AntennaConfig(limit_scale=1.5)


@pytest.mark.slow
def test_antenna_rounds_check_drc_only_where_they_changed_the_layout(counter_run, tmp_path):
    """With windowed checks on (large designs' setting), an antenna round's DRC reads only the boxes
    its reroute changed (the rerouted nets' wiring before and after, the diodes and the fill around
    them) and takes the other markers from the check before it; the whole chip is checked once
    before the official deck and agrees, and the layout signs off as the whole-chip flow's does."""
    from closer.physical.signoff.antenna import AntennaConfig

    _, work = counter_run
    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=5.0, corners=("tt_025C_1v80",),
                         antenna=AntennaConfig(limit_scale=0.1), repair=RepairConfig(windowed_min_instances=1))
    result = run_physical(work / "counter.v", "counter", None, tmp_path / "windowed", cfg)
    m = result.metrics
    assert m["closer__antenna__repair_rounds"] >= 1 and m["detailedroute__antenna__violating__nets"] == 0
    drcs = [s["metrics"] for s in result.steps if s["step"] == "Drc"]
    assert drcs[0]["closer__drc__windows"] == 0  # after the full route: the whole chip
    assert len(drcs) == 1 + m["closer__antenna__repair_rounds"] and all(d["closer__drc__windows"] > 0 for d in drcs[1:])
    assert m["closer__drc__windowed_total"] == m["closer__drc__whole_total"] == m["detailedroute__route__drc_errors"] == 0
    assert m["closer__signoff__official_drc__errors"] == 0 and m["closer__signoff__lvs__clean"] is True
    assert m["closer__gate__signoff__pass"] is True


@pytest.mark.slow
def _lossy_reroute(monkeypatch) -> list[str]:
    """route.reroute made to lose a net it did not reroute (as qrouter's rip-up of kept nets once
    did on PicoRV32); returns the lost nets, one per reroute."""
    from closer.physical.repair.repair import strip_routes
    from closer.physical.route import route

    real = route.reroute
    lost: list[str] = []

    def lossy_reroute(tech_lef, router_lef, routed_def, rc_file, layout, work, cfg, nets, *args, **kw):
        merged, rc, failed = real(tech_lef, router_lef, routed_def, rc_file, layout, work, cfg, nets, *args, **kw)
        text = merged.read_text()
        victim = min(n for n in _routed_nets(text) - set(nets) if n.startswith("_"))
        lost.append(victim)
        merged.write_text(strip_routes(text, {victim}))
        return merged, rc, failed + [victim]

    monkeypatch.setattr(route, "reroute", lossy_reroute)
    return lost


def test_antenna_round_whose_reroute_breaks_the_layout_is_routed_in_full(counter_run, tmp_path, monkeypatch):
    """A diode round whose incremental reroute leaves the layout worse than its start (a lost net;
    the repair off, so nothing routes it again) is routed again in full with its diodes, and kept
    when that stands no worse than the start."""
    from closer.physical.repair.repair import RepairConfig
    from closer.physical.signoff.antenna import AntennaConfig

    lost = _lossy_reroute(monkeypatch)
    _, work = counter_run
    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=5.0, corners=("tt_025C_1v80",),
                         repair=RepairConfig(rounds=0, item_rounds=0), antenna=AntennaConfig(limit_scale=0.1))
    out = tmp_path / "full"
    result = run_physical(work / "counter.v", "counter", None, out, cfg)
    m = result.metrics
    assert lost and m["closer__antenna__full_reroute_rounds"] == [1] and m["closer__antenna__discarded_rounds"] == []
    assert m["closer__route__unrouted_nets"] == 0 and m["closer__signoff__lvs__clean"] is True
    assert lost[0] in _routed_nets((out / "final.def").read_text())
    assert m["detailedroute__antenna_diodes_count"] > 0 and "ant_diode_" in result.netlist.read_text()
    assert m["detailedroute__antenna__violating__nets"] <= m["closer__antenna__violating_nets_before_repair"]
    assert [s["step"] for s in result.steps].count("Route") == 2


def test_a_guided_layout_is_rerouted_along_its_guides(counter_run, tmp_path, monkeypatch):
    """A layout the Route step routed with global-route guides (here the counter, guides from one
    net) has its diode rounds' reroutes follow the same guides file (stage 1 inside the nets'
    GCells first)."""
    from closer.physical.route import route
    from closer.physical.signoff.antenna import AntennaConfig

    real, given = route.reroute, []

    def recording(*args, **kw):
        if kw.get("kept_nets") == route.HOLD:  # the incremental reroutes (a repair round's releases)
            given.append(kw.get("guides"))
        return real(*args, **kw)

    monkeypatch.setattr(route, "reroute", recording)
    _, work = counter_run
    out = tmp_path / "guided"
    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=5.0, corners=("tt_025C_1v80",),
                         route=route.RouteConfig(guides_min_nets=1), antenna=AntennaConfig(limit_scale=0.1))
    m = run_physical(work / "counter.v", "counter", None, out, cfg).metrics
    assert m["closer__route__guided"] is True and m["closer__antenna__repair_rounds"] >= 1
    assert (out / "route" / "guides.txt").is_file()
    assert len(given) == len(list(out.glob("route/diodes*"))) >= 1
    assert all(g == out / "route" / "guides.txt" for g in given)


def test_antenna_round_that_breaks_the_layout_is_discarded(counter_run, tmp_path, monkeypatch):
    """The other way of the rounds above: a diode round that leaves the layout worse than its
    start (its reroute lost a net, and the full reroute is off) is undone (netlist, layout, GDS,
    reports and metrics as before it), its files kept aside, and no further round runs."""
    from closer.physical.repair.repair import RepairConfig
    from closer.physical.signoff.antenna import AntennaConfig

    lost = _lossy_reroute(monkeypatch)
    _, work = counter_run
    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=5.0, corners=("tt_025C_1v80",),
                         repair=RepairConfig(rounds=0, item_rounds=0),
                         antenna=AntennaConfig(limit_scale=0.1, full_reroute=False))
    out = tmp_path / "lossy"
    result = run_physical(work / "counter.v", "counter", None, out, cfg)
    m = result.metrics
    assert lost and m["closer__antenna__repair_rounds"] == 1 and m["closer__antenna__discarded_rounds"] == [1]
    assert m["closer__antenna__full_reroute_rounds"] == []
    # the run's layout is the round's start: route-complete, LVS clean, no diode, its violations
    assert m["closer__route__unrouted_nets"] == 0 and m["closer__signoff__lvs__clean"] is True
    assert m["detailedroute__antenna_diodes_count"] == 0 and "ant_diode_" not in result.netlist.read_text()
    assert m["detailedroute__antenna__violating__nets"] == m["closer__antenna__violating_nets_before_repair"] > 0
    start, aside = out / "antenna" / "round1_start", out / "antenna" / "round1_discarded"
    assert (out / "counter.gds").read_bytes() == (start / "counter.gds").read_bytes()
    assert (aside / "counter.gds").read_bytes() != (start / "counter.gds").read_bytes()
    routed = {f: _routed_nets((f / "final.def").read_text()) for f in (out, aside)}
    assert lost[0] in routed[out] and lost[0] not in routed[aside]
    assert json.loads((out / "antenna" / "antenna.json").read_text()) == \
        json.loads((out / "antenna" / "before_round1.json").read_text())
    # the round's own steps stay in the record (append-only), the discarded layout's LVS among them
    lvs_runs = [s["metrics"] for s in result.steps if s["step"] == "Lvs"]
    assert len(lvs_runs) == 2 and lvs_runs[1]["closer__signoff__lvs__clean"] is False
    # a later Antenna step (as after a setup repair) tries no round again
    from closer.physical.steps.antenna_repair import Antenna

    Antenna().start(result.context)
    again = result.context.steps[-1]["metrics"]
    assert again["closer__antenna__repair_rounds"] == 0 and again["closer__antenna__repair_skipped"] == \
        "an earlier round was undone"
    assert len(lost) == 1 and not (out / "route" / "diodes2").exists()


def test_a_reroute_writes_each_kept_net_it_ripped_up(counter_run, tmp_path):
    """qrouter patch "release" two-way, on the counter's first repair round, where qrouter's stage 2
    rips up a net the round keeps (`ignore`) to route the round's failing net: the round (as every
    repair round, route.RELEASE) has it released and written with new wiring, taken into the
    spliced layout; its same input without the part rips the same net up and writes no wiring for
    it (issue 19's stale reroutes: the caller kept the old wiring under the new routes)."""
    from closer.physical.route.route import PATCH_ENV, qrouter_binary, released_nets, ripped_nets
    from closer.procs import Command, run

    _, work = counter_run
    done = work / "phys" / "route" / "repair" / "round1"
    script = (done / "reroute.tcl").read_text()
    kept = set(re.search(r"^ignore (.*)$", script, re.M).group(1).split())
    released = released_nets(done / "qrouter_reroute.log")
    assert released and released <= kept and ripped_nets(done / "qrouter_reroute.log") & kept == released
    assert released <= _routed_nets((done / "rerouted.def").read_text())
    assert json.loads((done / "released.json").read_text())["released"] == sorted(released)
    (tmp_path / "reroute.tcl").write_text(script.replace(str(done), str(tmp_path)))
    shutil.copyfile(done / "partial.def", tmp_path / "partial.def")
    log = tmp_path / "qrouter.log"
    run(Command([str(qrouter_binary()), "-noc", "-nog", "-s", str(tmp_path / "reroute.tcl")], cwd=tmp_path,
                env={PATCH_ENV: "keepout,tracks"}), log, check=False)
    ripped = ripped_nets(log) & kept
    assert ripped and not released_nets(log)
    assert not ripped & _routed_nets((tmp_path / "rerouted.def").read_text())


def _routed_nets(def_text: str) -> set[str]:
    from closer.physical.io.defnets import block_name, net_blocks

    return {block_name(b) for b in net_blocks(def_text)[2] if "+ ROUTED" in b}


def _net_entries(def_text: str) -> dict[str, tuple[str, ...]]:
    """Per net, its NETS entry and its pin-stub entries (routed DEF text)."""
    from closer.physical.io.defnets import block_name, net_blocks, stubs

    out: dict[str, list[str]] = {}
    for block in [*net_blocks(def_text)[2], *stubs(def_text)]:
        if block_name(block):
            out.setdefault(block_name(block), []).append(block.strip())
    return {n: tuple(b) for n, b in out.items()}


def test_gds_pin_labels_are_the_verilog_port_names(counter_run):
    result, work = counter_run
    layout = kdb.Layout()
    layout.read(str(result.gds))
    top = layout.top_cell()
    labels = {s.text_string for s in top.shapes(layout.find_layer(*LABEL_MET2)).each() if s.is_text()}
    verilog = (work / "counter.v").read_text()
    assert {f"count[{i}]" for i in range(8)} | {"clk", "rst", "en"} <= labels  # bus bits as in the Verilog
    assert not any(label.startswith("count_") for label in labels)            # no DEF-safe names left
    for label in labels - {"VPWR", "VGND"}:                                    # the power straps' own labels
        assert f"\\{label} " in verilog or f"input {label};" in verilog, label
    assert result.metrics["closer__signoff__lvs__clean"] is True


def test_parse_rc_tree(tmp_path):
    rc = tmp_path / "x.rc"
    rc.write_text("n1 1 u1/X 2 ( 4.0 0.0002 ( 5.0 0.0003 u2/B ) , ( 3.0 0.0003 u3/A ) )\n")
    nets = parse_rc(rc)
    net = nets["n1"]
    assert net.driver == "u1/X"
    assert sorted(p for p, _ in net.loads) == ["u2/B", "u3/A"]
    assert len(net.resistors) == 3 and abs(net.total_cap_pf - 0.0008) < 1e-12


def test_parse_rc_tree_deeper_than_the_recursion_limit(tmp_path):
    """A long route is a chain of nested subtrees (the SRAM wrapper's went past Python's
    recursion limit of 1000): 5,000 levels parse, the load on the last, every resistor chained."""
    depth = 5000
    rc = tmp_path / "deep.rc"
    rc.write_text("n1 1 u1/X 1 " + "( 1.0 0.0001 " * depth + "u2/A" + " )" * depth + "\n")
    net = parse_rc(rc)["n1"]
    assert net.loads == [("u2/A", depth)]
    assert net.resistors[:2] == [(0, 1, 1.0), (1, 2, 1.0)] and net.resistors[-1] == (depth - 1, depth, 1.0)


def test_spef_escapes_scalar_ports_named_with_brackets(tmp_path):
    """A bit of a bus port keeps its brackets (SPEF's bus delimiter); a scalar port whose name
    has brackets (Yosys `splitnets -ports`: `\\count[0] `) is escaped, or OpenSTA does not find it."""
    from closer.physical.signoff.parasitics import write_spef

    rc = tmp_path / "x.rc"
    rc.write_text("q_0_ 1 u1/X 1 ( 4.0 0.0002 PIN/q_0_ )\nd_1_ 1 PIN/d_1_ 1 ( 4.0 0.0002 u1/A )\n")
    original = {"q_0_": "q[0]", "d_1_": "d[1]"}
    ports = {"q_0_": "output", "d_1_": "input"}
    scalar = write_spef(parse_rc(rc), "top", original, tmp_path / "a.spef", ports).read_text()
    assert "*D_NET q\\[0\\]" in scalar and "*D_NET d\\[1\\]" in scalar and "*P d\\[1\\] I" in scalar
    bus = write_spef(parse_rc(rc), "top", original, tmp_path / "b.spef", ports, {"q_0_", "d_1_"}).read_text()
    assert "*D_NET q[0]" in bus and "*P d[1] I" in bus


def test_spef_refuses_a_tree_whose_driver_is_no_terminal(tmp_path):
    """A malformed RC tree (its driver field not INSTANCE/PIN) is a ToolError naming the SPEF."""
    from closer.errors import ToolError
    from closer.physical.signoff.parasitics import write_spef

    rc = tmp_path / "x.rc"
    rc.write_text("clk 1  10 ( 0.6 2.7e-05 u1/CLK )\n")
    with pytest.raises(ToolError, match="not an INSTANCE/PIN terminal"):
        write_spef(parse_rc(rc), "top", {}, tmp_path / "a.spef", {"clk": "input"})


def test_metadata_matches_schema(counter_run):
    import jsonschema

    from closer.paths import schema_path

    result, _ = counter_run
    schema = json.loads(schema_path("physical-metrics").read_text())
    jsonschema.validate(json.loads(result.metadata.read_text()), schema)


def test_bad_input_names_the_file(tmp_path):
    from closer.errors import InputError

    with pytest.raises(InputError, match="does not exist"):
        run_physical(tmp_path / "missing.v", "x", None, tmp_path / "out", PhysicalConfig(clock_port="clk", clock_period_ns=5))
    with pytest.raises(InputError, match="pin_access"):
        PhysicalConfig(pin_access="bogus")
    with pytest.raises(InputError, match="large_pin_access"):
        PhysicalConfig(large_pin_access="bogus")


def test_pin_access_mode_by_design_size():
    """Large netlists are routed with every pin a met1 pad; the suite's sizes keep hybrid."""
    cfg = PhysicalConfig()
    assert cfg.pin_access_for(cfg.large_pin_access_min_nets - 1) == "hybrid"
    assert cfg.pin_access_for(cfg.large_pin_access_min_nets) == "pads"
    assert PhysicalConfig(large_pin_access=None).pin_access_for(10**6) == "hybrid"
    assert PhysicalConfig(pin_access="lef", large_pin_access_min_nets=10).pin_access_for(9) == "lef"


def test_pads_mode_routes_clean_and_lvs_sees_each_pad_via(counter_run, tmp_path):
    """The counter routed as a large design is (pads from 1 net): qrouter sees every accessible
    signal pin as a met1 pad, the final DEF carries an L1M1_PR via at each connected pin's access
    point, and the layout routes completely, DRC- and LVS-clean. The other way: with those vias
    taken out of the final DEF, LVS reports the pins open."""
    from closer.physical.route import route
    from closer.physical.signoff import gds, lvs
    from closer.physical.steps.checks import port_names

    _, work = counter_run
    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=5.0, corners=("tt_025C_1v80",), large_pin_access_min_nets=1)
    result = run_physical(work / "counter.v", "counter", None, tmp_path / "pads", cfg)
    m = result.metrics
    assert m["closer__pin_access__mode"] == "pads"
    assert counter_run[0].metrics["closer__pin_access__mode"] == "hybrid"
    assert m["closer__route__unrouted_nets"] == 0 and m["detailedroute__route__drc_errors"] == 0
    assert m["closer__signoff__lvs__clean"] is True and m["closer__signoff__official_drc__errors"] == 0
    lef = (tmp_path / "pads" / "router_cells.lef").read_text()
    dfx = lef[lef.index("MACRO sky130_fd_sc_hd__dfxtp_1"):]
    d_pin = dfx[dfx.index("PIN D"):dfx.index("END D")]
    assert "LAYER met1" in d_pin and "LAYER li1" not in d_pin
    final = (tmp_path / "pads" / "final.def").read_text()
    vias = re.findall(r"li1 0 \( \d+ \d+ \) L1M1_PR", final)
    assert len(vias) >= m["closer__pin_access__pins"] // 4  # one per connected pin (count: several per cell)
    ctx = result.context
    no_vias = {master: {pin: None for pin in pins} for master, pins in ctx.access.items()}
    stripped = route.finalize_def(ctx.route_result.routed_def, ctx.layout, ctx.netlist, ctx.macros, no_vias,
                                  tmp_path / "stripped.def", "pads", ctx.route_result.failed)
    assert len(re.findall(r"L1M1_PR", stripped.read_text())) < len(re.findall(r"L1M1_PR", final))
    g = gds.def_to_gds(stripped, ctx.pdk.tech_lef, ctx.pdk.cell_lef, ctx.pdk.gds, tmp_path / "stripped.gds",
                       port_names(ctx.netlist), ctx.black_boxes())
    v = lvs.run_lvs(g, ctx.layout, ctx.netlist, ctx.macros, tmp_path / "lvs")
    assert len(v.opens) >= 10


@pytest.fixture(scope="module")
def starved_run(counter_run, tmp_path_factory):
    """The counter routed with only li1+met1 (qrouter leaves nets unrouted), the repair off, and
    the antenna limits tightened to a tenth (as in the diode repair's test below: violations)."""
    from closer.physical.repair.repair import RepairConfig
    from closer.physical.route.route import RouteConfig
    from closer.physical.signoff.antenna import AntennaConfig

    _, work = counter_run
    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=5.0, corners=("tt_025C_1v80",),
                         route=RouteConfig(layers=2, max_passes=1, cap_at_best_pass=False),
                         repair=RepairConfig(rounds=0, item_rounds=0), antenna=AntennaConfig(limit_scale=0.1))
    out = tmp_path_factory.mktemp("starved")
    return run_physical(work / "counter.v", "counter", None, out / "starved", cfg), out


def test_route_gate_fails_when_nets_stay_unrouted(counter_run, starved_run):
    """Two-way route gate: the counter routes completely (above); with only li1+met1 available
    qrouter leaves nets unrouted, the gate fails and LVS reports those nets open."""
    result, work = counter_run
    assert result.metrics["closer__gate__route__pass"] is True
    starved, out = starved_run
    m = starved.metrics
    assert m["closer__route__unrouted_nets"] > 0
    assert m["closer__gate__route__pass"] is False and m["closer__gate__signoff__pass"] is False
    assert m["closer__signoff__lvs__opens"] >= 1
    # the routability fallback (step Replace) ran because nets were left unrouted, and the run
    # kept whichever layout left fewer; where the first routes completely it never runs
    assert result.metrics["closer__replace__ran"] is False and not (work / "phys" / "replace").exists()
    assert m["closer__replace__ran"] is True and m["closer__replace__spread_pin_peaks"] == 2.0
    before, after = m["closer__replace__problems_before"], m["closer__replace__problems_after"]
    assert m["closer__replace__kept"] == (after < before)
    assert m["closer__route__unrouted_nets"] == min(before, after) > 0
    assert (out / "starved" / "replace" / "steps.json").is_file()
    assert (out / "starved" / "replace" / "first" / "final.def").is_file() == m["closer__replace__kept"]
    # the fallback after the repair: not with the repair off, nor after Replace ran
    assert m["closer__replace_signoff__ran"] is False and result.metrics["closer__replace_signoff__ran"] is False
    # route/unrouted.json: the nets left and where qrouter's searches for them failed
    done = json.loads((work / "phys" / "route" / "unrouted.json").read_text())
    assert done["unrouted"] == [] and done["fell_through_um"] == {}
    left = json.loads((out / "starved" / "route" / "unrouted.json").read_text())
    assert left["unrouted"] and set(left["fell_through_um"]) <= set(left["unrouted"])
    w, h = (int(v) / 1000 for v in re.search(r"DIEAREA \( 0 0 \) \( (\d+) (\d+) \)",
                                              (out / "starved" / "final.def").read_text()).groups())
    assert all(0 <= x <= w and 0 <= y <= h for x, y in left["fell_through_um"].values())


def test_antenna_repair_skipped_while_nets_are_unrouted(counter_run, starved_run):
    """The Antenna step runs no diode round on a layout with unrouted nets: the check runs and is
    recorded (violations at the tightened limits), no diode goes in, nothing is rerouted, and the
    metrics (also in the step's record) say why. The other way: the route-complete counter's
    Antenna step skips nothing, and with the same tightened limits it gets its diodes
    (test_antenna_repair_inserts_diodes_until_clean)."""
    starved, out = starved_run
    m = starved.metrics
    assert m["closer__route__unrouted_nets"] > 0
    assert m["closer__antenna__violating_nets_before_repair"] > 0  # a round was due
    assert m["detailedroute__antenna__violating__nets"] == m["closer__antenna__violating_nets_before_repair"]
    assert m["closer__antenna__repair_rounds"] == 0 and m["closer__antenna__rerouted_nets"] == 0
    assert m["detailedroute__antenna_diodes_count"] == 0
    assert m["closer__antenna__repair_skipped"] == "unrouted nets"
    assert m["closer__antenna__repair_skipped_unrouted_nets"] == m["closer__route__unrouted_nets"]
    assert json.loads((out / "starved" / "antenna" / "antenna.json").read_text())["violating_nets"]
    assert not (out / "starved" / "antenna" / "before_round1.json").exists()
    assert not list((out / "starved" / "route").glob("diodes*"))
    record = [s for s in starved.steps if s["step"] == "Antenna"]
    assert len(record) == 1 and record[0]["metrics"]["closer__antenna__repair_skipped"] == "unrouted nets"
    assert [s["step"] for s in starved.steps].count("Repair") == 1  # no round's repair
    done = counter_run[0].metrics
    assert done["closer__antenna__repair_skipped"] is None and done["closer__antenna__repair_skipped_unrouted_nets"] == 0


def test_repair_skipped_above_its_unrouted_limit(counter_run, tmp_path):
    """Repair runs no round on a layout with more unrouted nets than `RepairConfig.max_unrouted`
    and says so; the same starved layout under the limit gets its round (two-way), and the
    route-complete counter skips nothing."""
    from closer.physical.place.place import PlaceConfig
    from closer.physical.repair.repair import RepairConfig
    from closer.physical.route.route import RouteConfig

    _, work = counter_run
    runs = {}
    for limit in (0, None):
        cfg = PhysicalConfig(clock_port="clk", clock_period_ns=5.0, corners=("tt_025C_1v80",),
                             route=RouteConfig(layers=2, max_passes=1, cap_at_best_pass=False),
                             place=PlaceConfig(fallback_spread_pin_peaks=0.0),  # no Replace trial
                             repair=RepairConfig(rounds=1, item_rounds=0, max_unrouted=limit))
        runs[limit] = run_physical(work / "counter.v", "counter", None, tmp_path / f"limit{limit}", cfg).metrics
    over, under = runs[0], runs[None]
    assert over["closer__route__unrouted_nets"] > 0
    assert over["closer__repair__skipped"] == "unrouted nets" and over["closer__repair__rounds"] == 0
    assert over["closer__repair__skipped_unrouted_nets"] == over["closer__route__unrouted_nets"]
    assert not (tmp_path / "limit0" / "route" / "repair").exists()
    assert under["closer__repair__skipped"] is None and under["closer__repair__rounds"] == 1
    assert (tmp_path / "limitNone" / "route" / "repair" / "repair.json").is_file()
    assert counter_run[0].metrics["closer__repair__skipped"] is None


def test_unrouted_json_matches_its_schema(counter_run, starved_run):
    """route/unrouted.json of the real runs (complete, starved, and the starved run's fallback)
    validates against closer/schemas/physical-unrouted.schema.json; perturbed copies do not."""
    import jsonschema

    from closer.paths import schema_path

    schema = json.loads(schema_path("physical-unrouted").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    (_, work), (_, out) = counter_run, starved_run
    files = [work / "phys" / "route" / "unrouted.json", out / "starved" / "route" / "unrouted.json",
             out / "starved" / "replace" / "route" / "unrouted.json"]
    docs = [json.loads(f.read_text()) for f in files]
    for doc in docs:
        jsonschema.validate(doc, schema)
    left = docs[1]
    assert left["unrouted"] and left["fell_through_um"] and isinstance(left["log"], str)
    net = next(iter(left["fell_through_um"]))
    bad = [{k: v for k, v in left.items() if k != "fell_through_um"},        # a key missing
           {**left, "unrouted": len(left["unrouted"])},                        # a count, not the names
           {**left, "fell_through_um": {**left["fell_through_um"], net: [1.0]}},   # not a point
           {**left, "fell_through_um": {**left["fell_through_um"], net: ["1", "2"]}},
           {**left, "log": 3},
           {**left, "extra": True}]
    for doc in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(doc, schema)


def test_fall_through_points_take_each_failed_nets_last_failed_search(tmp_path):
    from closer.physical.route.route import fall_through_points

    log = tmp_path / "qrouter.log"
    log.write_text("Pass 40 (maxcost is 432)\nFell through 40 passes\n(401.81,392.87) net=a\n"
                   "Fell through 0 passes\n(10.5,20.25) net=b\nFell through 40 passes\n(1.0,2.0) net=a\n"
                   "Fell through 3 passes\n(5.0,6.0) net=routed_later\n")
    assert fall_through_points(log, ["b", "a", "c"]) == {"b": (10.5, 20.25), "a": (1.0, 2.0)}


def test_congestion_driven_spreading_weights_the_pin_peaks(counter_run):
    """PlaceConfig.spread_pin_peaks (the routability fallback's placement): after a first
    placement, the cells in the squares with more pins than the mean count as larger
    ((pins / mean) ** alpha times their width), the others as their width, and the second
    placement spreads them out; with 0 the placement is the default one. Pure Python, on the
    counter."""
    from collections import Counter

    from closer.pdk import pdk
    from closer.physical.floorplan.floorplan import DBU, SITE_W, FloorplanConfig, make_floorplan
    from closer.physical.io.lef import read_macros
    from closer.physical.io.netlist import read_netlist
    from closer.physical.place.place import PEAK_BIN, PlaceConfig, _peak_weights, place

    _, work = counter_run
    macros = read_macros(pdk().cell_lef)
    netlist = read_netlist(work / "phys" / "netlist.json", "counter")

    def placed(cfg: PlaceConfig):
        layout = make_floorplan(netlist, macros, FloorplanConfig())
        place(netlist, macros, layout, cfg)
        return layout

    plain = placed(PlaceConfig())
    assert placed(PlaceConfig(spread_pin_peaks=0.0)).cells == plain.cells  # deterministic, one placement
    square = {n: (c.x // PEAK_BIN, c.y // PEAK_BIN) for n, c in plain.cells.items()}
    pins = Counter(square[i] for terms in netlist.nets.values() for i, _ in terms if i in square)
    mean = sum(pins.values()) / len(pins)
    assert max(pins.values()) > mean  # the counter has a peak to spread
    weights = _peak_weights(netlist, plain, macros, 2.0)
    for name, weight in weights.items():
        width = round(macros[netlist.instances[name].master].width * DBU) // SITE_W
        expected = width * (pins[square[name]] / mean) ** 2 if pins[square[name]] > mean else width
        assert weight == pytest.approx(expected)
    assert placed(PlaceConfig(spread_pin_peaks=2.0)).cells != plain.cells



def test_cell_padding_keeps_sites_free_between_cells(counter_run):
    """PlaceConfig.padding_sites: where a row has the room, each cell ends at least that many
    sites before the next one in its piece of the row starts; 0 is the unpadded placement; a design from
    large_min_instances instances takes large_padding_sites."""
    from collections import defaultdict

    from closer.pdk import pdk
    from closer.physical.floorplan.floorplan import DBU, SITE_W, FloorplanConfig, make_floorplan
    from closer.physical.io.lef import read_macros
    from closer.physical.io.netlist import read_netlist
    from closer.physical.place.place import PlaceConfig, place

    _, work = counter_run
    macros = read_macros(pdk().cell_lef)
    netlist = read_netlist(work / "phys" / "netlist.json", "counter")

    def gaps(cfg: PlaceConfig) -> list[int]:
        layout = make_floorplan(netlist, macros, FloorplanConfig())
        place(netlist, macros, layout, cfg)
        rows = defaultdict(list)
        for name, cell in layout.cells.items():
            width = round(macros[netlist.instances[name].master].width * DBU)
            rows[cell.y].append((cell.x, cell.x + width))
        return [(b[0] - a[1]) // SITE_W for spans in rows.values() for a, b in zip(sorted(spans), sorted(spans)[1:])]

    plain, padded = gaps(PlaceConfig()), gaps(PlaceConfig(padding_sites=2))
    assert min(plain) == 0  # unpadded cells abut somewhere
    tight = [sum(g < 2 for g in found) for found in (plain, padded)]
    # the legalizer pads within a bisection leaf's piece of a row: two leaves may still abut
    assert tight[0] >= len(plain) // 2 and tight[1] <= len(padded) // 8, tight
    assert PlaceConfig(large_padding_sites=4).for_instances(3000).padding_sites == 4
    assert PlaceConfig(large_padding_sites=4).for_instances(2999).padding_sites == 0
    assert PlaceConfig().for_instances(3000).congestion_target == PlaceConfig().large_congestion_target
    assert PlaceConfig().for_instances(2999).congestion_target == PlaceConfig().congestion_target
    assert PlaceConfig().for_instances(3000).fallback_spread_pin_peaks == 0.0  # no Replace trial
    assert PlaceConfig().for_instances(2999).fallback_spread_pin_peaks == PlaceConfig().fallback_spread_pin_peaks

def _first_net_number(qrouter: str, phys: Path, tech_lef: Path, work: Path) -> int:
    from closer.procs import Command, run

    placed = (phys / "placed.def").read_text()
    first = placed.split("\nNETS ", 1)[1].split("\n- ", 1)[1].split()[0]
    tcl = work / f"netnum_{Path(qrouter).parent.name}.tcl"
    tcl.write_text(f"read_lef {tech_lef}\nread_lef {phys / 'router_cells.lef'}\ncatch {{layers 5}}\n"
                   f"read_def {phys / 'placed.def'}\nprint net {first}\nquit\n")
    done = run(Command([qrouter, "-noc", "-nog", "-s", str(tcl)], timeout_s=120), work / f"{tcl.stem}.log", check=False)
    return int(re.search(rf"^Net (\d+): {re.escape(first)}$", done.log.read_text(), re.M).group(1))


def test_qrouter_patch_01_first_net_after_specialnets(counter_run, pdk_paths, tmp_path):
    """Debian's qrouter gives the first regular net read after SPECIALNETS the reserved number 2
    (VDD_NET); ours (patch 01) starts regular nets above the reserved 1..3."""
    from closer.physical.route.route import qrouter_binary

    result, work = counter_run
    phys = work / "phys"
    assert _first_net_number(str(qrouter_binary()), phys, pdk_paths.tech_lef, tmp_path) >= 4
    debian = Path("/usr/bin/qrouter")
    if debian.exists():
        assert _first_net_number(str(debian), phys, pdk_paths.tech_lef, tmp_path) == 2


def test_rudy_congestion_map_two_way(counter_run, tmp_path):
    """The placement's RUDY estimate (closer.physical.place.congestion): the run wrote it and its
    metrics; each net's wire is all there (a GCell grid covering the die holds every net's half
    perimeter, split by direction); the same cells dealt out at random over the same sites (a bad
    placement) give a higher mean and peak; the picture is written."""
    from closer.pdk import pdk
    from closer.physical.floorplan.floorplan import DBU
    from closer.physical.io.lef import read_tech
    from closer.physical.place.congestion import pin_points, read_json, rudy, write_png

    result, work = counter_run
    stored = read_json(work / "phys" / "congestion.json")
    assert result.metrics["closer__place__congestion__peak"] == pytest.approx(float(stored.ratio.max()), abs=1e-4)
    assert result.metrics["closer__place__congestion__gcells"] == stored.ratio.size > 1

    layout, netlist, macros = _placed_counter(work, pdk())
    tech = read_tech(pdk().tech_lef)
    spread = rudy(netlist, layout, macros, tech, layers=5)
    nets = pin_points(netlist, layout, macros)
    shortest = min(min(layer.pitch_x, layer.pitch_y) for layer in tech.routing_layers[1:5])  # a net's least extent
    half_perimeter_h = sum(max(max(x for x, _ in p) - min(x for x, _ in p), shortest) for p in nets.values())
    assert spread.demand_h.sum() == pytest.approx(half_perimeter_h, rel=1e-6)

    shuffled_layout = copy.deepcopy(layout)  # the same sites, the cells dealt out at random: longer nets
    cells = sorted(shuffled_layout.cells.values(), key=lambda c: c.name)
    spots = [(c.x, c.y) for c in cells]
    for cell, k in zip(cells, random.Random(1).sample(range(len(spots)), len(spots))):
        cell.x, cell.y = spots[k]
    shuffled = rudy(netlist, shuffled_layout, macros, tech, layers=5)
    assert shuffled.ratio.mean() > 1.5 * spread.ratio.mean() and shuffled.ratio.max() > spread.ratio.max()
    assert layout.die_w / DBU <= spread.ratio.shape[1] * spread.gcell_um
    png = write_png(spread, tmp_path / "congestion.png", "counter")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_congestion_ratio_leaves_out_a_direction_without_tracks():
    """A run whose router has no layer of one direction (li1 and met1 only) gets the other
    direction's ratio, never an infinite or undefined one."""
    import numpy as np

    from closer.physical.place.congestion import CongestionMap

    demand = np.array([[5.0, 0.0]])
    assert CongestionMap(13.6, demand, demand, 10.0, 0.0).ratio.tolist() == [[0.5, 0.0]]
    assert CongestionMap(13.6, demand, 2 * demand, 10.0, 5.0).ratio.tolist() == [[2.0, 0.0]]
    assert CongestionMap(13.6, demand, demand, 0.0, 0.0).metrics()["closer__place__congestion__peak"] == 0.0


def test_inflation_spreads_cells_over_the_target_and_leaves_the_rest(counter_run):
    """The routability mode (closer.physical.place.inflation) two-way: a placement whose RUDY peak
    is at or below the target runs no round and is left as placed; with a target below the
    counter's peak the cells in the GCells over it count as larger, the kept round has no more
    overflow than the first placement, its map is the kept layout's, the layout stays legal
    (every cell on its own sites) and the metrics say what happened. Pure Python, on the counter."""
    from closer.pdk import pdk
    from closer.physical.floorplan.floorplan import FloorplanConfig, insert_fill, make_floorplan
    from closer.physical.io.lef import read_macros
    from closer.physical.io.netlist import read_netlist
    from closer.physical.place import inflation
    from closer.physical.place.congestion import rudy
    from closer.physical.place.place import PlaceConfig, place

    _, work = counter_run
    macros = read_macros(pdk().cell_lef)
    tech = read_tech(pdk().tech_lef)
    netlist = read_netlist(work / "phys" / "netlist.json", "counter")

    def placed():
        layout = make_floorplan(netlist, macros, FloorplanConfig())
        place(netlist, macros, layout, PlaceConfig())
        return layout

    plain = placed()
    peak = float(rudy(netlist, plain, macros, tech, 5).ratio.max())
    calm = placed()
    kept, rounds = inflation.inflate(netlist, macros, calm, tech, 5, PlaceConfig(congestion_target=peak))
    assert len(rounds) == 1 and rounds[0].over_target == 0 and calm.cells == plain.cells
    assert inflation.metrics(rounds, peak)["closer__place__inflation__rounds"] == 0

    target = round(0.6 * peak, 4)
    hot = placed()
    kept, rounds = inflation.inflate(netlist, macros, hot, tech, 5, PlaceConfig(congestion_target=target))
    assert rounds[0].over_target > 0 and len(rounds) > 1 and rounds[1].inflated_cells > 0
    assert rounds[-1].max_factor <= PlaceConfig().max_inflation
    m = inflation.metrics(rounds, target)
    assert m["closer__place__inflation__overflow_after"] <= m["closer__place__inflation__overflow_before"]
    assert m["closer__place__inflation__overflow_before"] == pytest.approx(inflation.overflow(rudy(netlist, plain, macros, tech, 5), target), abs=1e-3)
    assert inflation.overflow(kept, target) == pytest.approx(m["closer__place__inflation__overflow_after"], abs=1e-3)
    assert rudy(netlist, hot, macros, tech, 5).ratio.tolist() == kept.ratio.tolist()  # the map is the kept layout's
    assert (hot.cells != plain.cells) == (m["closer__place__inflation__kept_round"] > 0)
    insert_fill(copy.deepcopy(hot), macros)  # raises on an overlap
    assert set(hot.cells) == set(plain.cells)


def test_inflation_growth_is_the_ratio_over_target_capped():
    from closer.physical.place.inflation import grow

    factors = grow({"a": 1.0, "b": 1.0, "c": 2.5}, {"a": 1.2, "b": 0.5, "c": 1.8}, 0.9, 2.0, 3.0)
    assert factors["a"] == pytest.approx((1.2 / 0.9) ** 2) and factors["b"] == 1.0 and factors["c"] == 3.0
