"""The search-and-repair step (closer.physical.repair.repair) and the router-access dont-use list.

DEF surgery is tested on small texts; the loop's acceptance rule on fake candidates (a worse
round is never kept); the real tools run in tests/test_flow_pnr.py (gcd signs off clean) and
below (the dont-use list agrees with the pin-access analysis of the cell GDS)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from closer import procs
from closer.physical.io.defnets import stubs
from closer.physical.repair import repair
from closer.physical.signoff.drc import DrcResult
from closer.physical.signoff.lvs import LvsResult

DEF = """VERSION 5.8 ;
DESIGN t ;
NETS 3 ;
- a
  ( u1 A ) ( u2 Y )
+ ROUTED met1 ( 100 200 ) ( 300 * ) M1M2_PR
  NEW met2 ( 300 200 ) ( * 500 ) ;
- b
  ( u3 A ) ( u4 Y )
+ ROUTED met1 ( 100 900 ) ( 300 * ) ;
- c
  ( u5 A ) ( u6 Y ) ;
END NETS
END DESIGN
"""

REROUTED = DEF.replace("+ ROUTED met1 ( 100 200 ) ( 300 * ) M1M2_PR\n  NEW met2 ( 300 200 ) ( * 500 ) ;",
                       "+ ROUTED met1 ( 100 200 ) ( 100 * ) M1M2_PR\n  NEW met2 ( 100 200 ) ( * 500 ) ;")


def test_strip_routes_keeps_connectivity():
    out = repair.strip_routes(DEF, {"a"})
    assert "( u1 A ) ( u2 Y ) ;" in out and "( 300 * ) M1M2_PR" not in out
    assert "+ ROUTED met1 ( 100 900 )" in out  # b untouched
    assert repair.strip_routes(DEF, set()) .count("ROUTED") == 2


def test_splice_routes_takes_only_the_named_nets():
    base = DEF.replace("( 100 900 ) ( 300 * )", "( 100 900 ) ( 700 * )")  # b differs in base
    out = repair.splice_routes(base, REROUTED, {"a"})
    assert "( 100 200 ) ( 100 * ) M1M2_PR" in out          # a from the reroute
    assert "( 100 900 ) ( 700 * )" in out                   # b from the base
    assert out.count("\n- ") == 3 and out.rstrip().endswith("END DESIGN")


# qrouter's trailing pin-stub section: a reroute's output has its own section for the rerouted
# nets, then the stubs of the DEF it read (the stale ones of `a` included when they were not stripped)
STUBS = """
SPECIALNETS 2 ;
- a
+ ROUTED met1 320 ( 300 200 ) ( * 540 ) ;
- b
+ ROUTED met2 280 ( 100 900 ) ( * 1240 ) ;
END DESIGN
"""
REROUTED_STUBS = """
SPECIALNETS 1 ;
- a
+ ROUTED met1 320 ( 100 200 ) ( * 540 ) ;
END SPECIALNETS

