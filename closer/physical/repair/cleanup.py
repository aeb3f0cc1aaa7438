"""Same-net clean-up of the routed GDS: notches (two parts of one polygon closer than the layer's
spacing, e.g. a 0.3 um met3 wire between a 0.32 um M3M4 pad and a 0.33 um M2M3 pad, which
leaves 0.105 um steps facing each other) are filled with metal.

A notch lies inside one merged polygon, so the metal added belongs to the net that polygon
already is; a fill is added only where it stays at the spacing from every other polygon of the
layer, so it cannot create a short or a new spacing error. DRC and LVS run on the result.

Holes below the layer's minimum hole area (m1.7: a U-shaped met1 wire, via pads and a patch of one
net around a 0.245 x 0.2 um gap) are filled the same way: a hole is enclosed by one merged
polygon, so its fill is that net's metal, and a hole with any other polygon inside is left alone.
"""

from __future__ import annotations

from pathlib import Path

from closer.physical.signoff.drc_deck import RULES
from closer.physical.signoff.gds import LAYERS

METALS = ("li1", "met1", "met2", "met3", "met4", "met5")
GRID_UM = 0.005  # manufacturing grid (x.1b)


def _on_grid(box, grid: int):
    """The box grown to the manufacturing grid (a fill off the grid would be an x.1b error)."""
    import klayout.db as kdb

    return kdb.Box(box.left // grid * grid, box.bottom // grid * grid,
                   -(-box.right // grid) * grid, -(-box.top // grid) * grid)


def spacing_rules() -> dict[str, float]:
    return {r.layer: r.value for r in RULES if r.kind == "spacing" and r.layer in METALS}


HORIZONTAL = ("li1", "met1", "met3", "met5")  # preferred direction: a short island grows along it


def area_rules() -> dict[str, float]:
    return {r.layer: r.value for r in RULES if r.kind == "area" and r.layer in METALS}


def hole_area_rules() -> dict[str, float]:
    return {r.layer: r.value for r in RULES if r.kind == "hole_area" and r.layer in METALS}


def _fill_layers(gds: Path, values: dict[str, float], fills_of) -> dict[str, int]:
    """Read the GDS, add `fills_of(layer, merged region, rule value, dbu)` to each layer's top-cell
    shapes, write it back only when anything was added; the number of fills per layer."""
    import klayout.db as kdb

    layout = kdb.Layout()
    layout.read(str(gds))
    top = layout.top_cell()
    added: dict[str, int] = {}
    for layer, value in values.items():
        idx = layout.find_layer(*LAYERS[layer])
        if idx is None:
            continue
        fills = fills_of(layer, kdb.Region(top.begin_shapes_rec(idx)).merged(), value, layout.dbu)
        if not fills.is_empty():
            top.shapes(idx).insert(fills)
            added[layer] = fills.count()
    if added:
        layout.write(str(gds))
    return added


def fill_holes(gds: Path) -> dict[str, int]:
    """Fill, in place, every hole below the layer's minimum hole area that nothing else lies in;
    returns the number of holes filled per layer (none leaves the file untouched)."""
    import klayout.db as kdb

    def holes(layer, region, area_um2, dbu):
        limit = area_um2 / (dbu * dbu)
        small = [h for h in region.holes().each() if h.area() < limit - 1e-6]
        # a hole with another net's polygon inside would bridge it: only the empty ones
        return kdb.Region([h for h in small if (region & kdb.Region(h)).is_empty()])

    return _fill_layers(gds, hole_area_rules(), holes)


def _grow_to_area(box, area_dbu2: float, horizontal: bool, grid: int):
    """The island's bounding box lengthened along the layer's direction, symmetrically, on the
    grid, until it has the minimum area."""
    import klayout.db as kdb

    if horizontal:
        need = -(-int(area_dbu2) // box.height()) - box.width()
        half = -(-max(need, 0) // 2)
        half = -(-half // grid) * grid
        return kdb.Box(box.left - half, box.bottom, box.right + half, box.top)
    need = -(-int(area_dbu2) // box.width()) - box.height()
    half = -(-max(need, 0) // 2)
    half = -(-half // grid) * grid
    return kdb.Box(box.left, box.bottom - half, box.right, box.top + half)


def fill_min_area(gds: Path) -> dict[str, int]:
    """Lengthen metal islands below the layer's minimum area (e.g. the met3 of an M2M3+M3M4
    via stack, 0.46 x 0.33 um against m3.6's 0.24 um^2), in place, where the longer box stays at
    the spacing from every other polygon; returns the number of islands grown per layer."""
    import klayout.db as kdb

    spacing = spacing_rules()

    def islands(layer, region, area_um2, dbu):
        grid = round(GRID_UM / dbu)
        limit = area_um2 / (dbu * dbu)
        d = round(spacing[layer] / dbu)
        fills = kdb.Region()
        for poly in region.each():
            if poly.area() >= limit - 1e-6:
                continue
            box = _grow_to_area(poly.bbox(), limit, layer in HORIZONTAL, grid)
            near = region.interacting(kdb.Region(box.enlarged(d - 1, d - 1)))
            if near.count() == 1:
                fills.insert(box)
        return fills

    return _fill_layers(gds, area_rules(), islands)


def fill_notches(gds: Path) -> dict[str, int]:
    """Fill the notches of every metal layer of the GDS's top cell in place; returns the number
    of fills per layer (0 everywhere leaves the file untouched)."""
    import klayout.db as kdb

    def notches(layer, region, space_um, dbu):
        d = round(space_um / dbu)
        fills = kdb.Region()
        # projection metrics: the fill spans exactly where the two edges face each other
        for pair in region.notch_check(d, False, kdb.Metrics.Projection).each():
            box = _on_grid(pair.bbox(), round(GRID_UM / dbu))
            if box.width() == 0 or box.height() == 0:
                continue
            # the polygons the fill touches must be one polygon (the notch's own), and nothing
            # else may come within the spacing
            near = region.interacting(kdb.Region(box.enlarged(d - 1, d - 1)))
            if near.count() == 1:
                fills += kdb.Region(box)
        return fills.merged()

    return _fill_layers(gds, spacing_rules(), notches)


def fill_same_net(gds: Path) -> dict[str, int]:
    """Every same-net fill (notches, minimum-area islands, holes) on `gds`, in that order; the
    number added per kind ("notch", "area", "hole")."""
    return {"notch": sum(fill_notches(gds).values()), "area": sum(fill_min_area(gds).values()),
            "hole": sum(fill_holes(gds).values())}
