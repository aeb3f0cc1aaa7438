"""route.reroute when qrouter's stage 2 rips up an `ignore`d net ("Ripping up blocking net X"):
upstream 1.4.88 then routes X again but writes no wiring for it (emit_routes skips ignored nets),
so the old wiring the splice kept ran under the new routes (firdma small's first antenna round,
2026-12-05: 45 ignored nets ripped, 5 LVS shorts). Closer's qrouter patch "release" makes X an
ordinary net once ripped ("Released ignored net X"): qrouter writes its new wiring, and the splice
takes it. The qrouter run is replaced by recorded-shape files; the splice is what is tested (the
real qrouter: tests/test_physical.py::test_a_reroute_writes_each_kept_net_it_ripped_up)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from closer.errors import ToolError
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

# qrouter's output: `a` rerouted over b's old row, b (released) routed again on a new row; c
# ignored, so without wiring (qrouter leaves an ignored net's entry without ROUTED)
OUT = (BASE.replace("( 1000 1190 )", "( 1000 2550 )", 1)
       .replace("  + ROUTED met1 ( 1000 2550 ) ( 5000 * ) ;\n- c", "  + ROUTED met1 ( 1000 5270 ) ( 5000 * ) ;\n- c")
       .replace("  + USE SIGNAL\n  + ROUTED met1 ( 1000 3910 ) ( 5000 * ) ;\n", "  + USE SIGNAL\n"))


def _fake_qrouter(monkeypatch, log_text: str):
    seen = {}

    def run(cmd, log, check=False):  # noqa: ARG001
        seen["env"] = cmd.env
        (log.parent / "rerouted.def").write_text(OUT)
        (log.parent / "rerouted.rc").write_text("a 1\nb 1\n")
        log.write_text(log_text)
        return SimpleNamespace(log=log)

    monkeypatch.setattr(route, "qrouter_binary", lambda: Path("qrouter"))
    monkeypatch.setattr(route, "_script", lambda *a, **k: "")
    monkeypatch.setattr(route, "run", run)
    return seen


def _reroute(tmp_path: Path, patch: str | None = "keepout,tracks"):
    base = tmp_path / "t_route.def"
    base.write_text(BASE)
    rc = tmp_path / "t.rc"
    rc.write_text("a 0\nb 0\nc 0\n")
    work = tmp_path / "r"
    work.mkdir()
    layout = SimpleNamespace(top="t")
    merged, _, failed = route.reroute(Path("tech.lef"), Path("cells.lef"), base, rc, layout, work,
                                      route.RouteConfig(), {"a"}, [], patch)
    return merged.read_text(), failed, work


def test_a_released_net_is_taken_with_its_new_wiring(tmp_path, monkeypatch):
    seen = _fake_qrouter(monkeypatch, "Ripping up blocking net b\nReleased ignored net b\nCLOSER_FINAL 0\n")
    text, failed, work = _reroute(tmp_path)
    assert seen["env"][route.PATCH_ENV] == "keepout,tracks,release"   # whatever parts routed the layout
    assert "( 1000 2550 )" in text.split("- b")[0]                      # a's new wiring
    b = text.split("- b")[1].split("- c")[0]
    assert "( 1000 5270 )" in b and "( 1000 2550 )" not in b and failed == []  # b's new wiring only
    assert "( 1000 3910 )" in text.split("- c")[1]                     # c kept as it was
    assert json.loads((work / "released.json").read_text()) == {"released": ["b"]}


def test_without_a_rip_up_the_ignored_nets_keep_their_wiring(tmp_path, monkeypatch):
    _fake_qrouter(monkeypatch, "CLOSER_FINAL 0\n")
    text, failed, work = _reroute(tmp_path)
    assert "( 1000 2550 )" in text.split("- b")[1].split("- c")[0] and failed == []
    assert json.loads((work / "released.json").read_text()) == {"released": []}


def test_a_kept_net_ripped_without_release_is_an_error(tmp_path, monkeypatch):
    """A qrouter without the part (an old build) would drop b's new wiring: refused, not spliced."""
    _fake_qrouter(monkeypatch, "Ripping up blocking net b\nCLOSER_FINAL 0\n")
    with pytest.raises(ToolError, match="ripped up 1 kept nets without releasing them"):
        _reroute(tmp_path)


@pytest.mark.parametrize("patch, others, expected", [
    ("keepout,tracks", route.RELEASE, "keepout,tracks,release"), ("keepout,tracks", route.HOLD, "keepout,tracks,hold"),
    ("off", route.RELEASE, "release"), ("on", route.HOLD, "keepout,tracks,reserve,hold"),
    ("reserve,release", route.HOLD, "reserve,hold"), ("keepout,hold", route.RELEASE, "keepout,release")])
def test_reroute_parts(patch, others, expected):
    assert route.reroute_parts(patch, others) == expected


def test_reroute_parts_from_the_environment(monkeypatch):
    monkeypatch.setenv(route.PATCH_ENV, "tracks")
    assert route.reroute_parts(None, route.HOLD) == "tracks,hold"
    monkeypatch.delenv(route.PATCH_ENV)
    assert route.reroute_parts(None, route.RELEASE) == "keepout,tracks,reserve,release"
    with pytest.raises(ValueError, match="neither"):
        route.reroute_parts("on", "rip")


def test_a_held_reroute_asks_qrouter_to_hold(tmp_path, monkeypatch):
    seen = _fake_qrouter(monkeypatch, "CLOSER_FINAL 0\n")
    base = tmp_path / "t_route.def"
    base.write_text(BASE)
    (tmp_path / "t.rc").write_text("a 0\nb 0\nc 0\n")
    (tmp_path / "r").mkdir()
    route.reroute(Path("tech.lef"), Path("cells.lef"), base, tmp_path / "t.rc", SimpleNamespace(top="t"),
                  tmp_path / "r", route.RouteConfig(), {"a"}, [], "keepout,tracks", kept_nets=route.HOLD)
    assert seen["env"][route.PATCH_ENV] == "keepout,tracks,hold"


def test_a_reroute_follows_the_guides_it_is_given_and_no_others(tmp_path, monkeypatch):
    """The full route's guides reach qrouter's stage 1 (patch 03) when the caller passes them (the
    incremental reroutes of closer.physical.steps pass the Route step's); else the variable is empty,
    whatever the caller's environment holds."""
    seen = _fake_qrouter(monkeypatch, "CLOSER_FINAL 0\n")
    monkeypatch.setenv(route.GUIDES_ENV, "/elsewhere/guides.txt")
    base = tmp_path / "t_route.def"
    base.write_text(BASE)
    (tmp_path / "t.rc").write_text("a 0\nb 0\nc 0\n")
    guides = tmp_path / "guides.txt"
    for folder, given, expected in (("g", guides, str(guides)), ("n", None, "")):
        (tmp_path / folder).mkdir()
        route.reroute(Path("tech.lef"), Path("cells.lef"), base, tmp_path / "t.rc", SimpleNamespace(top="t"),
                      tmp_path / folder, route.RouteConfig(), {"a"}, [], "on", kept_nets=route.HOLD, guides=given)
        assert seen["env"][route.GUIDES_ENV] == expected
