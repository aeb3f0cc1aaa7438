"""Floorplan, tap cells, IO pins and power grid: the placed-layout model before routing.

All coordinates are integer database units (1 nm; DEF `UNITS DISTANCE MICRONS 1000`).
Grid facts used (sky130_fd_sc_hd tech LEF): site 0.46 x 2.72 um; li1/met2 tracks at 0.23 + 0.46k
in x, met1 tracks at 0.17 + 0.34k in y. The core origin sits on x = 0.46k and y = 0.34k and every
cell origin on x = 0.46k, so each cell's li1 pin columns land on the li1/met2 tracks and its
pins' rows on the met1 tracks (the "best configuration" of the issue).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from closer.errors import InputError
from closer.physical.floorplan.macros import MacroPlacement, check_placements
from closer.physical.io.lef import Macro
from closer.physical.io.netlist import Netlist

DBU = 1000
SITE_W = 460
ROW_H = 2720
TAP_MASTER = "sky130_fd_sc_hd__tapvpwrvgnd_1"
FILL_MASTERS = (("sky130_fd_sc_hd__fill_8", 8), ("sky130_fd_sc_hd__fill_4", 4),
                ("sky130_fd_sc_hd__fill_2", 2), ("sky130_fd_sc_hd__fill_1", 1))
RAIL_W = 480          # the cells' met1 VPWR/VGND pins are 0.48 um tall
STRAP_W = 1200        # met2 power straps beside the core (below 3 um: no wide-metal rules)
STRAP_GAP = 1400      # core edge (rail end) to strap edge
IO_PIN_W = 140        # met2 minimum width
IO_PIN_LEN = 680      # 0.14 x 0.68 = 0.0952 um^2 >= met2 min area 0.0676; covers 2 met1 rows


def um(dbu: int) -> float:
    return dbu / DBU


@dataclass
class Placed:
    name: str
    master: str
    x: int
    y: int
    orient: str  # "N" or "FS"
    fixed: bool = False


@dataclass
class IoPin:
    name: str
    direction: str
    x: int           # centre of the pin's met2 rectangle
    edge: str        # "bottom" | "top"


@dataclass(frozen=True)
class PowerStub:
    """A vertical met4 wire from a macro's power pin strip to the nearest rail of its net outside
    the macro, with an M3M4/M2M3/M1M2 via stack on the rail at (x, rail_y)."""

    instance: str
    pin: str
    net: str
    x: int
    rail_y: int
    pin_y: int      # the wire's other end, inside the pin strip
    width: int


@dataclass
class FloorplanConfig:
    density: float = 0.30          # standard-cell area / core area (gcd: 0.4 -> 28 unrouted, 0.3 -> 3)
    aspect: float = 1.0            # core height / width
    margin_x_sites: int = 14       # core to die, each side (room for the power straps)
    margin_y_rows: int = 2         # core to die, top and bottom (room for IO pins and escapes)
    tap_pitch_sites: int = 28      # 12.88 um; staggered by half on odd rows (max distance ~6.5 um)

    def __post_init__(self) -> None:
        if not 0.05 <= self.density <= 0.9:
            raise InputError(f"floorplan density {self.density} is outside 0.05..0.9")


@dataclass
class Layout:
    top: str
    die_w: int
    die_h: int
    core_x0: int
    core_y0: int
    cols: int
    rows: int
    cells: dict[str, Placed] = field(default_factory=dict)     # netlist instances
    physical: list[Placed] = field(default_factory=list)       # taps and fill
    io_pins: dict[str, IoPin] = field(default_factory=dict)
    tap_cols: dict[int, list[int]] = field(default_factory=dict)  # row -> tap columns
    blocks: dict[str, Placed] = field(default_factory=dict)     # hard macros (also in `cells`), fixed
    blocked_rows: set[int] = field(default_factory=set)         # rows a macro or its halo covers
    block_boxes: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)  # macro outlines
    power_stubs: list[PowerStub] = field(default_factory=list)  # macro power pins to the rails
    pin_reaches: list = field(default_factory=list)  # macro pins grown to the routing grid (route.blockpins)

    @property
    def core_x1(self) -> int:
        return self.core_x0 + self.cols * SITE_W

    @property
    def core_y1(self) -> int:
        return self.core_y0 + self.rows * ROW_H

    def row_y(self, row: int) -> int:
        return self.core_y0 + row * ROW_H

    def row_orient(self, row: int) -> str:
        return "N" if row % 2 == 0 else "FS"

    def rail_net(self, k: int) -> str:
        """Net of the rail on the k-th row boundary (k = 0..rows): VGND below even rows."""
        return "VGND" if k % 2 == 0 else "VPWR"

    @property
    def core_area_um2(self) -> float:
        return um(self.cols * SITE_W) * um(self.rows * ROW_H)

    @property
    def die_area_um2(self) -> float:
        return um(self.die_w) * um(self.die_h)


def cell_area_um2(netlist: Netlist, macros: dict[str, Macro]) -> float:
    """Standard-cell area (hard macros aside)."""
    return sum(macros[i.master].width * macros[i.master].height for i in netlist.instances.values()
               if not is_block(macros[i.master]))


def is_block(macro: Macro) -> bool:
    return macro.cls.split()[:1] == ["BLOCK"]


def block_instances(netlist: Netlist, macros: dict[str, Macro]) -> dict[str, str]:
    """The netlist's hard-macro instances, by their netlist name (not the DEF-safe one) -> safe name."""
    return {netlist.original.get(i.name, i.name): i.name for i in netlist.instances.values()
            if i.master in macros and is_block(macros[i.master])}


