"""qrouter never routes outside the die (route.outside_die), with the real qrouter.

qrouter 1.4.88 sizes its grid from the DEF's TRACKS as reaching one pitch past each layer's last
track and from the widest layer, so it has tracks beyond the die's top and right edges. A reroute
without guides used them on PicoRV32 (wires above the die, 0.1 um from the top-edge IO pins: m2.2).

The layout here: two buffers in a 20 x 20.06 um die, split by a wall on every layer from below the
die to its top edge. The only connection runs above the die: qrouter takes it without the outside
band and must leave the net unrouted with it.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from closer.pdk import pdk
from closer.physical.route import route
from closer.procs import Command, run

W, H = 20000, 20060  # DEF units; the met1/met2 grid's last row inside is y = 19890, the next 20230
LAYERS = ("li1", "met1", "met2", "met3", "met4", "met5")

SPLIT_DEF = f"""VERSION 5.8 ;
DIVIDERCHAR "/" ;
BUSBITCHARS "[]" ;
DESIGN t ;
UNITS DISTANCE MICRONS 1000 ;
DIEAREA ( 0 0 ) ( {W} {H} ) ;
TRACKS X 230 DO 43 STEP 460 LAYER li1 ;
TRACKS Y 170 DO 59 STEP 340 LAYER met1 ;
TRACKS X 230 DO 43 STEP 460 LAYER met2 ;
TRACKS Y 340 DO 29 STEP 680 LAYER met3 ;
TRACKS X 460 DO 21 STEP 920 LAYER met4 ;
TRACKS Y 1700 DO 6 STEP 3400 LAYER met5 ;
COMPONENTS 2 ;
- u sky130_fd_sc_hd__buf_1 + PLACED ( 14720 17340 ) N ;
- v sky130_fd_sc_hd__buf_1 + PLACED ( 3680 17340 ) N ;
END COMPONENTS
PINS 0 ;
END PINS
SPECIALNETS 0 ;
END SPECIALNETS
NETS 1 ;
- n
  ( v X ) ( u A )
  + USE SIGNAL ;
END NETS
END DESIGN
"""


def _route_split(work: Path, outside: bool) -> tuple[list[tuple[int, int]], str]:
    """qrouter on SPLIT_DEF (route._script, one rip-up pass), with or without the outside band;
    returns the routed net's points and the log."""
    p = pdk()
    work.mkdir(parents=True)
    (work / "t.def").write_text(SPLIT_DEF)
    layout = SimpleNamespace(die_w=W, die_h=H, top="t")
    wall = [f"obstruction 9.5 -1 10.5 {H / 1000:.3f} {layer}" for layer in LAYERS]
    tcl = route._script(p.tech_lef, p.cell_lef, work / "t.def", work / "out.def", work / "out.rc", layout,
                        route.RouteConfig(), 1, before_read=wall)
    band = set(route.outside_die(layout, list(LAYERS)))
    assert band <= set(tcl.splitlines())
    if not outside:
        tcl = "".join(line + "\n" for line in tcl.splitlines() if line not in band)
    (work / "t.tcl").write_text(tcl)
    done = run(Command([str(route.qrouter_binary()), "-noc", "-nog", "-s", str(work / "t.tcl")], cwd=work,
                       timeout_s=120, env=route._qrouter_env(None, None, 0)), work / "q.log", check=False)
    out = (work / "out.def").read_text()
    nets = out[out.index("\nNETS"):out.index("END NETS")]
    points = [(int(x), int(y)) for x, y in re.findall(r"\( (\d+) (\d+) \)", nets)]
    return points, done.log.read_text()


@pytest.mark.slow
def test_qrouter_leaves_a_net_unrouted_rather_than_route_it_outside_the_die(tmp_path: Path):
    if not route.have_qrouter():
        pytest.fail("qrouter 1.4.88 not built: run scripts/build-qrouter.sh")
    # without the band: qrouter's grid runs past the die, and the net goes over the wall's top
    points, _ = _route_split(tmp_path / "without", outside=False)
    assert points and max(y for _, y in points) > H
    # with it (what every Closer route and reroute runs): nothing outside, the net is left failed
    points, _ = _route_split(tmp_path / "with", outside=True)
    assert all(0 <= x <= W and 0 <= y <= H for x, y in points)
    assert route.failed_nets(tmp_path / "with" / "q.log") == ["n"]


def test_the_outside_band_surrounds_the_die_on_every_layer_and_leaves_the_inside_free():
    layout = SimpleNamespace(die_w=W, die_h=H)
    lines = route.outside_die(layout, ["met1", "met2"])
    assert len(lines) == 8
    for line in lines:
        _, x1, y1, x2, y2, layer = line.split()
        x1, y1, x2, y2 = map(float, (x1, y1, x2, y2))
        assert layer in ("met1", "met2")
        # each box touches the die at most along its edge
        assert x2 <= 0 or x1 >= W / 1000 or y2 <= 0 or y1 >= H / 1000
    boxes = [tuple(map(float, line.split()[1:5])) for line in lines[:4]]
    m = route.OUTSIDE_DIE_UM
    for px, py in ((-m / 2, 5.0), (W / 1000 + m / 2, 5.0), (5.0, -m / 2), (5.0, H / 1000 + m / 2),
                   (-m / 2, -m / 2), (W / 1000 + m / 2, H / 1000 + m / 2)):
        assert any(x1 <= px <= x2 and y1 <= py <= y2 for x1, y1, x2, y2 in boxes), (px, py)
