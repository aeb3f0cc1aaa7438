"""Reaching a hard macro's pins: each connected pin carried out of the macro to qrouter's grid.

The SRAM macros' pins sit on the macro's own grid, off qrouter's tracks; routed as they are,
qrouter failed 37 nets of the 1 KB SRAM wrapper and left 86 macro nets open (docs/physical.md,
"Hard macros"). Each connected pin gets a *reach* (`PinReach`): a stem straight out of the macro
to a grid line 1.5 µm outside it, a bar along that line to a point of qrouter's grid, a
via-pad-sized square there with a tail outward (the router's pin), and, where the neighbours
leave room, a landing bar out to the neighbouring tracks (qrouter often ended a route with a
via one track beside the pin). The reaches keep the layer's spacing to each other and to every
pin of the macro; crowded pins go out to different depths. qrouter sees the square as the pin
and the stem as an obstruction (pinaccess.write_router_lef); the final DEF gets the whole reach
as special wiring of the pin's net (route.finalize_def), so the metal qrouter lands on exists.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from closer.errors import InputError
from closer.physical.floorplan.floorplan import DBU, Layout
from closer.physical.io.lef import Macro, Tech
from closer.physical.io.netlist import Netlist
from closer.physical.signoff.drc_deck import RULES

CLEARANCE = 1500  # dbu: the grid point lies at least this far outside the macro's outline
TAIL = 1100       # dbu: the router's pin reaches this far out beyond the grid point
SPACING = {r.layer: round(r.value * DBU) for r in RULES if r.kind == "spacing"}  # the deck's m*.2 (dbu)
Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class PinReach:
    instance: str
    pin: str
    net: str
    layer: str
    rects: tuple[Box, ...]   # die coordinates (dbu): stem, bar, router pin, and the landing where it fits
    square: Box              # the via-pad square on that grid point and its tail (the router's view of the pin)


def _die_rect(layout: Layout, name: str, macro: Macro, r) -> Box:
    placed = layout.blocks[name]
    x1, y1, x2, y2 = (round(v * DBU) for v in r)
    h = round(macro.height * DBU)
    if placed.orient == "FS":
        y1, y2 = h - y2, h - y1
    return placed.x + x1, placed.y + y1, placed.x + x2, placed.y + y2


def _edge(box: Box, outline: Box) -> str | None:
    x1, y1, x2, y2 = box
    for edge, hit in (("bottom", y1 <= outline[1]), ("top", y2 >= outline[3]),
                      ("left", x1 <= outline[0]), ("right", x2 >= outline[2])):
        if hit:
            return edge
    return None


def _grid(tech: Tech, layer, axis: str) -> tuple[int, int]:
    """(offset, pitch) in dbu of the points qrouter routes `layer` on along `axis`. qrouter has one
    grid for all layers (x: the finest vertical pitch, y: the finest horizontal one, each from
    that layer's offset); a layer whose tracks run across `axis` uses every point, one whose
    pitch is m grid steps uses every m-th from step m - 1 (measured in its routed DEF: met4 x on
    0.69 + 0.92k, met3 y on 0.51 + 0.68k)."""
    direction = "VERTICAL" if axis == "x" else "HORIZONTAL"
    finest = min((l for l in tech.routing_layers if l.direction == direction),
                 key=lambda l: l.pitch_x if axis == "x" else l.pitch_y)
    g0 = round((finest.offset_x if axis == "x" else finest.offset_y) * DBU)
    g = round((finest.pitch_x if axis == "x" else finest.pitch_y) * DBU)
    if layer.direction != direction:
        return g0, g
    m = max(1, round((layer.pitch_x if axis == "x" else layer.pitch_y) * DBU / g))
    return g0 + g * (m - 1), g * m


def _pad_half(tech: Tech, layer) -> int:
    """Half the side (dbu) of the smallest square that holds the layer's wire and the pad of every
    via to a routed neighbour (met5 is not routed), so a via qrouter drops on the router's pin lies
    on it (M3M4_PR's met4 pad is 0.33 µm, wider than the 0.3 µm wire)."""
    pads = [max(abs(v) for v in r) for via in tech.vias.values() if not any(l == "met5" for l, _ in via.shapes)
            for l, r in via.shapes if l == layer.name]
    return math.ceil(max([layer.width / 2, *pads]) * DBU / 5) * 5 + 5


def _neighbour(tech: Tech, layer, axis: str):
    """The routing layer below `layer` (above it when the one below does not) whose tracks run along
    `axis` (horizontal tracks for y), or `layer` itself when neither does."""
    names = [l.name for l in tech.routing_layers]
    i = names.index(layer.name)
    want = "HORIZONTAL" if axis == "y" else "VERTICAL"
    for j in (i - 1, i + 1):
        if 0 <= j < len(names) and tech.routing_layers[j].direction == want:
            return tech.routing_layers[j]
    return layer


def _gap(a: Box, b: Box) -> int:
    """Edge-to-edge distance of two boxes (0 when they touch or overlap)."""
    dx = max(b[0] - a[2], a[0] - b[2], 0)
    dy = max(b[1] - a[3], a[1] - b[3], 0)
    return max(dx, dy) if min(dx, dy) == 0 else int(math.hypot(dx, dy))


def reaches(layout: Layout, netlist: Netlist, macros: dict[str, Macro], tech: Tech) -> list[PinReach]:
    """The reach of every connected signal pin of every placed hard macro."""
    out = []
    for name, placed in sorted(layout.blocks.items()):
        macro = macros[placed.master]
        outline = layout.block_boxes[name]
        connected = netlist.instances[name].pins
        pins = [p for p in sorted(macro.signal_pins(), key=lambda p: p.name) if p.name in connected and p.rects]
        # every pin shape is a neighbour to keep clear of, and so is each connected pin's stem out
        # to the first grid line (reserved before any bar is drawn, so no bar runs under a stem)
        taken: dict[str, list[tuple[str, Box]]] = {}
        for pin in macro.pins.values():
            for layer, r in pin.rects:
                taken.setdefault(layer, []).append((pin.name, _die_rect(layout, name, macro, r)))
        edges = {}
        for pin in pins:
            layer_name, r = pin.rects[0]
            box = _die_rect(layout, name, macro, r)
            edges[pin.name] = _edge(box, outline)
            if edges[pin.name] is None:
                raise InputError(f"macro {placed.master} pin {pin.name}: not on the macro's outline; "
                                 "only edge pins can be reached")
            (stem,), _ = _reach(box, edges[pin.name], outline, tech, tech.layer(layer_name), [], 0, stem_only=True)
            taken[layer_name].append((pin.name, stem))
        for pin in pins:
            layer_name, r = pin.rects[0]
            box = _die_rect(layout, name, macro, r)
            others = [t for owner, t in taken[layer_name] if owner != pin.name]
            found = _reach(box, edges[pin.name], outline, tech, tech.layer(layer_name), others, SPACING.get(layer_name, 300))
            if found is None:
                raise InputError(f"macro {name} pin {pin.name}: no grid point reaches it without crowding "
                                 "its neighbours")
            rects, square = found
            taken[layer_name] = [(o, t) for o, t in taken[layer_name] if o != pin.name or t == box] + [(pin.name, x) for x in rects]
            out.append(PinReach(name, pin.name, connected[pin.name], layer_name, rects, square))
        for k, reach in enumerate(out):  # after every reach is known: landings only where they fit
            if reach.instance != name:
                continue
            others = [t for owner, t in taken[reach.layer] if owner != reach.pin]
            landing = _landing(reach, edges[reach.pin], tech, others, SPACING.get(reach.layer, 300))
            if landing:
                out[k] = replace(reach, rects=(*reach.rects, landing))
                taken[reach.layer].append((reach.pin, landing))
    return out


def _landing(reach: PinReach, edge: str, tech: Tech, taken: list[Box], spacing: int) -> Box | None:
    """qrouter often lands on the pin with a via one track beside its grid point (the SRAM
    wrapper: 0.92 µm east or west, an open): where the neighbours leave room, a bar on the grid
    line out to both neighbouring tracks (else to one) so such a via lands on the net's metal."""
    along, across = ("x", "y") if edge in ("bottom", "top") else ("y", "x")
    _, pitch = _grid(tech, tech.layer(reach.layer), along)
    _, step = _grid(tech, tech.layer(reach.layer), across)
    sq = reach.square  # the landing spans the router's pin and one grid step more across (met3 pins:
    for sides in ((-1, 1), (-1,), (1,)):  # qrouter ended on the step between the pin and the macro)
        lo, hi = min(0, *sides) * pitch, max(0, *sides) * pitch
        box = ((sq[0] + lo, sq[1] - step, sq[2] + hi, sq[3] + step) if along == "x"
               else (sq[0] - step, sq[1] + lo, sq[2] + step, sq[3] + hi))
        if all(_gap(box, t) >= spacing for t in taken):
            return box
    return None


def _reach(box: Box, edge: str, outline: Box, tech: Tech, layer, taken: list[Box], spacing: int,
           stem_only: bool = False) -> tuple[tuple[Box, ...], Box] | None:
    """The pin carried straight out of the macro to a grid line (`depth` lines out), then along
    that line to a grid point: the nearest point and the shallowest line that keep `spacing` to
    what is `taken` (crowded pins, 0.68 µm apart on the SRAMs, go out to different depths)."""
    along, across = ("x", "y") if edge in ("bottom", "top") else ("y", "x")
    off_a, pitch_a = _grid(tech, layer, along)
    # the grid line out of the macro: a track of the neighbouring layer that runs along it too, so
    # a via from that layer can sit on the point
    off_c, pitch_c = _grid(tech, _neighbour(tech, layer, across), across)
    half = _pad_half(tech, layer)
    outward = -1 if edge in ("bottom", "left") else 1
    limit = {"bottom": outline[1], "left": outline[0], "top": outline[3], "right": outline[2]}[edge] + outward * CLEARANCE
    first = (math.floor if outward < 0 else math.ceil)((limit - off_c) / pitch_c)
    centre = (box[0] + box[2]) / 2 if along == "x" else (box[1] + box[3]) / 2
    k0 = round((centre - off_a) / pitch_a)
    tries = [(depth, k) for depth in range(4) for k in range(k0 - 3, k0 + 4)]
    for depth, k in sorted(tries, key=lambda t: (t[0], abs(off_a + t[1] * pitch_a - centre))):
        c = off_c + (first + outward * depth) * pitch_c
        a = off_a + k * pitch_a
        if along == "x":  # a bottom or top pin: straight down or up, then along x
            stem = (box[0], min(box[1], c - half), box[2], max(box[3], c + half))
            bar = (min(box[0], a - half), c - half, max(box[2], a + half), c + half)
        else:
            stem = (min(box[0], c - half), box[1], max(box[2], c + half), box[3])
            bar = (c - half, min(box[1], a - half), c + half, max(box[3], a + half))
        # the router's pin: from the grid point TAIL further out (qrouter took its tap up to 3 grid
        # steps out of a square on the point and wrote no stub to it)
        lo, hi = (c - half, c + half + TAIL) if outward > 0 else (c - half - TAIL, c + half)
        square = (a - half, lo, a + half, hi) if along == "x" else (lo, a - half, hi, a + half)
        if stem_only:
            return (stem,), square
        if all(_gap(r, t) >= spacing for r in (stem, bar, square) for t in taken):
            return (stem, bar, square), square
    return None


def local_rect(layout: Layout, name: str, macro: Macro, rect: Box) -> tuple[float, float, float, float]:
    """A die rectangle in the macro's LEF coordinates (µm)."""
    placed = layout.blocks[name]
    x1, y1, x2, y2 = rect[0] - placed.x, rect[1] - placed.y, rect[2] - placed.x, rect[3] - placed.y
    if placed.orient == "FS":
        h = round(macro.height * DBU)
        y1, y2 = h - y2, h - y1
    return x1 / DBU, y1 / DBU, x2 / DBU, y2 / DBU


def router_pins(layout: Layout, macros: dict[str, Macro], found: list[PinReach]) -> dict[str, dict[str, tuple[str, tuple]]]:
    """master -> pin -> (layer, pin rectangles, obstruction rectangles; LEF µm) for the router's view of
    each macro: the pin is only the minimum-width square on its grid point (qrouter took any grid
    point whose half-pitch cell touched a longer shape as a tap and ended routes beside the pin);
    the stem is an obstruction up to STEM_GAP short of the square. Every instance of a master must
    need the same reaches (the same placement phase on the routing grid)."""
    views: dict[str, dict[str, tuple[str, tuple]]] = {}
    for reach in found:
        master = layout.blocks[reach.instance].master
        stem = reach.rects[0]
        square = reach.square
        short = _short_stem(stem, square)
        blocks = [b for b in (short,) if b]
        shape = (reach.layer, (local_rect(layout, reach.instance, macros[master], square),),
                 tuple(local_rect(layout, reach.instance, macros[master], b) for b in blocks))
        have = views.setdefault(master, {}).setdefault(reach.pin, shape)
        if have != shape:
            raise InputError(f"macro instances of {master} sit at different routing-grid phases "
                             f"(pin {reach.pin}); place them a multiple of 0.92 µm (x) and 2.72 µm (y) apart")
    return views


STEM_GAP = 800  # dbu: the stem obstruction ends this far from the pin square (qrouter keeps out of obstructions)


def _short_stem(stem: Box, square: Box) -> Box | None:
    """The stem without its last STEM_GAP before the square's grid line."""
    x1, y1, x2, y2 = stem
    if x2 - x1 < y2 - y1:   # vertical stem (bottom or top pin)
        cy = (square[1] + square[3]) // 2
        y1, y2 = (max(y1, cy + STEM_GAP), y2) if cy < y1 + (y2 - y1) // 2 else (y1, min(y2, cy - STEM_GAP))
    else:
        cx = (square[0] + square[2]) // 2
        x1, x2 = (max(x1, cx + STEM_GAP), x2) if cx < x1 + (x2 - x1) // 2 else (x1, min(x2, cx - STEM_GAP))
    return (x1, y1, x2, y2) if x1 < x2 and y1 < y2 else None


def special_wiring(found: list[PinReach], skip: set[str]) -> dict[str, list[str]]:
    """net -> DEF special-wiring paths (one per reach; flush ends) of the routed nets."""
    out: dict[str, list[str]] = {}
    for reach in found:
        if reach.net in skip:
            continue
        for x1, y1, x2, y2 in reach.rects:
            if x2 - x1 <= y2 - y1:
                cx = (x1 + x2) // 2
                out.setdefault(reach.net, []).append(f"{reach.layer} {x2 - x1} ( {cx} {y1} ) ( {cx} {y2} )")
            else:
                cy = (y1 + y2) // 2
                out.setdefault(reach.net, []).append(f"{reach.layer} {y2 - y1} ( {x1} {cy} ) ( {x2} {cy} )")
    return out
