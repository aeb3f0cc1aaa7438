"""What closer/physical/route/patches/qrouter-via-keepout.patch fixes, shown with the real patched qrouter.

The patched binary honours QROUTER_CLOSER_PATCH (off | keepout | tracks | on, default on), so one
binary routes the same placed counter both ways. The checks run in KLayout on the routed geometry:

* class (a): met1 pads of vias of *different* nets closer than m1.2 (0.14 um): an L1M1 pad and an
  M1M2 pad on adjacent 0.34 um met1 tracks are 0.095 um apart;
* class (b): met3 of different nets closer than m3.2 (0.3 um): M2M3/M3M4 stacks on the 0.34 um
  rows between the 0.68 um met3 tracks;
* the full-chip m1.2 / m3.2 counts of the GDS (routes + the cells' own GDS).

The binary is `$CLOSER_QROUTER_PREFIX/bin/qrouter` (default `.venv/opt/qrouter`, where
scripts/build-qrouter.sh installs it); the tests skip, saying why, when it lacks the patch.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from pathlib import Path

import pytest

from closer.paths import repo_paths
from closer.physical.io.lef import Tech, read_tech
from closer.procs import Command, run

db = pytest.importorskip("klayout.db")

FIXTURE = Path(__file__).parent / "fixtures" / "qrouter_patch" / "counter8.def"
PATCH = repo_paths().root / "closer" / "physical" / "route" / "patches" / "qrouter-via-keepout.patch"
PATCH_MARKER = b"QROUTER_CLOSER_PATCH"  # the getenv() name, present only in a patched build
M1_SPACE_NM, M3_SPACE_NM = 140, 300  # SKY130 m1.2 and m3.2
STAGE2_PASSES = 3

ROUTE_TCL = """read_lef {tlef}
read_lef {cell_lef}
catch {{layers 5}}
via stack all
via use L1M1_PR M1M2_PR M2M3_PR M3M4_PR M4M5_PR
vdd VPWR
gnd VGND
read_def {def_in}
set result [stage1]
puts stdout "CLOSER_PASS 0 failed $result"
for {{set i 1}} {{$i <= {passes} && $result > 0}} {{incr i}} {{
    set result [stage2 mask [expr {{10 * $i}}] effort 10]
    puts stdout "CLOSER_PASS $i failed $result"
}}
cleanup all
write_def {def_out}
quit
"""


def patched_qrouter() -> Path:
    prefix = Path(os.environ.get("CLOSER_QROUTER_PREFIX", repo_paths().venv / "opt" / "qrouter"))
    binary, library = prefix / "bin" / "qrouter", prefix / "share" / "qrouter" / "qrouter.so"
    if not binary.is_file() or not library.is_file():
        pytest.fail(f"no qrouter 1.4.88 at {prefix}: run scripts/build-qrouter.sh "
                    f"(it applies {PATCH.name}); CLOSER_QROUTER_PREFIX selects another build")
    if PATCH_MARKER not in library.read_bytes():
        pytest.fail(f"qrouter at {prefix} was built without {PATCH.name}: rerun scripts/build-qrouter.sh")
    return binary


def route(binary: Path, def_in: Path, workdir: Path, parts: str, pdk_paths) -> tuple[Path, list[int]]:
    """Route `def_in` with the patch parts `parts`; return the routed DEF and failed nets per pass."""
    workdir.mkdir(parents=True, exist_ok=True)
    def_out = workdir / def_in.name
    script = workdir / "route.tcl"
    script.write_text(ROUTE_TCL.format(tlef=pdk_paths.tech_lef, cell_lef=pdk_paths.cell_lef, def_in=def_in,
                                       def_out=def_out, passes=STAGE2_PASSES))
    log = workdir / "qrouter.log"
    run(Command([str(binary), "-nog", "-s", str(script)], cwd=workdir,
                env={"QROUTER_CLOSER_PATCH": parts}, timeout_s=120), log)
    failed = [int(n) for n in re.findall(r"CLOSER_PASS \d+ failed (\d+)", log.read_text())]
    assert failed and def_out.is_file(), f"qrouter wrote no result; see {log}"
    return def_out, failed


# --- the routed geometry of each net, from the DEF ---------------------------------------------

POINT = re.compile(r"\(\s*(-?\d+|\*)\s+(-?\d+|\*)(?:\s+-?\d+)?\s*\)")


def routed_shapes(def_path: Path, tech: Tech) -> dict[str, dict[str, dict[str, list]]]:
    """net -> layer -> {"wire": boxes, "pad": boxes} (nm) of the signal nets' routes.

    Wires get the layer's default width (or the statement's) and half-width end extensions;
    vias get the pad rectangles of their LEF definition."""
    width = {layer.name: round(layer.width * 1000) for layer in tech.routing_layers}
    text = def_path.read_text()
    shapes: dict = defaultdict(lambda: defaultdict(lambda: {"wire": [], "pad": []}))
    for section in ("NETS", "SPECIALNETS"):
        found = re.search(rf"\n{section} \d+ ;(.*?)\nEND {section}", text, re.S)
        for net_text in (found.group(1).split("\n- ")[1:] if found else []):
            net = net_text.split()[0]
            if net in ("VPWR", "VGND") or "+ ROUTED" not in net_text:
                continue
            for statement in re.split(r"\bNEW\b", net_text.split("+ ROUTED", 1)[1]):
                tokens = statement.replace(";", " ").split()
                if tokens:
                    _add_statement(shapes[net], tokens, statement, width, tech)
    return shapes


def _add_statement(net_shapes, tokens: list[str], statement: str, width: dict[str, int], tech: Tech) -> None:
    layer = tokens[0]
    explicit = re.match(r"\S+\s+(\d+)\s*\(", statement.strip())
    half = (int(explicit.group(1)) if explicit else width.get(layer, 0)) // 2
    points, last = [], (0, 0)
    for x, y in POINT.findall(statement):
        last = (last[0] if x == "*" else int(x), last[1] if y == "*" else int(y))
        points.append(last)
    for (x1, y1), (x2, y2) in zip(points, points[1:]):
        net_shapes[layer]["wire"].append(
            db.Box(min(x1, x2) - half, min(y1, y2) - half, max(x1, x2) + half, max(y1, y2) + half))
    if points and tokens[-1] in tech.vias:
        x, y = points[-1]
        for pad_layer, (a, b, c, d) in tech.vias[tokens[-1]].shapes:
            net_shapes[pad_layer]["pad"].append(
                db.Box(x + round(a * 1000), y + round(b * 1000), x + round(c * 1000), y + round(d * 1000)))


def different_net_spacing(shapes, layer: str, space_nm: int, kinds: tuple[str, ...]) -> int:
    """Pairs of shapes (of `kinds`) of different nets on `layer` closer than `space_nm`."""
    regions = {net: db.Region([box for kind in kinds for box in shapes[net][layer][kind]]).merged()
               for net in shapes}
    found = 0
    for net, region in regions.items():
        if region.is_empty():
            continue
        others = db.Region()
        for other, other_region in regions.items():
            if other != net:
                others += other_region
        found += region.separation_check(others.merged(), space_nm).count()
    return found // 2  # each pair is seen from both nets


def via_pad_clashes(def_path: Path, tech: Tech) -> int:
    return different_net_spacing(routed_shapes(def_path, tech), "met1", M1_SPACE_NM, ("pad",))


def met3_clashes(def_path: Path, tech: Tech) -> int:
    return different_net_spacing(routed_shapes(def_path, tech), "met3", M3_SPACE_NM, ("wire", "pad"))


def full_chip_spacing(def_path: Path, pdk_paths) -> dict[str, int]:
    """m1.2 and m3.2 on the layout KLayout builds from the routed DEF and the cells' real GDS."""
    layer_map = def_path.parent / "sky130.map"
    layer_map.write_text("".join(f"{name} NET,SPNET,VIA,PIN {gds} 20\n" for name, gds in
                                 (("li1", 67), ("met1", 68), ("met2", 69), ("met3", 70), ("met4", 71))))
    options = db.LoadLayoutOptions()
    config = options.lefdef_config
    config.lef_files = [str(pdk_paths.tech_lef), str(pdk_paths.cell_lef)]
    config.macro_layout_files = [str(pdk_paths.gds)]
    config.macro_resolution_mode = 2  # the cells' GDS, not their LEF abstracts
    config.map_file = str(layer_map)
    config.read_lef_with_def = False
    layout = db.Layout()
    layout.read(str(def_path), options)
    top = layout.top_cell()

    def spacing(gds_layer: int, space_nm: int) -> int:
        region = db.Region(top.begin_shapes_rec(layout.layer(gds_layer, 20))).merged()
        return region.space_check(space_nm).count()

    return {"m1.2": spacing(68, M1_SPACE_NM), "m3.2": spacing(70, M3_SPACE_NM)}