- a
+ ROUTED met1 320 ( 300 200 ) ( * 540 ) ;
- b
+ ROUTED met2 280 ( 100 900 ) ( * 1240 ) ;
END DESIGN
"""


def test_strip_and_splice_move_the_rerouted_nets_pin_stubs():
    base = DEF.replace("END NETS\nEND DESIGN\n", "END NETS\n" + STUBS)
    stripped = repair.strip_routes(base, {"a"})
    assert "( 300 200 ) ( * 540 )" not in stripped and "( 100 900 ) ( * 1240 )" in stripped  # a's stale stub gone
    out = repair.splice_routes(base, DEF.replace("END NETS\nEND DESIGN\n", "END NETS\n" + REROUTED_STUBS), {"a"})
    assert stubs(out) == ["- b\n+ ROUTED met2 280 ( 100 900 ) ( * 1240 ) ;",
                                  "- a\n+ ROUTED met1 320 ( 100 200 ) ( * 540 ) ;"]  # a's new stub, once
    assert "SPECIALNETS 2 ;" in out and out.count("SPECIALNETS") == 1 and out.rstrip().endswith("END DESIGN")


def test_splice_rc(tmp_path: Path):
    base, new = tmp_path / "base.rc", tmp_path / "new.rc"
    base.write_text("a 1 u2/Y 1 ( 1 0.1 u1/A )\nb 1 u4/Y 1 ( 2 0.2 u3/A )\n")
    new.write_text("a 1 u2/Y 1 ( 9 0.9 u1/A )\nb 1 u4/Y 1 ( 8 0.8 u3/A )\n")
    out = repair.splice_rc(base, new, {"a"}, tmp_path / "out.rc").read_text().splitlines()
    assert out == ["a 1 u2/Y 1 ( 9 0.9 u1/A )", "b 1 u4/Y 1 ( 2 0.2 u3/A )"]


def test_obstructions_on_the_rule_layer_and_above():
    windows = [("met1", (1.0, 2.0, 1.5, 2.1)), ("via2", (5.0, 5.0, 5.2, 5.2))]
    assert repair.obstructions(windows) == ["obstruction 1.000 2.000 1.500 2.100 met1",
                                            "obstruction 5.000 5.000 5.200 5.200 met2"]
    above = repair.obstructions(windows[:1], grow_um=0.15, above=True)
    assert above == ["obstruction 0.850 1.850 1.650 2.250 met1", "obstruction 0.850 1.850 1.650 2.250 met2"]


def _cand(tmp: Path, drc_total: int, shorts: int = 0, failed: tuple[str, ...] = ()) -> repair.Candidate:
    d = DrcResult({"m1.2": drc_total}, boxes={"m1.2": [(i, 0.0, i + 0.1, 0.1) for i in range(drc_total)]})
    v = LvsResult(shorts == 0, [], [{"nets": ["x", "y"], "terminals": []}] * shorts, 0, 0, 0.0)
    return repair.Candidate(tmp / "r.def", tmp / "r.rc", list(failed), tmp / "f.def", tmp / "t.gds", d, v)


@pytest.mark.parametrize("outcomes, expected_problems, kept, rounds", [
    ([3, 5, 0], 0, 2, 3),        # better, worse (discarded), clean
    ([], 4, 0, 6 + 16),          # never better: every batch strategy once, then 4 markers x 4 strategies
    ([2, 1, 0], 0, 3, 3),
    ([9] * 6 + [3], 3, 1, 6 + 1 + 2 * 4),  # the item phase finds what the batch did not; the
                                           # remaining markers are recomputed, the fixed one skipped
])
def test_repair_keeps_only_strictly_better_rounds(tmp_path: Path, outcomes, expected_problems, kept, rounds):
    first = _cand(tmp_path, 4)
    results = iter(outcomes)
    seen = []

    def reroute(base, nets, before, rdir):
        seen.append(base.problems)
        return rdir / "r.def", rdir / "r.rc", []

    def signoff(routed_def, rc, failed, rdir, base, nets):
        return _cand(rdir, next(results, 9))

    # each strategy's grow finds other nets here (a repeat of nets and obstructions is skipped)
    best, log = repair.repair(first, reroute, signoff, lambda c, windows, grow: {f"n{grow}"}, tmp_path,
                              repair.RepairConfig(rounds=8, item_rounds=24))
    assert best.problems == expected_problems and len(log.rounds) == rounds
    assert sum(1 for e in log.rounds if e["result"] == "kept") == kept
    assert all(e["after"] >= e["before"] for e in log.rounds if e["result"] == "discarded")
    # every reroute starts from the best layout so far
    best_so_far = 4
    for base, entry in zip(seen, log.rounds):
        assert base == best_so_far
        if entry["result"] == "kept":
            best_so_far = entry["after"]


def test_a_round_that_repeats_nets_and_obstructions_from_the_same_layout_is_skipped(tmp_path: Path):
    """qrouter is deterministic: the same nets, obstructions and starting layout give the same
    round. Strategies that choose the same nets (an unrouted net's neighbourhood, say) run once
    per layout; after a kept round the same choice runs again (the layout changed)."""
    first = _cand(tmp_path, 4)
    results = iter([9, 9, 3])  # batch S(0.3) worse, S(0.3, above) worse, S(0.3, no obstruction) better
    ran: list[tuple] = []

    def reroute(base, nets, before, rdir):
        ran.append((base.problems, tuple(before)))
        return rdir / "r.def", rdir / "r.rc", []

    best, log = repair.repair(first, reroute, lambda *a: _cand(tmp_path, next(results, 9)),
                              lambda c, windows, grow: {"n1"}, tmp_path, repair.RepairConfig(rounds=8, item_rounds=0))
    assert len(ran) == len(set(ran))  # never the same round twice
    done = [e for e in log.rounds if e["result"] != "repeat"]
    repeats = [e for e in log.rounds if e["result"] == "repeat"]
    # batch on 4 markers: S(0.3) ran, S(0.3, above) ran, S(1.0) = S(0.3) and S(1.0, above) = S(0.3, above)
    # skipped, S(0.3, none) ran and was kept; from the new layout (3 markers) S(0.3) etc. run again
    assert [e["result"] for e in done[:3]] == ["discarded", "discarded", "kept"]
    assert [e["same_as_round"] for e in repeats[:2]] == [1, 2]
    assert ran[3][0] == 3 and best.problems == 3
    # a perturbed loop that forgot the layout in its key would skip the rounds after the kept one
    assert len(done) > 3


def test_an_unrouted_net_is_rerouted_alone_then_with_the_nets_wired_around_its_cells(tmp_path: Path):
    first = _cand(tmp_path, 0, failed=("u",))
    ran: list[tuple[set[str], list[str]]] = []

    def reroute(base, nets, before, rdir):
        ran.append((set(nets), before))
        return rdir / "r.def", rdir / "r.rc", []

    around = [("li1", (1.0, 1.0, 3.0, 3.7))]

    def find_nets(cand, windows, grow):
        assert windows == around
        return {"u"} | ({"near"} if grow >= 1.0 else set()) | ({"farther"} if grow >= 3.0 else set())

    never_better = lambda *a: _cand(tmp_path, 0, failed=("u",))  # noqa: E731
    repair.repair(first, reroute, never_better, find_nets, tmp_path, repair.RepairConfig(rounds=0),
                  net_windows=lambda net: around)
    assert [r[0] for r in ran] == [{"u"}, {"u", "near"}, {"u", "near", "farther"}]
    assert all(before == [] for _, before in ran)  # a net's windows never become obstructions
    # without the cells' windows the net has one thing to try (qrouter is deterministic)
    ran.clear()
    repair.repair(first, reroute, never_better, find_nets, tmp_path, repair.RepairConfig(rounds=0))
    assert [r[0] for r in ran] == [{"u"}]


def test_problems_list_every_marker_and_lvs_error(tmp_path: Path):
    cand = _cand(tmp_path, 2, shorts=1, failed=("u",))
    labels = [p.label for p in repair.problems_of(cand)]
    assert labels[0] == "unrouted u" and labels[1].startswith("lvs short") and len(labels) == 4
    assert repair.problems_of(cand)[1].nets == {"x", "y"}


def test_repair_does_nothing_on_a_clean_layout(tmp_path: Path):
    first = _cand(tmp_path, 0)
    best, log = repair.repair(first, None, None, None, tmp_path, repair.RepairConfig())  # type: ignore[arg-type]
    assert best is first and log.rounds == []


def test_unrouted_nets_count_more_than_violations(tmp_path: Path):
    assert _cand(tmp_path, 0, failed=("n",)).problems > _cand(tmp_path, 9).problems


# --- the dont-use list against the real cell GDS ------------------------------------------------

def _dont_use_section(start: str, end: str | None = None) -> list[str]:
    from closer.flow.platform import platform_dir

    text = (platform_dir("sky130hd") / "dont_use.txt").read_text()
    section = text[text.index(start):]
    section = section[:section.index(end)] if end else section
    lines = (line.split("#", 1)[0].strip() for line in section.splitlines())
    return [line for line in lines if line]


NO_ACCESS, MET1_UNVALIDATED = "# cells with a signal pin", "# reached on a met1 pin port"


def _router_section() -> list[str]:
    return _dont_use_section(NO_ACCESS, MET1_UNVALIDATED)


def test_listed_cells_are_exactly_inaccessible(pdk_paths):
    """Two-way: every listed cell has a pin without access (the KLayout analysis of the cell GDS
    says so), and cells synthesis keeps using have access on every pin."""
    from closer.physical.io.lef import read_macros
    from closer.physical.route.pinaccess import inaccessible_masters

    macros = read_macros(pdk_paths.cell_lef)
    listed = _router_section()
    assert "sky130_fd_sc_hd__a222oi_1" in listed and len(listed) == len(set(listed))
    found = inaccessible_masters(macros, pdk_paths.gds, listed)
    assert sorted(found) == sorted(listed)
    kept = ["sky130_fd_sc_hd__dfxtp_1", "sky130_fd_sc_hd__nand2_1", "sky130_fd_sc_hd__a221oi_1",
            "sky130_fd_sc_hd__mux2_1", "sky130_fd_sc_hd__inv_2", "sky130_fd_sc_hd__xor2_1",
            # async set/reset flops: RESET_B/SET_B have no li1 access point but a met1 port
            "sky130_fd_sc_hd__dfrtp_1", "sky130_fd_sc_hd__dfstp_1", "sky130_fd_sc_hd__dfbbp_1",
            "sky130_fd_sc_hd__dfrbp_1", "sky130_fd_sc_hd__dfsbp_1", "sky130_fd_sc_hd__dfrtn_1"]
    assert inaccessible_masters(macros, pdk_paths.gds, kept) == {}


def test_met1_port_pins_are_given_to_the_router_as_met1(pdk_paths, tmp_path: Path):
    """Two-way: dfrtp_1's RESET_B has no li1 access point (so the analysis alone would ban the
    cell), but a met1 port; the router's LEF gives qrouter exactly that met1 and no li1. The
    cells kept out for being unvalidated through the flow all have such a pin."""
    from closer.physical.io.lef import read_macros
    from closer.physical.route.pinaccess import access_table, has_met1_port, write_router_lef

    macros = read_macros(pdk_paths.cell_lef)
    name = "sky130_fd_sc_hd__dfrtp_1"
    table = access_table(macros, {name}, pdk_paths.gds)
    assert table[name]["RESET_B"] is None and has_met1_port(macros[name].pins["RESET_B"])
    text = write_router_lef(macros, table, tmp_path / "cells.lef").read_text()
    pin = text[text.index("  PIN RESET_B"):text.index("  END RESET_B")]
    layers = set(re.findall(r"LAYER (\S+) ;", pin))
    assert layers == {"met1"}
    met1 = [r for layer, r in macros[name].pins["RESET_B"].rects if layer == "met1"]
    assert pin.count(" RECT ") == len(met1)
    for cell in _dont_use_section(MET1_UNVALIDATED):
        assert any(has_met1_port(p) for p in macros[cell].signal_pins()), cell


def _met1_hidden_from_router(macro, lef_text: str) -> list[tuple[str, tuple]]:
    """(pin, rect) of every met1 shape of the macro's signal pins that the router's LEF has neither
    as a pin shape nor as an obstruction of the same rectangle (the router would not see it)."""
    cell = lef_text[lef_text.index(f"MACRO {macro.name}\n"):lef_text.index(f"END {macro.name}\n")]
    seen = {tuple(round(float(v), 3) for v in r.split())
            for r in re.findall(r"LAYER met1 ;\s+((?:RECT [^;]+;\s*)+)", cell)
            for r in re.findall(r"RECT ([^;]+);", r)}
    return [(pin.name, r) for pin in macro.signal_pins() for layer, r in pin.rects
            if layer == "met1" and tuple(round(v, 3) for v in r) not in seen]


def test_a_pins_met1_strap_stays_in_the_routers_view(pdk_paths, tmp_path: Path):
    """Two-way: xor2_4's X has an li1 access point and a 3 um met1 strap across the cell; the
    router's LEF reduces X to the access point, and the strap must stay there as an obstruction
    (left out, qrouter ran another net's met1 over it: an LVS short no repair round removed, on
    bench/designs/crc_lfsr). The same LEF with the strap's obstruction removed is caught."""
    from closer.physical.io.lef import read_macros
    from closer.physical.route.pinaccess import access_table, write_router_lef

    macros = read_macros(pdk_paths.cell_lef)
    name = "sky130_fd_sc_hd__xor2_4"
    table = access_table(macros, {name}, pdk_paths.gds)
    assert table[name]["X"] is not None
    strap = [r for layer, r in macros[name].pins["X"].rects if layer == "met1"]
    assert strap
    text = write_router_lef(macros, table, tmp_path / "cells.lef").read_text()
    assert _met1_hidden_from_router(macros[name], text) == []
    pin_x = text[text.index("  PIN X"):text.index("  END X")]
    assert "met1" not in pin_x  # X is its access point to the router, the strap an obstruction
    r = strap[0]
    hidden = text.replace(f"    LAYER met1 ;\n      RECT {r[0]:.3f} {r[1]:.3f} {r[2]:.3f} {r[3]:.3f} ;\n", "")
    assert _met1_hidden_from_router(macros[name], hidden) == [("X", r)]


