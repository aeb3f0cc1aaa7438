"""KLayout pictures of DRC markers (for docs): the layout around a marker, BEOL layers only,
with the marker drawn as a box on a layer of its own."""

from __future__ import annotations

import json
from pathlib import Path

SHOWN = {  # GDS layer -> (name, colour)
    (67, 20): ("li1", 0x8080ff), (67, 44): ("mcon", 0x000000), (68, 20): ("met1", 0x3060ff),
    (68, 44): ("via", 0x202020), (69, 20): ("met2", 0xff40ff), (69, 44): ("via2", 0x404040),
    (70, 20): ("met3", 0x20c0c0), (70, 44): ("via3", 0x606060), (71, 20): ("met4", 0xc0c020),
}
MARKER = (999, 0)


def snapshot(gds: Path, box_um: tuple[float, float, float, float], out_png: Path, margin_um: float = 1.5,
             size_px: int = 600) -> Path:
    import klayout.db as kdb
    import klayout.lay as lay

    layout = kdb.Layout()
    layout.read(str(gds))
    top = layout.top_cell()
    x1, y1, x2, y2 = box_um
    marker = layout.layer(*MARKER)
    top.shapes(marker).insert(kdb.DBox(x1 - 0.02, y1 - 0.02, x2 + 0.02, y2 + 0.02))
    out_png.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_png.with_suffix(".gds")
    layout.write(str(tmp))
    view = lay.LayoutView()
    view.load_layout(str(tmp), False)
    view.clear_layers()
    for (l, d), (name, colour) in SHOWN.items():
        props = lay.LayerPropertiesNode()
        props.source = f"{l}/{d}@1"
        props.name = name
        props.fill_color = colour
        props.frame_color = colour
        props.dither_pattern = 5 if d == 20 else 0
        view.insert_layer(view.end_layers(), props)
    props = lay.LayerPropertiesNode()
    props.source = f"{MARKER[0]}/{MARKER[1]}@1"
    props.fill_color = props.frame_color = 0xff0000
    props.dither_pattern = 1
    props.width = 3
    view.insert_layer(view.end_layers(), props)
    view.max_hier()
    view.zoom_box(kdb.DBox(x1 - margin_um, y1 - margin_um, x2 + margin_um, y2 + margin_um))
    out_png.parent.mkdir(parents=True, exist_ok=True)
    view.save_image(str(out_png), size_px, size_px)
    tmp.unlink()
    return out_png


def snapshot_rules(gds: Path, drc_json: Path, out_dir: Path, prefix: str, per_rule: int = 1) -> list[Path]:
    data = json.loads(drc_json.read_text())
    made = []
    for rule, boxes in data.get("examples", {}).items():
        for k, box in enumerate(boxes[:per_rule]):
            made.append(snapshot(gds, tuple(box), out_dir / f"{prefix}-{rule}-{k}.png"))
    return made