def check_masters(netlist: Netlist, macros: dict[str, Macro]) -> None:
    missing = sorted(m for m in netlist.masters() if m not in macros)
    if missing:
        raise InputError(f"netlist {netlist.top}: cells not in the cell LEF: {', '.join(missing[:10])}")


def make_floorplan(netlist: Netlist, macros: dict[str, Macro], cfg: FloorplanConfig,
                   placements: tuple[MacroPlacement, ...] = ()) -> Layout:
    """Core sized for the standard cells at `cfg.density`, widened to hold each hard macro at its
    placement and given rows until the rows no macro covers hold that area."""
    check_masters(netlist, macros)
    blocks = block_instances(netlist, macros)
    check_placements(placements, blocks)
    area = cell_area_um2(netlist, macros)
    tap_share = 1.0 / cfg.tap_pitch_sites
    core_area = area / cfg.density / (1.0 - tap_share)
    width_um = math.sqrt(core_area / cfg.aspect)
    n_io = len(netlist.ports)
    # IO pins go on every other met2 track of the top and bottom edges (one edge beside a macro)
    width_um = max(width_um, n_io / (1 if placements else 2) * 2 * um(SITE_W) + 4.0, 10.0)
    for p in placements:
        width_um = max(width_um, p.x_um + macros[netlist.instances[blocks[p.instance]].master].width + p.halo_um)
    cols = math.ceil(width_um / um(SITE_W))
    rows = max(2, math.ceil(core_area / (cols * um(SITE_W)) / um(ROW_H)))
    core_x0 = cfg.margin_x_sites * SITE_W
    core_y0 = cfg.margin_y_rows * ROW_H
    layout = Layout(netlist.top, 0, 0, core_x0, core_y0, cols, rows)
    for p in placements:
        inst = netlist.instances[blocks[p.instance]]
        _place_block(layout, inst.name, inst.master, macros[inst.master], p)
    _check_apart(layout, {blocks[p.instance]: p for p in placements})
    while layout.rows - len(layout.blocked_rows) < rows:
        layout.rows += 1
    layout.die_w = cols * SITE_W + 2 * core_x0
    layout.die_h = layout.rows * ROW_H + 2 * core_y0
    for name, placed in layout.blocks.items():
        layout.power_stubs += _power_stubs(layout, name, macros[placed.master])
    _insert_taps(layout, macros, cfg)
    return layout


def rail_ys(layout: Layout, net: str) -> list[int]:
    """y of every rail of `net` that no macro cuts (rails crossing a macro are left out)."""
    return [layout.row_y(k) for k in range(layout.rows + 1) if layout.rail_net(k) == net
            and not any(y0 - RAIL_W <= layout.row_y(k) <= y1 + RAIL_W for _, y0, _, y1 in layout.block_boxes.values())]


def power_strip(pin) -> tuple[float, float, float, float] | None:
    """A macro power pin's tallest met4 rectangle (µm, macro coordinates): where its stub starts."""
    strips = [r for layer, r in pin.rects if layer == "met4"]
    return max(strips, key=lambda r: r[3] - r[1]) if strips else None


def _power_stubs(layout: Layout, name: str, macro: Macro) -> list[PowerStub]:
    """For each power and ground pin of the macro: its tallest met4 strip, joined to the nearest
    rail of its net below the macro (above it when there is none below)."""
    placed = layout.blocks[name]
    x0, y0, x1, y1 = layout.block_boxes[name]
    stubs = []
    for pin in macro.pins.values():
        net = {"POWER": "VPWR", "GROUND": "VGND"}.get(pin.use)
        if net is None:
            continue
        strip = power_strip(pin)
        if strip is None:  # a power pin left unjoined would only show up as an LVS open
            raise InputError(f"macro {name} ({placed.master}): power pin {pin.name} has no met4 strip to join "
                             "to the rails (only met4-strap power pins are supported)")
        sx1, sy1, sx2, sy2 = strip
        if placed.orient == "FS":
            sy1, sy2 = macro.height - sy2, macro.height - sy1
        x = placed.x + round((sx1 + sx2) / 2 * DBU)
        width = round((sx2 - sx1) * DBU) // 10 * 10
        below = [y for y in rail_ys(layout, net) if y < y0]
        above = [y for y in rail_ys(layout, net) if y > y1]
        if below:
            stubs.append(PowerStub(name, pin.name, net, x, max(below), placed.y + round(sy1 * DBU) + width, width))
        elif above:
            stubs.append(PowerStub(name, pin.name, net, x, min(above), placed.y + round(sy2 * DBU) - width, width))
        else:
            raise InputError(f"macro {name}: no {net} rail above or below it to connect pin {pin.name} to")
    return stubs