# --- same-net notch fill (real KLayout on small layouts) ---------------------------------------

def _met3_gds(tmp: Path, boxes: list[tuple[int, int, int, int]], name: str) -> Path:
    import klayout.db as kdb

    layout = kdb.Layout()
    layout.dbu = 0.001
    top = layout.create_cell("top")
    met3 = layout.layer(70, 20)
    for box in boxes:
        top.shapes(met3).insert(kdb.Box(*box))
    path = tmp / name
    layout.write(str(path))
    return path


def _met3_layout(tmp: Path, extra: list[tuple[int, int, int, int]] = ()) -> Path:
    """A 0.3 um met3 wire between a 0.32 and a 0.33 um pad (the notch measured on gcd), nm."""
    return _met3_gds(tmp, [(0, 0, 320, 320), (320, 10, 425, 310), (425, -5, 755, 325), *extra], "notch.gds")


def test_notch_fill_makes_the_layout_clean(tmp_path: Path):
    from closer.physical.repair.cleanup import fill_notches
    from closer.physical.signoff.drc import run_drc

    gds = _met3_layout(tmp_path)
    assert run_drc(gds).counts["m3.2"] > 0          # the deck sees the notch
    assert fill_notches(gds) == {"met3": 2}
    assert run_drc(gds).total == 0


