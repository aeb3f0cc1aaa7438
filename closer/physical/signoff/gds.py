"""DEF -> GDS with KLayout's LEF/DEF reader: routing from the DEF, standard cells from the PDK's
cell GDS (never their LEF abstracts), layers through `data/sky130hd.map`."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

from closer.errors import ToolError
from closer.physical.io.lef import Macro

MAP_FILE = Path(__file__).parent / "data" / "sky130hd.map"

# GDS (layer, datatype) of the layers the signoff checks read
LAYERS: dict[str, tuple[int, int]] = {
    "li1": (67, 20), "mcon": (67, 44), "met1": (68, 20), "via": (68, 44), "met2": (69, 20),
    "via2": (69, 44), "met3": (70, 20), "via3": (70, 44), "met4": (71, 20), "via4": (71, 44),
    "met5": (72, 20),
}
PIN_LAYERS: dict[str, tuple[int, int]] = {
    "li1": (67, 16), "met1": (68, 16), "met2": (69, 16), "met3": (70, 16), "met4": (71, 16), "met5": (72, 16),
}
LABEL_LAYERS: dict[str, tuple[int, int]] = {
    "li1": (67, 5), "met1": (68, 5), "met2": (69, 5), "met3": (70, 5), "met4": (71, 5), "met5": (72, 5),
}


def read_def(def_path: Path, tech_lef: Path, cell_lef: Path, cell_gds: Path | None = None,
             net_names: bool = False, extra_lefs: tuple[Path, ...] = ()):
    """A DEF read by KLayout's LEF/DEF reader with Closer's layer map. With `cell_gds` the
    standard cells come from it (never their LEF geometry); without, they stay empty. With
    `net_names` each wire carries its net's name as the shape property "net"."""
    import klayout.db as kdb

    opts = kdb.LoadLayoutOptions()
    cfg = opts.lefdef_config
    cfg.map_file = str(MAP_FILE)
    cfg.read_lef_with_def = False
    cfg.macro_resolution_mode = 2
    cfg.dbu = 0.001
    if net_names:
        cfg.produce_net_names = True
        cfg.net_property_name = "net"
    with tempfile.TemporaryDirectory() as tmp:
        tech_link = Path(tmp) / "tech.lef"  # KLayout picks the reader by extension (.tlef unknown)
        tech_link.symlink_to(tech_lef)
        cfg.lef_files = [str(tech_link), str(cell_lef), *map(str, extra_lefs)]
        if cell_gds is not None:
            cfg.macro_layout_files = [str(cell_gds)]
        layout = kdb.Layout()
        try:
            layout.read(str(def_path), opts)
        except RuntimeError as exc:
            raise ToolError(f"KLayout could not read {def_path}: {exc}") from exc
    return layout


def def_to_gds(def_path: Path, tech_lef: Path, cell_lef: Path, cell_gds: Path, out_gds: Path,
               pin_names: Mapping[str, str] | None = None, blocks: Mapping[str, tuple[Path, Macro]] | None = None) -> Path:
    """The GDS of a routed DEF; `pin_names` (DEF pin name -> Verilog port name, e.g. `a_0_` ->
    `a[0]`) relabels the top-level pins so the layout's pins carry the netlist's names. `blocks`
    (master -> its LEF and read form): hard macros without a GDS, drawn as black boxes with
    their LEF pins (closer.physical.floorplan.macros)."""
    blocks = blocks or {}
    layout = read_def(def_path, tech_lef, cell_lef, cell_gds, extra_lefs=tuple(lef for lef, _ in blocks.values()))
    tops = layout.top_cells()
    if len(tops) != 1:
        raise ToolError(f"{def_path}: expected one top cell in the GDS, got {[c.name for c in tops]}")
    for cell in layout.each_cell():
        if cell.is_ghost_cell() and cell.name in blocks:
            draw_black_box(layout, cell, blocks[cell.name][1])
    ghosts = [c.name for c in layout.each_cell() if c.is_ghost_cell()]
    if ghosts:
        raise ToolError(f"{def_path}: cells without layout (ghost cells): {', '.join(ghosts[:10])}")
    _pins_to_drawing(layout, tops[0])
    if pin_names:
        label_pins(layout, tops[0], pin_names)
    out_gds.parent.mkdir(parents=True, exist_ok=True)
    layout.write(str(out_gds))
    return out_gds


BOUNDARY = (235, 4)  # prBoundary.boundary: a black box's outline (no check reads it as metal)


def draw_black_box(layout, cell, macro: Macro) -> None:
    """A hard macro with no layout: its outline and its LEF pins (drawing, pin and label layers);
    its obstructions are not drawn (the router kept clear of them; DRC and LVS see the pins)."""
    import klayout.db as kdb

    cell.ghost_cell = False
    um = 1.0 / layout.dbu
    cell.shapes(layout.layer(*BOUNDARY)).insert(kdb.Box(0, 0, round(macro.width * um), round(macro.height * um)))
    for pin in macro.pins.values():
        for layer, (x1, y1, x2, y2) in pin.rects:
            if layer not in LAYERS:
                continue
            box = kdb.Box(round(x1 * um), round(y1 * um), round(x2 * um), round(y2 * um))
            cell.shapes(layout.layer(*LAYERS[layer])).insert(box)
            cell.shapes(layout.layer(*PIN_LAYERS[layer])).insert(box)
            cell.shapes(layout.layer(*LABEL_LAYERS[layer])).insert(kdb.Text(pin.name, kdb.Trans(box.center())))


def _pins_to_drawing(layout, top) -> None:
    """DEF pin shapes land on the pin datatype (xx/16); they are metal, so copy them onto the
    drawing datatype too (the cell GDS already draws its pins on both)."""
    for name, (layer, pin_dt) in PIN_LAYERS.items():
        src = layout.find_layer(layer, pin_dt)
        if src is None:
            continue
        dst = layout.layer(*LAYERS[name])
        top.shapes(dst).insert(top.shapes(src))


def label_pins(layout, top, pin_names: Mapping[str, str]) -> int:
    """Rename the top cell's pin labels (xx/5) from DEF names to the netlist's port names; returns
    how many labels were renamed. KLayout's DEF reader labels pins with the DEF's names, which
    are DEF-safe (`req_msg_0_`), not the Verilog ones (`req_msg[0]`)."""
    renamed = 0
    for layer, datatype in LABEL_LAYERS.values():
        idx = layout.find_layer(layer, datatype)
        if idx is None:
            continue
        for shape in top.shapes(idx).each():
            if shape.is_text() and shape.text_string in pin_names and pin_names[shape.text_string] != shape.text_string:
                shape.text_string = pin_names[shape.text_string]
                renamed += 1
    return renamed
