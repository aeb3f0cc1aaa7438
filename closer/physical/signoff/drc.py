"""Run the DRC deck (`drc_deck.RULES`) on a GDS with KLayout's region engine (flat), and write
a marker database (.lyrdb, viewable in KLayout) plus per-rule counts."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from closer import procs
from closer.errors import InputError
from closer.physical.signoff.drc_deck import RULES, Rule
from closer.physical.signoff.gds import LAYERS


BoxUm = tuple[float, float, float, float]
WINDOW_CONTEXT_UM = 3.0  # shapes this far around a window are read too (every rule's reach is < 2 um)
# a check over more windows than this is run on the whole chip instead: its cost grows with the
# windows (3-7 ms each) past the whole check's 46 s of CPU (23 s wall in two processes) on PicoRV32:
# its first antenna round's 653 rerouted nets gave 69,003 windows (195 s), the second's 11,599
# (50 s), the third's 1,903 (13 s). CPU decides, not wall: the repair's budget is CPU, and at 2,000
# a repair round on one long net (2,824 windows) checked the whole chip at twice the CPU
MAX_WINDOWS = 8000


@dataclass
class DrcResult:
    counts: dict[str, int]                 # rule name -> violations (every rule listed)
    markers: Path | None = None            # .lyrdb
    wall_s: float = 0.0
    examples: dict[str, list[BoxUm]] = field(default_factory=dict)
    boxes: dict[str, list[BoxUm]] = field(default_factory=dict)  # every marker, um
    windows: int = 0                       # checked in this many windows (the rest from a base result); 0: whole chip

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def nonzero(self) -> dict[str, int]:
        return {k: v for k, v in self.counts.items() if v}


def _regions(layout, top, near=None):
    """Each checked layer as a flat region; with `near` (a Region), only the shapes touching it,
    each whole (so an area or width check sees the full polygon)."""
    import klayout.db as kdb

    regions = {}
    for name, (layer, datatype) in LAYERS.items():
        idx = layout.find_layer(layer, datatype)
        if idx is None:
            regions[name] = kdb.Region()
        elif near is None:
            regions[name] = kdb.Region(top.begin_shapes_rec(idx))
        else:
            regions[name] = kdb.Region(kdb.RecursiveShapeIterator(layout, top, idx, near, False))
    return regions


def _touches(box: BoxUm, windows: list[BoxUm]) -> bool:
    return any(box[0] <= w[2] and w[0] <= box[2] and box[1] <= w[3] and w[1] <= box[3] for w in windows)


def _check(rule: Rule, regions, dbu: float):
    """Violations of one rule as a list of KLayout objects (EdgePair or Polygon)."""
    d = round(rule.value / dbu)
    layer = regions[rule.layer]
    if rule.kind == "width":
        return list(layer.width_check(d).each())
    if rule.kind == "spacing":
        return list(layer.space_check(d).each())
    if rule.kind == "cut_space":
        return list(layer.space_check(d).each())
    if rule.kind == "area":
        limit = rule.value / (dbu * dbu)
        return [p for p in layer.merged().each() if p.area() < limit - 1e-6]
    if rule.kind == "hole_area":
        limit = rule.value / (dbu * dbu)
        return [h for h in layer.merged().holes().each() if h.area() < limit - 1e-6]
    if rule.kind == "cut_size":
        bad = []
        for p in layer.merged().each():
            box = p.bbox()
            if not (p.is_box() and box.width() == d and box.height() == d):
                bad.append(p)
        return bad
    if rule.kind == "offgrid":
        g = round(rule.value / dbu)
        return list(layer.grid_check(g, g).each())
    other = regions[rule.other]
    if rule.kind == "enclosure":
        grown = layer.merged().sized(d) if d else layer.merged()
        return list(grown.not_inside(other).each())
    if rule.kind == "enclosure2":
        cuts = layer.merged()
        bad_x = cuts.sized(d, 0, 2).not_inside(other).sized(-d, 0, 2)
        bad_y = cuts.sized(0, d, 2).not_inside(other).sized(0, -d, 2)
        return list((bad_x & bad_y).each())
    raise InputError(f"DRC rule {rule.name}: unknown kind {rule.kind!r}")


def _bbox_um(obj, dbu: float) -> tuple[float, float, float, float]:
    b = obj.bbox()
    return (b.left * dbu, b.bottom * dbu, b.right * dbu, b.top * dbu)


def _check_group(rules: tuple[Rule, ...], shared) -> list[tuple[str, list[tuple[str, str, BoxUm]]]]:
    """In a forked worker (procs.fork_map, `shared` the read layout and its top cell): each rule's
    markers as (kind, text, µm box), to cross the process boundary."""
    layout, top = shared
    regions = _regions(layout, top)
    out = []
    for rule in rules:
        found = []
        for o in _check(rule, regions, layout.dbu):
            d = o.to_dtype(layout.dbu)
            found.append((type(d).__name__, str(d), _bbox_um(o, layout.dbu)))
        out.append((rule.name, found))
    return out


def _from_text(kind: str, text: str):
    import klayout.db as kdb

    return {"DEdgePair": kdb.DEdgePair, "DPolygon": kdb.DPolygon}[kind].from_s(text)


def run_drc(gds: Path, out_dir: Path | None = None, rules: tuple[Rule, ...] = RULES,
            top_name: str | None = None, windows: list[BoxUm] | None = None,
            base: DrcResult | None = None, jobs: int = 1) -> DrcResult:
    """The deck on the whole GDS; with `windows` (µm) and `base` (the whole-chip result of a
    layout that differs from this one only inside the windows), only the windows are checked:
    the markers touching a window come from this GDS, the others from `base`. With `jobs` > 1 a
    whole-chip check runs its rules in that many forked processes, a layer's rules together (each
    process flattens the layers its rules read). More than MAX_WINDOWS windows: the whole chip."""
    import klayout.db as kdb
    import klayout.rdb as rdb

    if (windows is None) != (base is None):
        raise InputError("windowed DRC needs both the windows and the base result")
    if windows is not None and len(windows) > MAX_WINDOWS:
        windows = base = None
    start = time.monotonic()
    if not Path(gds).is_file():
        raise InputError(f"DRC input {gds} does not exist")
    layout = kdb.Layout()
    layout.read(str(gds))
    top = layout.cell(top_name) if top_name else layout.top_cell()
    if top is None:
        raise InputError(f"{gds}: no top cell {top_name or ''}")
    near = None
    if windows is not None:
        grow = round(WINDOW_CONTEXT_UM / layout.dbu)
        near = kdb.Region([kdb.Box(round(w[0] / layout.dbu) - grow, round(w[1] / layout.dbu) - grow,
                                   round(w[2] / layout.dbu) + grow, round(w[3] / layout.dbu) + grow) for w in windows])
    if jobs > 1 and windows is None:
        groups = [tuple(r for r in rules if r.layer == layer) for layer in dict.fromkeys(r.layer for r in rules)]
        by_rule = {name: [(_from_text(kind, text), b) for kind, text, b in found]
                   for part in procs.fork_map(_check_group, groups, jobs, (layout, top)) for name, found in part}
    else:
        regions = _regions(layout, top, near)
        by_rule = {rule.name: [(o.to_dtype(layout.dbu), _bbox_um(o, layout.dbu)) for o in _check(rule, regions, layout.dbu)]
                   for rule in rules}
    db = rdb.ReportDatabase("Closer sky130 BEOL DRC")
    db.top_cell_name = top.name
    rdb_cell = db.create_cell(top.name)
    counts: dict[str, int] = {}
    examples: dict[str, list] = {}
    boxes: dict[str, list] = {}
    for rule in rules:
        found = by_rule[rule.name]
        if windows is not None:
            found = ([(o, b) for o, b in found if _touches(b, windows)]
                     + [(kdb.DBox(*b), b) for b in base.boxes.get(rule.name, []) if not _touches(b, windows)])
        counts[rule.name] = len(found)
        if found:
            cat = db.create_category(rule.name)
            cat.description = f"{rule.description} ({rule.value} um)"
            for obj, _ in found:
                item = db.create_item(rdb_cell.rdb_id(), cat.rdb_id())
                item.add_value(obj)
            boxes[rule.name] = [b for _, b in found]
            examples[rule.name] = boxes[rule.name][:20]
    markers = None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        markers = out_dir / "drc.lyrdb"
        db.save(str(markers))
        (out_dir / "drc.json").write_text(json.dumps(
            {"gds": str(gds), "top": top.name, "total": sum(counts.values()), "counts": counts,
             "examples": examples, "windows": len(windows or [])}, indent=1))
    return DrcResult(counts, markers, time.monotonic() - start, examples, boxes, len(windows or []))
