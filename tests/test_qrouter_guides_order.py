"""qrouter patches 03 (global-route guides) and 04 (net order), with the real patched qrouter.

Patch 03: `$QROUTER_CLOSER_GUIDES` names a file of per-net rectangles (closer.physical.route.groute
writes it); in stage 1 a net with a guide is searched inside it, the mask growing by one track per
pass. Two-way on the weak gcd's placement (the pin-reserve test's fixture): a net that stage 1
routes without guides still routes with a guide over its pins, and fails when its only guide is
far from its pins. Patch 04: `$QROUTER_CLOSER_ORDER=1` routes the nets with the narrowest
bounding box first instead of those with the most pins first. Stage 1 only, a few seconds each.
"""

from __future__ import annotations

import re

import pytest

from closer.paths import repo_paths
from closer.physical.route.route import GUIDES_ENV, ORDER_ENV, qrouter_binary
from closer.procs import Command, run
from tests.test_qrouter_pin_reserve import COMPONENT, FIXTURE, ROUTE_TCL as RESERVE_TCL, fixture_router_lef

pytestmark = pytest.mark.slow

PATCHES = repo_paths().root / "closer" / "physical" / "route" / "patches"
# stage 1, then the nets it left, one per line
STAGE1_TCL = RESERVE_TCL.replace('write_def {def_out}\n', 'puts "CLOSER_FAILING [failing]"\n')


@pytest.fixture(scope="module")
def setup(tmp_path_factory, pdk_paths):
    binary = qrouter_binary()
    library = binary.parent.parent / "share" / "qrouter" / "qrouter.so"
    if b"QROUTER_CLOSER_GUIDES" not in library.read_bytes() or b"QROUTER_CLOSER_ORDER" not in library.read_bytes():
        pytest.fail(f"qrouter at {binary} was built without patches 03/04: rerun scripts/build-qrouter.sh")
    work = tmp_path_factory.mktemp("guides")
    macros, _, cell_lef = fixture_router_lef(work, pdk_paths)
    return binary, cell_lef, work, macros


def _stage1(setup, pdk_paths, tag: str, env: dict[str, str]) -> tuple[set[str], str]:
    binary, cell_lef, work, _ = setup
    folder = work / tag
    folder.mkdir()
    script = folder / "route.tcl"
    script.write_text(STAGE1_TCL.format(tlef=pdk_paths.tech_lef, cell_lef=cell_lef, def_in=FIXTURE, def_out=""))
    done = run(Command([str(binary), "-noc", "-nog", "-s", str(script)], cwd=folder,
                       env={"QROUTER_CLOSER_PATCH": "on", **env}, timeout_s=300), folder / "qrouter.log")
    log = done.log.read_text(errors="replace")
    failing = re.search(r"^CLOSER_FAILING (.*)$", log, re.M)
    assert failing, f"qrouter did not finish stage 1; see {done.log}"
    return set(failing.group(1).split()), log


def _two_pin_nets(def_text: str) -> dict[str, list[str]]:
    section = def_text[def_text.index("\nNETS "):def_text.index("END NETS")]
    out = {}
    for block in re.split(r"\n(?=- )", section)[1:]:
        terms = re.findall(r"\(\s*(\S+)\s+(\S+)\s*\)", block)
        if len(terms) == 2 and all(inst != "PIN" for inst, _ in terms):
            out[block.split()[1]] = [inst for inst, _ in terms]
    return out


def _box(def_text: str, instances: list[str]) -> tuple[float, float, float, float]:
    where = {name: (int(x) / 1000, int(y) / 1000) for name, _, x, y, _ in COMPONENT.findall(def_text)}
    xs, ys = [where[i][0] for i in instances], [where[i][1] for i in instances]
    return min(xs) - 5, min(ys) - 5, max(xs) + 10, max(ys) + 8


def test_patch_files_apply_in_order():
    names = sorted(p.name for p in PATCHES.glob("qrouter-*.patch"))
    assert names.index("qrouter-03-guide-mask.patch") < names.index("qrouter-04-net-order.patch")
    guide = (PATCHES / "qrouter-03-guide-mask.patch").read_text()
    assert re.findall(r"^\+\+\+ b/(\S+)", guide, re.M) == ["mask.c", "mask.h", "qrouter.c"]
    assert GUIDES_ENV in guide and ORDER_ENV in (PATCHES / "qrouter-04-net-order.patch").read_text()


def test_a_guide_is_honoured_two_way(setup, pdk_paths):
    free, _ = _stage1(setup, pdk_paths, "free", {})
    def_text = FIXTURE.read_text()
    routed = sorted(n for n in _two_pin_nets(def_text) if n not in free)
    assert routed, "no two-pin net routed in stage 1 without guides"
    instances = _two_pin_nets(def_text)
    nets = routed[:5]
    near = setup[2] / "near.txt"
    near.write_text("".join(f"{n} {' '.join(f'{v:.3f}' for v in _box(def_text, instances[n]))}\n" for n in nets))
    guided, log = _stage1(setup, pdk_paths, "near", {GUIDES_ENV: str(near)})
    assert f"closer guides: {len(nets)} nets of {len(nets)} lines" in log
    assert not set(nets) & guided  # inside a guide over their pins they still route
    far = setup[2] / "far.txt"  # a guide in the die's far corner from each net's pins
    lines = []
    for n in nets:
        x1, y1, x2, y2 = _box(def_text, instances[n])
        fx = 0.0 if x1 > 60 else 100.0
        fy = 0.0 if y1 > 60 else 100.0
        lines.append(f"{n} {fx:.3f} {fy:.3f} {fx + 5:.3f} {fy + 5:.3f}\n")
    far.write_text("".join(lines))
    misled, _ = _stage1(setup, pdk_paths, "far", {GUIDES_ENV: str(far)})
    assert set(nets) <= misled  # a guide away from its pins leaves the net unrouted in stage 1


def test_net_order_1_routes_the_narrow_nets_first(setup, pdk_paths):
    _, default_log = _stage1(setup, pdk_paths, "order0", {})
    _, narrow_log = _stage1(setup, pdk_paths, "order1", {ORDER_ENV: "1"})
    first = [re.findall(r"^netname = (\S+), route number", log, re.M) for log in (default_log, narrow_log)]
    order0, order1 = (list(dict.fromkeys(f)) for f in first)
    assert sorted(order0) == sorted(order1) and order0 != order1
    pins = {}
    section = FIXTURE.read_text()
    section = section[section.index("\nNETS "):section.index("END NETS")]
    for block in re.split(r"\n(?=- )", section)[1:]:
        pins[block.split()[1]] = len(re.findall(r"\(\s*\S+\s+\S+\s*\)", block))
    most = max(pins[n] for n in order0)
    assert pins[order0[0]] == most  # upstream: the net with the most pins first
    assert pins[order1[0]] < most   # method 1: a narrow one