def _check_apart(layout: Layout, placements: dict[str, MacroPlacement]) -> None:
    """No macro's outline may reach into another's outline or halo."""
    boxes = sorted(layout.block_boxes.items())
    for i, (a, (ax0, ay0, ax1, ay1)) in enumerate(boxes):
        for b, (bx0, by0, bx1, by1) in boxes[i + 1:]:
            halo = round(max(placements[a].halo_um, placements[b].halo_um) * DBU)
            if ax0 - halo < bx1 and bx0 < ax1 + halo and ay0 - halo < by1 and by0 < ay1 + halo:
                raise InputError(f"macro placements {placements[a].instance!r} and {placements[b].instance!r} "
                                 f"overlap (outline or halo)")


def _place_block(layout: Layout, name: str, master: str, macro: Macro, p: MacroPlacement) -> None:
    """The macro on the site grid (x) and a row boundary (y); its rows and its halo's blocked."""
    x = layout.core_x0 + round(p.x_um * DBU / SITE_W) * SITE_W
    y = layout.core_y0 + round(p.y_um * DBU / ROW_H) * ROW_H
    layout.blocks[name] = Placed(name, master, x, y, p.orient, fixed=True)
    layout.block_boxes[name] = (x, y, x + round(macro.width * DBU), y + round(macro.height * DBU))
    y0, y1 = y - round(p.halo_um * DBU), y + round(macro.height * DBU) + round(p.halo_um * DBU)
    first, last = max(0, (y0 - layout.core_y0) // ROW_H), -(-(y1 - layout.core_y0) // ROW_H)
    layout.blocked_rows |= set(range(first, last))
    layout.rows = max(layout.rows, last)


def _insert_taps(layout: Layout, macros: dict[str, Macro], cfg: FloorplanConfig) -> None:
    tap_sites = round(macros[TAP_MASTER].width * DBU) // SITE_W
    for row in range(layout.rows):
        if row in layout.blocked_rows:
            continue
        start = 0 if row % 2 == 0 else cfg.tap_pitch_sites // 2
        cols = list(range(start, layout.cols - tap_sites + 1, cfg.tap_pitch_sites))
        if layout.cols - 1 - cols[-1] > cfg.tap_pitch_sites // 2 + 1:
            cols.append(layout.cols - tap_sites)
        layout.tap_cols[row] = cols
        for c in cols:
            layout.physical.append(Placed(f"TAP_{row}_{c}", TAP_MASTER, layout.core_x0 + c * SITE_W,
                                          layout.row_y(row), layout.row_orient(row), fixed=True))


def io_slots(layout: Layout) -> list[tuple[str, int]]:
    """Candidate IO pin positions: every other met2 track inside the core's x range, on the top and
    bottom edges (not on an edge a macro's rows reach)."""
    xs = [layout.core_x0 + 230 + 2 * k * SITE_W for k in range(1, layout.cols // 2 - 1)]
    edges = [e for e, row in (("bottom", 0), ("top", layout.rows - 1)) if row not in layout.blocked_rows]
    return [(e, x) for e in edges for x in xs]


def insert_fill(layout: Layout, macros: dict[str, Macro]) -> None:
    """Fill every free site of every row so the rails and wells are continuous."""
    occupied: dict[int, list[tuple[int, int]]] = {r: [] for r in range(layout.rows) if r not in layout.blocked_rows}
    for p in [*layout.cells.values(), *layout.physical]:
        if p.name in layout.blocks:
            continue
        row = (p.y - layout.core_y0) // ROW_H
        c0 = (p.x - layout.core_x0) // SITE_W
        occupied[row].append((c0, c0 + round(macros[p.master].width * DBU) // SITE_W))
    for row, spans in occupied.items():
        spans.sort()
        cursor = 0
        for a, b in [*spans, (layout.cols, layout.cols)]:
            if a < cursor:
                raise InputError(f"placement overlap in row {row} at site {a}")
            gap = a - cursor
            while gap > 0:
                for master, w in FILL_MASTERS:
                    if w <= gap:
                        layout.physical.append(Placed(f"FILL_{row}_{cursor}", master,
                                                      layout.core_x0 + cursor * SITE_W, layout.row_y(row),
                                                      layout.row_orient(row), fixed=True))
                        cursor += w
                        gap -= w
                        break
            cursor = max(cursor, b)