def test_notch_fill_never_comes_near_another_shape(tmp_path: Path):
    """Another polygon within the spacing of the notch: no fill (it could bridge two nets)."""
    from closer.physical.repair.cleanup import fill_notches
    from closer.physical.signoff.drc import run_drc

    gds = _met3_layout(tmp_path, extra=[(330, 500, 420, 800)])  # 0.19 um above the notch
    before = run_drc(gds).counts["m3.2"]
    fills = fill_notches(gds)
    assert fills.get("met3", 0) == 1                   # only the bottom notch is filled
    assert 0 < run_drc(gds).counts["m3.2"] < before


def _island(tmp: Path, extra: list[tuple[int, int, int, int]] = ()) -> Path:
    """A 0.46 x 0.33 um met3 island (a via-stack landing, 0.152 um^2 < m3.6's 0.24), nm."""
    return _met3_gds(tmp, [(0, 0, 460, 330), *extra], "island.gds")


def test_small_island_grows_to_minimum_area(tmp_path: Path):
    from closer.physical.repair.cleanup import fill_min_area
    from closer.physical.signoff.drc import run_drc

    gds = _island(tmp_path)
    assert run_drc(gds).counts["m3.6"] == 1
    assert fill_min_area(gds) == {"met3": 1}
    assert run_drc(gds).total == 0


