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
    return sum(macros[i.master].width * macros[i.master].height for i in netlist.instances.values())


def check_masters(netlist: Netlist, macros: dict[str, Macro]) -> None:
    missing = sorted(m for m in netlist.masters() if m not in macros)
    if missing:
        raise InputError(f"netlist {netlist.top}: cells not in the cell LEF: {', '.join(missing[:10])}")


def make_floorplan(netlist: Netlist, macros: dict[str, Macro], cfg: FloorplanConfig) -> Layout:
    check_masters(netlist, macros)
    area = cell_area_um2(netlist, macros)
    tap_share = 1.0 / cfg.tap_pitch_sites
    core_area = area / cfg.density / (1.0 - tap_share)
    width_um = math.sqrt(core_area / cfg.aspect)
    n_io = len(netlist.ports)
    # IO pins go on every other met2 track of the top and bottom edges
    width_um = max(width_um, n_io / 2 * 2 * um(SITE_W) + 4.0, 10.0)
    cols = math.ceil(width_um / um(SITE_W))
    rows = max(2, math.ceil(core_area / (cols * um(SITE_W)) / um(ROW_H)))
    core_x0 = cfg.margin_x_sites * SITE_W
    core_y0 = cfg.margin_y_rows * ROW_H
    die_w = cols * SITE_W + 2 * core_x0
    die_h = rows * ROW_H + 2 * core_y0
    layout = Layout(netlist.top, die_w, die_h, core_x0, core_y0, cols, rows)
    _insert_taps(layout, macros, cfg)
    return layout


def _insert_taps(layout: Layout, macros: dict[str, Macro], cfg: FloorplanConfig) -> None:
    tap_sites = round(macros[TAP_MASTER].width * DBU) // SITE_W
    for row in range(layout.rows):
        start = 0 if row % 2 == 0 else cfg.tap_pitch_sites // 2
        cols = list(range(start, layout.cols - tap_sites + 1, cfg.tap_pitch_sites))
        if layout.cols - 1 - cols[-1] > cfg.tap_pitch_sites // 2 + 1:
            cols.append(layout.cols - tap_sites)
        layout.tap_cols[row] = cols
        for c in cols:
            layout.physical.append(Placed(f"TAP_{row}_{c}", TAP_MASTER, layout.core_x0 + c * SITE_W,
                                          layout.row_y(row), layout.row_orient(row), fixed=True))


def io_slots(layout: Layout) -> list[tuple[str, int]]:
    """Candidate IO pin positions: every other met2 track inside the core's x range, both edges."""
    xs = [layout.core_x0 + 230 + 2 * k * SITE_W for k in range(1, layout.cols // 2 - 1)]
    return [("bottom", x) for x in xs] + [("top", x) for x in xs]


def insert_fill(layout: Layout, macros: dict[str, Macro]) -> None:
    """Fill every free site of every row so the rails and wells are continuous."""
    occupied: dict[int, list[tuple[int, int]]] = {r: [] for r in range(layout.rows)}
    for p in [*layout.cells.values(), *layout.physical]:
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
