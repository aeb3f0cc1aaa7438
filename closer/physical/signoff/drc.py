"""Run the DRC deck (`drc_deck.RULES`) on a GDS with KLayout's region engine (flat), and write
a marker database (.lyrdb, viewable in KLayout) plus per-rule counts."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from closer.errors import InputError
from closer.physical.signoff.drc_deck import RULES, Rule
from closer.physical.signoff.gds import LAYERS


@dataclass
class DrcResult:
    counts: dict[str, int]                 # rule name -> violations (every rule listed)
    markers: Path | None = None            # .lyrdb
    wall_s: float = 0.0
    examples: dict[str, list[tuple[float, float, float, float]]] = field(default_factory=dict)
    boxes: dict[str, list[tuple[float, float, float, float]]] = field(default_factory=dict)  # every marker, um

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def nonzero(self) -> dict[str, int]:
        return {k: v for k, v in self.counts.items() if v}


def _regions(layout, top):
    import klayout.db as kdb

    regions = {}
    for name, (layer, datatype) in LAYERS.items():
        idx = layout.find_layer(layer, datatype)
        regions[name] = kdb.Region() if idx is None else kdb.Region(top.begin_shapes_rec(idx))
    return regions


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


def run_drc(gds: Path, out_dir: Path | None = None, rules: tuple[Rule, ...] = RULES,
            top_name: str | None = None) -> DrcResult:
    import klayout.db as kdb
    import klayout.rdb as rdb

    start = time.monotonic()
    if not Path(gds).is_file():
        raise InputError(f"DRC input {gds} does not exist")
    layout = kdb.Layout()
    layout.read(str(gds))
    top = layout.cell(top_name) if top_name else layout.top_cell()
    if top is None:
        raise InputError(f"{gds}: no top cell {top_name or ''}")
    regions = _regions(layout, top)
    db = rdb.ReportDatabase("Closer sky130 BEOL DRC")
    db.top_cell_name = top.name
    rdb_cell = db.create_cell(top.name)
    counts: dict[str, int] = {}
    examples: dict[str, list] = {}
    boxes: dict[str, list] = {}
    for rule in rules:
        found = _check(rule, regions, layout.dbu)
        counts[rule.name] = len(found)
        if found:
            cat = db.create_category(rule.name)
            cat.description = f"{rule.description} ({rule.value} um)"
            for obj in found:
                item = db.create_item(rdb_cell.rdb_id(), cat.rdb_id())
                item.add_value(obj.to_dtype(layout.dbu))
            boxes[rule.name] = [_bbox_um(o, layout.dbu) for o in found]
            examples[rule.name] = boxes[rule.name][:20]
    markers = None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        markers = out_dir / "drc.lyrdb"
        db.save(str(markers))
        (out_dir / "drc.json").write_text(json.dumps(
            {"gds": str(gds), "top": top.name, "total": sum(counts.values()), "counts": counts,
             "examples": examples}, indent=1))
    return DrcResult(counts, markers, time.monotonic() - start, examples, boxes)
