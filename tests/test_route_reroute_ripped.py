"""route.reroute when qrouter's stage 2 rips up an `ignore`d net (recorded behaviour of qrouter
1.4.88: "Ripping up blocking net X" for a net it was told to ignore; its output DEF then carries no
wiring for X, since emit_routes skips ignored nets). The old wiring of X is stale (the rerouted net
now runs where it was), so it must not be kept: X comes out unrouted and listed as failed, which the
repair then reroutes. Measured on firdma small's first antenna round (2026-12-05): 45 ignored nets
ripped, 5 LVS shorts when their old wiring was kept. The qrouter run is replaced by its recorded
files; the splice is what is tested (the flow's repair tests run the real qrouter)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from closer.physical.route import route

BASE = """VERSION 5.8 ;
DESIGN t ;
UNITS DISTANCE MICRONS 1000 ;
DIEAREA ( 0 0 ) ( 10000 10000 ) ;
NETS 3 ;
- a
  ( u1 Y ) ( u2 A )
  + USE SIGNAL
  + ROUTED met1 ( 1000 1190 ) ( 5000 * ) ;
- b
  ( u3 Y ) ( u4 A )
  + USE SIGNAL
  + ROUTED met1 ( 1000 2550 ) ( 5000 * ) ;
- c
  ( u5 Y ) ( u6 A )
  + USE SIGNAL
  + ROUTED met1 ( 1000 3910 ) ( 5000 * ) ;
END NETS
SPECIALNETS 0 ;
END SPECIALNETS
END DESIGN
"""

# qrouter's output: `a` rerouted over b's old row; b ripped and c ignored, so neither has wiring
# (qrouter leaves an ignored net's entry without ROUTED and without its semicolon)
OUT = (BASE.replace("( 1000 1190 )", "( 1000 2550 )", 1)
       .replace("  + USE SIGNAL\n  + ROUTED met1 ( 1000 2550 ) ( 5000 * ) ;\n- c", "  + USE SIGNAL\n- c")
       .replace("  + USE SIGNAL\n  + ROUTED met1 ( 1000 3910 ) ( 5000 * ) ;\n", "  + USE SIGNAL\n"))


def _fake_qrouter(monkeypatch, log_text: str):
    def run(cmd, log, check=False):  # noqa: ARG001
        (log.parent / "rerouted.def").write_text(OUT)
        (log.parent / "rerouted.rc").write_text("a 1\n")
        log.write_text(log_text)
        return SimpleNamespace(log=log)

    monkeypatch.setattr(route, "qrouter_binary", lambda: Path("qrouter"))
    monkeypatch.setattr(route, "_script", lambda *a, **k: "")
    monkeypatch.setattr(route, "run", run)


def _reroute(tmp_path: Path):
    base = tmp_path / "t_route.def"
    base.write_text(BASE)
    rc = tmp_path / "t.rc"
    rc.write_text("a 0\nb 0\nc 0\n")
    work = tmp_path / "r"
    work.mkdir()
    layout = SimpleNamespace(top="t")
    merged, _, failed = route.reroute(Path("tech.lef"), Path("cells.lef"), base, rc, layout, work,
                                      route.RouteConfig(), {"a"}, [])
    return merged.read_text(), failed


def test_a_ripped_ignored_net_is_not_kept_with_its_stale_wiring(tmp_path, monkeypatch):
    _fake_qrouter(monkeypatch, "Best route of a collides with net: b\nRipping up blocking net b\nCLOSER_FINAL 0\n")
    text, failed = _reroute(tmp_path)
    assert "( 1000 2550 )" in text.split("- b")[0]          # a's new wiring
    b = text.split("- b")[1].split("- c")[0]
    assert "ROUTED" not in b and failed == ["b"]              # b: old wiring gone, reported unrouted
    assert b.rstrip().endswith(";")                           # a well-formed entry (qrouter's has no ';')
    assert "( 1000 3910 )" in text.split("- c")[1]           # c kept as it was


def test_without_a_rip_up_the_ignored_nets_keep_their_wiring(tmp_path, monkeypatch):
    _fake_qrouter(monkeypatch, "CLOSER_FINAL 0\n")
    text, failed = _reroute(tmp_path)
    assert "( 1000 2550 )" in text.split("- b")[1].split("- c")[0] and failed == []


def test_a_ripped_net_the_new_wiring_does_not_touch_keeps_its_wiring(tmp_path, monkeypatch):
    """qrouter routed the ripped net again in memory (not written): where the rerouted nets' new
    wiring stays off its old wiring, that wiring is still valid and kept."""
    _fake_qrouter(monkeypatch, "Ripping up blocking net c\nCLOSER_FINAL 0\n")
    text, failed = _reroute(tmp_path)
    assert "( 1000 3910 )" in text.split("- c")[1] and failed == []


def test_net_spans_and_stale_nets():
    """Centre-line boxes per layer, a via on both of its layers; touching on one layer is stale."""
    text = BASE.replace("( 5000 * ) ;\n- b", "( 5000 * ) M1M2_PR\n    NEW met2 ( 5000 1190 ) ( * 2550 ) ;\n- b")
    spans = route.net_spans(text, {"a"})["a"]
    assert (1000, 1190, 5000, 1190) in spans["met1"] and (5000, 1190, 5000, 1190) in spans["met2"]
    assert (5000, 1190, 5000, 2550) in spans["met2"]
    # a's met2 ends above b's met1 wire: another layer, not stale; a via down there lands on it
    assert route.stale_nets(BASE, text, {"b", "c"}, {"a"}) == set()
    down = text.replace("( * 2550 ) ;", "( * 2550 ) M1M2_PR ;")
    assert (5000, 2550, 5000, 2550) in route.net_spans(down, {"a"})["a"]["met1"]
    assert route.stale_nets(BASE, down, {"b", "c"}, {"a"}) == {"b"}
