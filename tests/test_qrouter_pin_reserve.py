"""What closer/physical/route/patches/qrouter-via-pin-reserve.patch fixes, with the real patched qrouter.

A pin qrouter sees as one li1 square (closer.physical.route.pinaccess, hybrid mode: the pin's only
legal on-grid via spot) can only be reached by an L1M1 via on that tap, so that via's met1 pad is
certain before its net is routed. The via keep-out (qrouter-via-keepout.patch) knew a via pad only
once a net had routed it: a net routed earlier put its via on the met1 row next to such a tap (0.34
um apart, where two via pads break m1.2), and the pin's own via was then refused in stage 1 or
fought over by rip-up in stage 2. With the reserve part no via of another net lands there.

The placement is the weak gcd of task B as the flow places it (401 cells, density 0.30,
`tests/fixtures/qrouter_patch/weak_gcd_placed.def`); qrouter gets the flow's pin-access cell LEF,
derived here from the PDK's LEF and GDS. Stage 1 only (a few seconds of qrouter per column).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from closer.paths import repo_paths
from closer.physical.io.lef import read_macros
from closer.physical.route import pinaccess
from closer.physical.route.route import qrouter_binary
from closer.procs import Command, run
from tests.test_qrouter_patch import ROUTE_TCL as KEEPOUT_TCL

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).parent / "fixtures" / "qrouter_patch" / "weak_gcd_placed.def"
PATCH = repo_paths().root / "closer" / "physical" / "route" / "patches" / "qrouter-via-pin-reserve.patch"
MET1_PITCH_NM = 340
WITHOUT, WITH = "keepout,tracks", "on"

# the same qrouter settings as the keep-out's test, stage 1 only
ROUTE_TCL = KEEPOUT_TCL.split("set result")[0] + 'puts "CLOSER_STAGE1 [stage1]"\nwrite_def {def_out}\nquit\n'

COMPONENT = re.compile(r"^- (\S+) (\S+) \+ (?:PLACED|FIXED) \( (-?\d+) (-?\d+) \) (\S+) ;", re.M)
POINT = re.compile(r"\(\s*(-?\d+|\*)\s+(-?\d+|\*)(?:\s+-?\d+)?\s*\)")
MET1_VIA = re.compile(r"\b(?:L1M1|M1M2)_PR\w*\s*;?\s*$")


def _nets(def_text: str) -> dict[tuple[str, str], str]:
    """(instance, pin) -> net, from the NETS section."""
    section = def_text[def_text.index("\nNETS "):def_text.index("END NETS")]
    out = {}
    for block in re.split(r"\n(?=- )", section)[1:]:
        net = block.split()[1]
        for inst, pin in re.findall(r"\(\s*(\S+)\s+(\S+)\s*\)", block.split("+ ROUTED")[0]):
            if inst != "PIN":
                out[(inst, pin)] = net
    return out


def single_tap_pins(def_text: str, macros, table) -> dict[tuple[int, int], str]:
    """Die point (nm) -> net of every pin qrouter sees as a single li1 tap."""
    nets = _nets(def_text)
    out = {}
    for inst, master, x, y, orient in COMPONENT.findall(def_text):
        height = round(macros[master].height * 1000)
        for pin, ap in table.get(master, {}).items():
            if ap is None or len(ap.on_grid) != 1 or (inst, pin) not in nets:
                continue
            sx, sy = ap.on_grid[0]
            out[(int(x) + sx, int(y) + (sy if orient == "N" else height - sy))] = nets[(inst, pin)]
    return out


def _via_points(block: str) -> list[tuple[int, int]]:
    """Where a net's routing has an L1M1 or M1M2 via (the last point of its statement, `*` resolved)."""
    out = []
    for statement in re.split(r"\bNEW\b|\+ ROUTED", block)[1:]:
        last: tuple[int, int] | None = None
        for x, y in POINT.findall(statement):
            if last is None and "*" in (x, y):
                break
            last = (last[0] if x == "*" else int(x), last[1] if y == "*" else int(y))
        if last is not None and MET1_VIA.search(statement):
            out.append(last)
    return out