def test_small_island_next_to_another_shape_is_left_alone(tmp_path: Path):
    from closer.physical.repair.cleanup import fill_min_area
    from closer.physical.signoff.drc import run_drc

    gds = _island(tmp_path, extra=[(800, 0, 2000, 330)])  # 0.34 um to the right: growing would violate m3.2
    assert fill_min_area(gds) == {}
    counts = run_drc(gds).counts
    assert counts["m3.6"] == 1 and counts["m3.2"] == 0


def test_repair_stops_at_its_cpu_budget(tmp_path: Path):
    first = _cand(tmp_path, 4)
    best, log = repair.repair(first, None, None, None, tmp_path,  # type: ignore[arg-type]
                              repair.RepairConfig(max_cpu_s=0.0))
    assert best is first and [e["result"] for e in log.rounds] == ["out of time"]
    before = procs.tree_cpu_s()
    sum(i * i for i in range(2_000_000))  # CPU work in this process counts
    assert procs.tree_cpu_s() > before


def test_best_pass_is_written_during_the_run(tmp_path: Path, pdk_paths):
    """Large designs take qrouter's best pass as written during the run instead of replaying
    the schedule: forced here on the counter with two layers (nets stay unrouted)."""
    from closer.physical import PhysicalConfig, run_physical
    from closer.physical.io.netlist import synthesize
    from closer.physical.route.route import RouteConfig

    netlist = synthesize([pdk_paths.root / "smoke" / "counter.v"], "counter", pdk_paths.liberty("tt_025C_1v80"),
                         tmp_path / "counter.v", tmp_path / "synth.log")
    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=5.0, corners=("tt_025C_1v80",),
                         route=RouteConfig(layers=2, max_passes=4, save_best_min_nets=1))
    result = run_physical(netlist, "counter", None, tmp_path / "phys", cfg, stop_after="Route")
    m = result.metrics
    passes = m["closer__route__passes"]
    assert m["closer__route__unrouted_nets"] == min(passes) > 0
    assert len(m["closer__route__failed_net_names"]) == min(passes)
    assert not list((tmp_path / "phys" / "route").glob("qrouter_capped*.log"))  # no replay
    assert m["closer__route__time_limited"] is False and len(passes) > 1
    # qrouter wrote the DEF more than once in this run (each new best, then the end): every net
    # it did not list as failed still has its wiring (upstream qrouter wrote only the routes
    # changed since the previous write_def; closer/physical/route/patches/qrouter-02-*)
    from closer.physical.io.defio import read_routed_nets
    from closer.physical.io.netlist import read_netlist

    nl = read_netlist(tmp_path / "phys" / "netlist.json", "counter")
    wired = {n for n, r in read_routed_nets(tmp_path / "phys" / "route" / "counter_route.def").items() if r.has_wiring}
    # (nets to IO pins are left out: the pins are on met2, which two layers do not reach)
    multi_pin = {n for n, terms in nl.nets.items() if len(terms) > 1 and all(i != "PIN" for i, _ in terms)}
    assert multi_pin - set(m["closer__route__failed_net_names"]) <= wired
    if min(passes) < passes[-1]:
        assert (tmp_path / "phys" / "route" / "best" / "best.def").is_file()


def test_pass_budget_stops_the_rip_up_schedule(tmp_path: Path, pdk_paths):
    """Two-way with the test above: with no time left after stage 1 no rip-up pass starts, the
    run still ends normally (qrouter writes its DEF) and says it was time-limited."""
    from closer.physical import PhysicalConfig, run_physical
    from closer.physical.io.netlist import synthesize
    from closer.physical.route.route import RouteConfig

    netlist = synthesize([pdk_paths.root / "smoke" / "counter.v"], "counter", pdk_paths.liberty("tt_025C_1v80"),
                         tmp_path / "counter.v", tmp_path / "synth.log")
    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=5.0, corners=("tt_025C_1v80",),
                         route=RouteConfig(layers=2, max_passes=4, save_best_min_nets=1, pass_budget_s=0))
    m = run_physical(netlist, "counter", None, tmp_path / "phys", cfg, stop_after="Route").metrics
    assert len(m["closer__route__passes"]) == 1 and m["closer__route__time_limited"] is True
    assert m["closer__route__unrouted_nets"] == m["closer__route__passes"][0] > 0