# --- tests ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def routed(tmp_path_factory, pdk_paths) -> dict[str, tuple[Path, list[int]]]:
    binary = patched_qrouter()
    work = tmp_path_factory.mktemp("qrouter_patch")
    return {parts: route(binary, FIXTURE, work / parts, parts, pdk_paths)
            for parts in ("off", "keepout", "tracks", "on")}


@pytest.fixture(scope="module")
def tech(pdk_paths) -> Tech:
    return read_tech(pdk_paths.tech_lef)


def test_patch_file_is_a_p1_patch_of_the_qrouter_sources():
    text = PATCH.read_text()
    touched = re.findall(r"^\+\+\+ b/(\S+)", text, re.M)
    assert touched == ["node.h", "node.c", "maze.c"]
    assert "Closer patch" in text and "QROUTER_CLOSER_PATCH" in text


def test_upstream_behaviour_has_both_clash_classes(routed, tech):
    """The checks see the defects when the patch is switched off (the unpatched router)."""
    def_off, _ = routed["off"]
    assert via_pad_clashes(def_off, tech) > 0
    assert met3_clashes(def_off, tech) > 0


def test_keepout_removes_via_pad_clashes(routed, tech):
    assert via_pad_clashes(routed["keepout"][0], tech) == 0
    assert via_pad_clashes(routed["on"][0], tech) == 0


