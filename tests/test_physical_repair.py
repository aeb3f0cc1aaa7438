"""The search-and-repair step (closer.physical.repair) and the router-access dont-use list.

DEF surgery is tested on small texts; the loop's acceptance rule on fake candidates (a worse
round is never kept); the real tools run in tests/test_flow_pnr.py (gcd signs off clean) and
below (the dont-use list agrees with the pin-access analysis of the cell GDS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from closer.physical import repair
from closer.physical.drc import DrcResult
from closer.physical.lvs import LvsResult

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
    d = DrcResult({"m1.2": drc_total}, boxes={"m1.2": [(0.0, 0.0, 0.1, 0.1)] * drc_total})
    v = LvsResult(shorts == 0, [], [{"nets": ["x", "y"], "terminals": []}] * shorts, 0, 0, 0.0)
    return repair.Candidate(tmp / "r.def", tmp / "r.rc", list(failed), tmp / "f.def", tmp / "t.gds", d, v)


@pytest.mark.parametrize("outcomes, expected_problems, kept", [
    ([3, 5, 0], 0, 2),        # better, worse (discarded), clean
    ([9, 9, 9, 9, 9, 9], 4, 0),  # never better: the first layout stays, every strategy tried once
    ([2, 1, 0], 0, 3),
])
def test_repair_keeps_only_strictly_better_rounds(tmp_path: Path, outcomes, expected_problems, kept):
    first = _cand(tmp_path, 4)
    results = iter(outcomes)
    seen = []

    def reroute(base, nets, before, rdir):
        seen.append((base.problems, sorted(nets), len(before)))
        return rdir / "r.def", rdir / "r.rc", []

    def signoff(routed_def, rc, failed, rdir):
        return _cand(rdir, next(results))

    best, log = repair.repair(first, reroute, signoff, lambda c, grow: {"n1"}, tmp_path,
                              repair.RepairConfig(rounds=8))
    assert best.problems == expected_problems
    assert sum(1 for e in log.rounds if e["result"] == "kept") == kept
    assert all(e["after"] >= e["before"] for e in log.rounds if e["result"] == "discarded")
    # every reroute starts from the best layout so far
    best_so_far = 4
    for (base, _, _), entry in zip(seen, log.rounds):
        assert base == best_so_far
        if entry["result"] == "kept":
            best_so_far = entry["after"]


def test_repair_does_nothing_on_a_clean_layout(tmp_path: Path):
    first = _cand(tmp_path, 0)
    best, log = repair.repair(first, None, None, None, tmp_path, repair.RepairConfig())  # type: ignore[arg-type]
    assert best is first and log.rounds == []


def test_unrouted_nets_count_more_than_violations(tmp_path: Path):
    assert _cand(tmp_path, 0, failed=("n",)).problems > _cand(tmp_path, 9).problems


# --- the dont-use list against the real cell GDS ------------------------------------------------

def _router_section() -> list[str]:
    from closer.flow.platform import platform_dir

    text = (platform_dir("sky130hd") / "dont_use.txt").read_text()
    section = text[text.index("# cells with a signal pin"):]
    lines = (line.split("#", 1)[0].strip() for line in section.splitlines())
    return [line for line in lines if line]


def test_listed_cells_are_exactly_inaccessible(pdk_paths):
    """Two-way: every listed cell has a pin without access (the KLayout analysis of the cell GDS
    says so), and cells synthesis keeps using have access on every pin."""
    from closer.physical.lef import read_macros
    from closer.physical.pinaccess import inaccessible_masters

    macros = read_macros(pdk_paths.cell_lef)
    listed = _router_section()
    assert "sky130_fd_sc_hd__a222oi_1" in listed and len(listed) == len(set(listed))
    found = inaccessible_masters(macros, pdk_paths.gds, listed)
    assert sorted(found) == sorted(listed)
    kept = ["sky130_fd_sc_hd__dfxtp_1", "sky130_fd_sc_hd__nand2_1", "sky130_fd_sc_hd__a221oi_1",
            "sky130_fd_sc_hd__mux2_1", "sky130_fd_sc_hd__inv_2", "sky130_fd_sc_hd__xor2_1"]
    assert inaccessible_masters(macros, pdk_paths.gds, kept) == {}