def vias_next_to_other_nets_pins(routed_def: Path, pins: dict[tuple[int, int], str]) -> list[tuple[str, str]]:
    """(via net, pin net) for every L1M1/M1M2 via on the met1 row right above or below another
    net's single-tap pin (same column): the via-pad pair m1.2 forbids, or a pin left unreachable."""
    text = routed_def.read_text()
    section = text[text.index("\nNETS "):text.index("END NETS")]
    found = []
    for block in re.split(r"\n(?=- )", section)[1:]:
        net = block.split()[1]
        for x, y in _via_points(block):
            for dy in (-MET1_PITCH_NM, MET1_PITCH_NM):
                other = pins.get((x, y + dy))
                if other is not None and other != net:
                    found.append((net, other))
    return found


def fixture_router_lef(work: Path, pdk_paths):
    """The PDK's cells, their pin-access table and the router cell LEF for FIXTURE's masters."""
    macros = read_macros(pdk_paths.cell_lef)
    masters = {m for _, m, *_ in COMPONENT.findall(FIXTURE.read_text())}
    table = pinaccess.access_table(macros, masters, pdk_paths.gds, work / "pin_access.json")
    return macros, table, pinaccess.write_router_lef(macros, table, work / "router_cells.lef")


@pytest.fixture(scope="module")
def routed(tmp_path_factory, pdk_paths):
    binary = qrouter_binary()
    library = binary.parent.parent / "share" / "qrouter" / "qrouter.so"
    if b"reserve" not in library.read_bytes():
        pytest.fail(f"qrouter at {binary} was built without {PATCH.name}: rerun scripts/build-qrouter.sh")
    work = tmp_path_factory.mktemp("pin_reserve")
    macros, table, cell_lef = fixture_router_lef(work, pdk_paths)
    out = {"pins": single_tap_pins(FIXTURE.read_text(), macros, table)}
    for parts in (WITHOUT, WITH):
        folder = work / parts.replace(",", "_")
        folder.mkdir()
        script = folder / "route.tcl"
        script.write_text(ROUTE_TCL.format(tlef=pdk_paths.tech_lef, cell_lef=cell_lef, def_in=FIXTURE,
                                           def_out=folder / "routed.def"))
        done = run(Command([str(binary), "-noc", "-nog", "-s", str(script)], cwd=folder,
                           env={"QROUTER_CLOSER_PATCH": parts}, timeout_s=300), folder / "qrouter.log")
        failed = re.findall(r"^CLOSER_STAGE1 (\d+)", done.log.read_text(), re.M)
        assert failed and (folder / "routed.def").is_file(), f"qrouter wrote no result; see {done.log}"
        out[parts] = (folder / "routed.def", int(failed[-1]))
    return out


def test_patch_file_is_a_p1_patch_applied_after_the_keepout():
    text = PATCH.read_text()
    assert re.findall(r"^\+\+\+ b/(\S+)", text, re.M) == ["maze.c", "node.c", "node.h"]
    assert "CLOSER_RESERVE" in text and "next_to_reserved_pin" in text
    names = sorted(p.name for p in PATCH.parent.glob("qrouter-*.patch"))
    assert names.index(PATCH.name) > names.index("qrouter-via-keepout.patch")  # it edits the keep-out's code


def test_the_fixture_has_single_tap_pins(routed):
    assert len(routed["pins"]) > 100


def test_without_reserve_vias_land_next_to_single_tap_pins(routed):
    """The check sees the defect with the part switched off (the keep-out alone)."""
    assert len(vias_next_to_other_nets_pins(routed[WITHOUT][0], routed["pins"])) > 0


def test_with_reserve_no_via_lands_next_to_another_nets_single_tap_pin(routed):
    assert vias_next_to_other_nets_pins(routed[WITH][0], routed["pins"]) == []


def test_reserve_leaves_far_fewer_nets_unrouted_after_stage1(routed):
    """Measured on this placement: 96 failed nets after stage 1 without, 53 with."""
    assert routed[WITH][1] < 0.75 * routed[WITHOUT][1]


def test_check_flags_an_injected_via_next_to_a_pin(routed, tmp_path):
    """Two-way: an M1M2 via of another net moved onto the row above a single-tap pin is caught."""
    (x, y), net = next(iter(sorted(routed["pins"].items())))
    text = routed[WITH][0].read_text()
    end = text.index("END NETS")
    injected = tmp_path / "injected.def"
    injected.write_text(text[:end] + f"- other_net\n  + ROUTED met1 ( {x} {y + MET1_PITCH_NM} ) M1M2_PR ;\n" + text[end:])
    assert ("other_net", net) in vias_next_to_other_nets_pins(injected, routed["pins"])
