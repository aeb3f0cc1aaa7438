"""A PNG of a signed-off layout with its DRC markers (red) and the cells at LVS opens/shorts
(yellow), rendered headless with KLayout's Python module (klayout.lay)."""

from __future__ import annotations

import re
from pathlib import Path

DRC_LAYER = (1000, 0)
LVS_LAYER = (1001, 0)
_COMPONENT = re.compile(r"^\s*-\s+(\S+)\s+\S+.*?\(\s*(-?\d+)\s+(-?\d+)\s*\)", re.M)
LVS_BOX_UM = 3.0  # a cell's neighbourhood: LVS reports name terminals, not coordinates


def drc_boxes(lyrdb: Path) -> list[tuple[float, float, float, float]]:
    """The bounding boxes (um) of a KLayout report database's markers."""
    import klayout.db  # noqa: F401  (binds the DBox/DPolygon values the report's items hold)
    import klayout.rdb as rdb

    if not lyrdb.is_file():
        return []
    db = rdb.ReportDatabase("")
    db.load(str(lyrdb))
    boxes = []
    for item in db.each_item():
        for value in item.each_value():
            shape = (value.box() if value.is_box() else value.polygon() if value.is_polygon()
                     else value.edge_pair() if value.is_edge_pair() else value.edge() if value.is_edge() else None)
            if shape is not None:
                b = shape.bbox()
                boxes.append((b.left, b.bottom, b.right, b.top))
    return boxes


def lvs_instances(lvs: dict) -> set[str]:
    """Instance names of the terminals at LVS opens and shorts (`inst/pin` labels)."""
    labels = [t for o in lvs.get("opens", []) for piece in o.get("pieces", []) for t in piece]
    labels += [t for o in lvs.get("opens", []) for t in o.get("unconnected_terminals", [])]
    labels += [t for s in lvs.get("shorts", []) for t in s.get("terminals", [])]
    return {t.rsplit("/", 1)[0] for t in labels if "/" in t}


def instance_origins(def_path: Path, names: set[str]) -> list[tuple[float, float]]:
    text = def_path.read_text(errors="replace")
    units = re.search(r"UNITS\s+DISTANCE\s+MICRONS\s+(\d+)", text)
    dbu = int(units.group(1)) if units else 1000
    body = text.split("COMPONENTS", 1)[-1].split("END COMPONENTS", 1)[0]
    return [(int(x) / dbu, int(y) / dbu) for name, x, y in _COMPONENT.findall(body) if name in names]


def render(gds: Path, png: Path, drc: list[tuple[float, float, float, float]],
           lvs_points: list[tuple[float, float]], size_px: int = 1400) -> Path:
    import klayout.db as kdb
    import klayout.lay as lay

    layout = kdb.Layout()
    layout.read(str(gds))
    top = layout.top_cell()
    for (layer, datatype), boxes in ((DRC_LAYER, drc), (LVS_LAYER, [
            (x - LVS_BOX_UM, y - LVS_BOX_UM, x + LVS_BOX_UM, y + LVS_BOX_UM) for x, y in lvs_points])):
        index = layout.layer(layer, datatype)
        for x0, y0, x1, y1 in boxes:
            # markers are tiny next to the die: grow them so they stay visible at PNG scale
            grow = 0.5
            top.shapes(index).insert(kdb.DBox(x0 - grow, y0 - grow, x1 + grow, y1 + grow))
    marked = png.with_suffix(".marked.gds")
    layout.write(str(marked))
    view = lay.LayoutView()
    view.load_layout(str(marked), True)
    view.max_hier()
    view.set_config("text-visible", "false")
    for props in _iter_layers(view):
        key = (props.source_layer, props.source_datatype)
        if key in (DRC_LAYER, LVS_LAYER):
            color = 0xFF0000 if key == DRC_LAYER else 0xFFD000
            props.fill_color = props.frame_color = color
            props.dither_pattern = 0
            props.width = 3
    view.zoom_fit()
    view.save_image(str(png), size_px, size_px)
    marked.unlink()
    return png


def _iter_layers(view):
    it = view.begin_layers()
    while not it.at_end():
        props = it.current()
        yield props
        view.set_layer_properties(it, props)
        it.next()