def test_stacks_on_tracks_remove_met3_clashes(routed, tech):
    assert met3_clashes(routed["tracks"][0], tech) == 0
    assert met3_clashes(routed["on"][0], tech) == 0


def test_patch_costs_no_routability(routed):
    """Failed nets after the last pass: the patched router fails no more nets than upstream."""
    assert routed["on"][1][-1] <= routed["off"][1][-1]


def test_full_chip_drc_improves(routed, pdk_paths):
    before = full_chip_spacing(routed["off"][0], pdk_paths)
    after = full_chip_spacing(routed["on"][0], pdk_paths)
    assert after["m3.2"] == 0 < before["m3.2"]
    # what remains of m1.2 is same-net (a redundant second tap on one pin), not class (a)
    assert after["m1.2"] <= before["m1.2"]
    assert after["m1.2"] + after["m3.2"] < before["m1.2"] + before["m3.2"]


def test_checker_flags_an_injected_via_pad_clash(routed, tech, tmp_path):
    """Two-way: add an M1M2 via of another net one met1 track above an L1M1 via of the clean
    result; the via-pad check must now find it."""
    def_on = routed["on"][0]
    text = def_on.read_text()
    head, nets = text.split("\nNETS ", 1)
    blocks = nets.split("\n- ")
    routed_blocks = [i for i, b in enumerate(blocks) if "+ ROUTED " in b]
    victim = next(i for i in routed_blocks if re.search(r"L1M1_PR", blocks[i]))
    x, y = map(int, re.search(r"\(\s*(\d+)\s+(\d+)\s*\)\s*L1M1_PR", blocks[victim]).groups())
    other = next(i for i in routed_blocks if i != victim)
    blocks[other] = blocks[other].replace("+ ROUTED ", f"+ ROUTED met1 ( {x} {y + 340} ) M1M2_PR\n  NEW ", 1)
    injected = head + "\nNETS " + "\n- ".join(blocks)
    assert injected != text
    perturbed = tmp_path / def_on.name
    perturbed.write_text(injected)
    assert via_pad_clashes(def_on, tech) == 0
    assert via_pad_clashes(perturbed, tech) >= 1
