"""Global placement (quadratic, clique net model, conjugate gradient) and legalization by
recursive bisection into the rows, around the tap cells, on the site grid.

graywolf (the only other placer here) needs qflow's glue and was measured at minutes for 5k
cells; this placer is ~100 lines of numpy, deterministic, and keeps every cell origin on the
0.46 um site grid so the cells' pins line up with qrouter's tracks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from closer.errors import InputError
from closer.physical.floorplan.floorplan import (DBU, ROW_H, SITE_W, IoPin, Layout, Placed, io_slots)
from closer.physical.io.lef import Macro
from closer.physical.io.netlist import Netlist

MAX_CLIQUE = 40  # nets with more pins (clock, reset) use a star to their centroid instead


@dataclass
class PlaceConfig:
    io_passes: int = 2        # QP solves, IO pins re-assigned to the nearest free slot in between
    cg_iterations: int = 300
    spread_rounds: int = 10   # SimPL-style: QP pulled to the last legal positions, re-legalized
    anchor_weight0: float = 0.05
    anchor_growth: float = 1.6
    seed: int = 0             # IO-order seed: 0 spreads the pins in name order, else a shuffled order
    # congestion-driven spreading: after a first placement, each cell counts in the legalizer's
    # area balance as its width times (pins in its PEAK_BIN square / mean pins per occupied
    # square) ** spread_pin_peaks where above the mean, and the cells are placed again (its real
    # width is what the row gets); 0: one placement. The routability fallback's (flow.Replace)
    spread_pin_peaks: float = 0.0
    fallback_spread_pin_peaks: float = 2.0  # spread_pin_peaks of the fallback (0: no fallback)
    # routability mode (closer.physical.place.inflation): cells in GCells whose RUDY demand /
    # supply is above congestion_target count as larger, round by round; 0 rounds: off. The
    # target is above the gcd's 0.82 and mac16's 0.46 (they route as placed) and below the 1.01
    # PicoRV32's first placement reaches
    inflation_rounds: int = 3
    congestion_target: float = 0.9
    inflation_exponent: float = 2.0
    max_inflation: float = 3.0
    # IO pins at least this many slots apart (slots are every other met2 track, 0.92 um): 1 lets
    # pins take neighbouring slots. From large_min_instances instances large_io_spacing: on
    # PicoRV32 (409 pins) the pins packed at 0.92 um left 27 of them with no route start at all
    io_spacing: int = 1
    # sites kept free after each cell where its row has room (in the legalizer's area balance too;
    # two bisection leaves side by side may still abut). PicoRV32 stage 1: 336 failed nets -> 205 with 2 or 4
    padding_sites: int = 0
    large_min_instances: int = 3000
    large_io_spacing: int = 3
    large_padding_sites: int = 4
    # PicoRV32 stage 1 (trees of 24, 40 passes): 399 failed nets at the 0.9 target, 368 at 0.45
    large_congestion_target: float = 0.45
    # PicoRV32 (docs/physical.md): the fallback's spread placement routed worse twice (3,428 vs
    # 3,091 failed nets; 1,154 vs 1,038) and cost ~600 s of the flow, so large designs skip it
    large_fallback_spread_pin_peaks: float = 0.0

    def for_instances(self, instances: int) -> "PlaceConfig":
        """The settings a design of `instances` instances is placed with."""
        if self.large_min_instances and instances >= self.large_min_instances:
            return replace(self, io_spacing=max(self.io_spacing, self.large_io_spacing),
                           padding_sites=max(self.padding_sites, self.large_padding_sites),
                           congestion_target=min(self.congestion_target, self.large_congestion_target),
                           fallback_spread_pin_peaks=min(self.fallback_spread_pin_peaks,
                                                         self.large_fallback_spread_pin_peaks))
        return self


PEAK_BIN = 20_000  # dbu (20 um, ~7 rows): the squares pin density is counted in


def site_widths(netlist: Netlist, macros: dict[str, Macro]) -> dict[str, int]:
    """Each instance's width in placement sites."""
    return {n: round(macros[inst.master].width * DBU) // SITE_W for n, inst in netlist.instances.items()}


def _edges(netlist: Netlist, index: dict[str, int], io_index: dict[str, int]):
    """Two-pin connections (a, b, weight); IO pins and hard-macro pins (`inst/pin`, fixed) are
    numbered after the cells."""
    rows, cols, weights = [], [], []
    for net, terms in netlist.nets.items():
        ids = sorted({index[i] if i in index else io_index[p if i == "PIN" else f"{i}/{p}"] for i, p in terms
                      if i == "PIN" or i in index or f"{i}/{p}" in io_index})
        k = len(ids)
        if k < 2:
            continue
        if k <= MAX_CLIQUE:
            w = 1.0 / (k - 1)
            for a in range(k):
                for b in range(a + 1, k):
                    rows.append(ids[a]); cols.append(ids[b]); weights.append(w)
        else:
            # chain through the pins in id order (cheap, keeps the net together)
            for a in range(k - 1):
                rows.append(ids[a]); cols.append(ids[a + 1]); weights.append(2.0 / k)
    return np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64), np.array(weights)


def _solve(n: int, ea, eb, w, fixed_pos: dict[int, float], centre: float, iters: int,
           anchor: np.ndarray | None = None, anchor_w: float = 0.0, x0: np.ndarray | None = None) -> np.ndarray:
    """Minimise sum w (x_a - x_b)^2 (+ anchor_w (x - anchor)^2) over the n movable nodes;
    fixed nodes have index >= n."""
    diag = np.full(n, 1e-4)  # weak pull to the centre keeps isolated cells defined
    rhs = np.full(n, 1e-4 * centre)
    if anchor is not None and anchor_w > 0:
        diag += anchor_w
        rhs += anchor_w * anchor
    mov_a, mov_b = ea < n, eb < n
    both = mov_a & mov_b
    np.add.at(diag, ea[mov_a], w[mov_a])
    np.add.at(diag, eb[mov_b], w[mov_b])
    fixed_val = np.array([fixed_pos.get(int(i), 0.0) for i in range(n, n + len(fixed_pos))]) if fixed_pos else np.zeros(0)
    only_a = mov_a & ~mov_b
    only_b = mov_b & ~mov_a
    np.add.at(rhs, ea[only_a], w[only_a] * fixed_val[eb[only_a] - n])
    np.add.at(rhs, eb[only_b], w[only_b] * fixed_val[ea[only_b] - n])
    ba, bb, bw = ea[both], eb[both], w[both]

    def matvec(x):
        y = diag * x
        np.subtract.at(y, ba, bw * x[bb])
        np.subtract.at(y, bb, bw * x[ba])
        return y

    x = np.full(n, centre) if x0 is None else x0.copy()
    r = rhs - matvec(x)
    p = r / diag
    z = p.copy()
    rz = r @ z
    for _ in range(iters):
        ap = matvec(p)
        alpha = rz / max(p @ ap, 1e-30)
        x += alpha * p
        r -= alpha * ap
        if np.sqrt(r @ r) < 1e-6 * max(1.0, np.sqrt(rhs @ rhs)):
            break
        z = r / diag
        rz_new = r @ z
        p = z + (rz_new / rz) * p
        rz = rz_new
    return x


def place(netlist: Netlist, macros: dict[str, Macro], layout: Layout, cfg: PlaceConfig) -> None:
    _place(netlist, macros, layout, cfg, None)
    if cfg.spread_pin_peaks > 0:
        _place(netlist, macros, layout, cfg, _peak_weights(netlist, layout, macros, cfg.spread_pin_peaks))


def place_weighted(netlist: Netlist, macros: dict[str, Macro], layout: Layout, cfg: PlaceConfig,
                   weights: dict[str, float]) -> None:
    """One placement where each cell counts as `weights[cell]` sites in the legalizer's area balance."""
    _place(netlist, macros, layout, cfg, weights)


def _place(netlist: Netlist, macros: dict[str, Macro], layout: Layout, cfg: PlaceConfig,
           weights: dict[str, float] | None) -> None:
    """One placement; `weights`: each cell's sites in the bisection's area balance (None: width)."""
    names = sorted(n for n in netlist.instances if n not in layout.blocks)
    index = {n: i for i, n in enumerate(names)}
    ports = sorted(netlist.ports)
    io_index = {p: len(names) + k for k, p in enumerate(ports)}
    block_pins = block_pin_points(netlist, layout, macros)
    io_index |= {key: len(names) + len(ports) + k for k, key in enumerate(sorted(block_pins))}
    ea, eb, w = _edges(netlist, index, io_index)
    block_fx = {io_index[k]: float(x) for k, (x, _) in block_pins.items()}
    block_fy = {io_index[k]: float(y) for k, (_, y) in block_pins.items()}
    slots = io_slots(layout)
    if len(slots) < len(ports):
        raise InputError(f"{netlist.top}: {len(ports)} IO pins but only {len(slots)} pin slots")
    # first pass: inputs spread on the bottom edge, outputs on the top edge, in name (or seeded) order
    assign = _initial_io(netlist, ports, slots, cfg.seed)
    cx, cy = (layout.core_x0 + layout.core_x1) / 2, (layout.core_y0 + layout.core_y1) / 2
    for it in range(cfg.io_passes):
        fx = {io_index[p]: float(x) for p, (edge, x) in assign.items()} | block_fx
        fy = {io_index[p]: float(0 if edge == "bottom" else layout.die_h) for p, (edge, x) in assign.items()} | block_fy
        xs = _solve(len(names), ea, eb, w, fx, cx, cfg.cg_iterations)
        ys = _solve(len(names), ea, eb, w, fy, cy, cfg.cg_iterations)
        if it + 1 < cfg.io_passes:
            assign = _reassign_io(netlist, ports, slots, index, xs, ys, layout, cfg.io_spacing)
    layout.io_pins = {p: IoPin(p, netlist.ports[p], x, edge) for p, (edge, x) in assign.items()}
    widths = site_widths(netlist, macros)
    weights = {n: w + cfg.padding_sites for n, w in (weights or {n: float(widths[n]) for n in names}).items()
               if n in index}
    fx = {io_index[p]: float(x) for p, (edge, x) in assign.items()} | block_fx
    fy = {io_index[p]: float(0 if edge == "bottom" else layout.die_h) for p, (edge, x) in assign.items()} | block_fy
    best = None
    weight = cfg.anchor_weight0
    for rnd in range(cfg.spread_rounds + 1):
        layout.cells = {}
        cells = [(n, xs[index[n]], ys[index[n]], widths[n], weights[n]) for n in names]
        spill: list = []
        _bisect(layout, cells, 0, layout.rows, 0, layout.cols, netlist, spill, cfg.padding_sites)
        _place_spill(layout, widths, spill, netlist)
        layout.cells.update(layout.blocks)
        wl = hpwl(netlist, layout)
        if best is None or wl < best[0]:
            best = (wl, dict(layout.cells))
        if rnd == cfg.spread_rounds:
            break
        # legal centres become anchors; the next QP trades wire length against moving away
        ax = np.array([layout.cells[n].x + widths[n] * SITE_W / 2 for n in names], dtype=float)
        ay = np.array([layout.cells[n].y + ROW_H / 2 for n in names], dtype=float)
        xs = _solve(len(names), ea, eb, w, fx, cx, cfg.cg_iterations, ax, weight, ax)
        ys = _solve(len(names), ea, eb, w, fy, cy, cfg.cg_iterations, ay, weight, ay)
        weight *= cfg.anchor_growth
    layout.cells = best[1]


def _peak_weights(netlist: Netlist, layout: Layout, macros: dict[str, Macro], alpha: float) -> dict[str, float]:
    """Each placed cell's width, scaled by (pins in its PEAK_BIN square / mean) ** alpha above the mean."""
    square = {n: (c.x // PEAK_BIN, c.y // PEAK_BIN) for n, c in layout.cells.items()}
    pins: dict[tuple[int, int], int] = {}
    for terms in netlist.nets.values():
        for inst, _ in terms:
            if inst in square:
                pins[square[inst]] = pins.get(square[inst], 0) + 1
    mean = sum(pins.values()) / max(len(pins), 1)
    return {n: w * max(1.0, pins.get(square.get(n), 0) / mean) ** alpha for n, w in site_widths(netlist, macros).items()}


def block_pin_points(netlist: Netlist, layout: Layout, macros: dict[str, Macro]) -> dict[str, tuple[int, int]]:
    """`inst/pin` -> the die point (dbu) of each connected pin of each hard macro (the centre of
    its first port rectangle)."""
    return {f"{name}/{pin}": block_pin_point(placed, macros[placed.master], pin)
            for name, placed in layout.blocks.items() for pin in netlist.instances[name].pins
            if macros[placed.master].pins.get(pin) and macros[placed.master].pins[pin].rects}


def block_pin_point(placed: Placed, macro: Macro, pin: str) -> tuple[int, int]:
    """The die point (dbu) of a hard macro's pin: the centre of its first port rectangle."""
    _, (x1, y1, x2, y2) = macro.pins[pin].rects[0]
    x, y = (x1 + x2) / 2, (y1 + y2) / 2
    y = y if placed.orient == "N" else macro.height - y
    return placed.x + round(x * DBU), placed.y + round(y * DBU)


def hpwl(netlist: Netlist, layout: Layout) -> float:
    """Half-perimeter wire length (um) of the placed netlist, IO pins included."""
    total = 0
    for net, terms in netlist.nets.items():
        xs, ys = [], []
        for inst, pin in terms:
            if inst == "PIN":
                io = layout.io_pins.get(pin)
                if io:
                    xs.append(io.x); ys.append(0 if io.edge == "bottom" else layout.die_h)
            elif inst in layout.cells:
                c = layout.cells[inst]
                xs.append(c.x); ys.append(c.y + ROW_H // 2)
        if len(xs) > 1:
            total += max(xs) - min(xs) + max(ys) - min(ys)
    return total / DBU


def _initial_io(netlist: Netlist, ports: list[str], slots, seed: int = 0):
    if seed:
        ports = [ports[i] for i in np.random.default_rng(seed).permutation(len(ports))]
    bottom = [s for s in slots if s[0] == "bottom"]
    top = [s for s in slots if s[0] == "top"]
    ins = [p for p in ports if netlist.ports[p] == "input"]
    outs = [p for p in ports if netlist.ports[p] != "input"]
    if len(ins) > len(bottom):
        outs, ins = ins[len(bottom):] + outs, ins[:len(bottom)]
    assign = {}
    for group, side in ((ins, bottom), (outs, top)):
        if len(group) > len(side):
            raise InputError(f"{netlist.top}: too many IO pins for the pin slots")
        step = len(side) / max(len(group), 1)
        for k, p in enumerate(group):
            assign[p] = side[int(k * step + step / 2)]
    return assign


def _reassign_io(netlist, ports, slots, index, xs, ys, layout, spacing: int = 1):
    """Move each IO pin to the free slot nearest the centroid of the cells on its net; a taken
    slot also takes the `spacing - 1` slots on each side of it (less spacing when the edges have
    too few slots for that)."""
    mid = (layout.core_y0 + layout.core_y1) / 2
    wants = []
    for p in ports:
        cells = [index[i] for i, _ in netlist.nets.get(p, []) if i in index]
        if cells:
            x, y = float(np.mean(xs[cells])), float(np.mean(ys[cells]))
        else:
            x, y = (layout.core_x0 + layout.core_x1) / 2, mid
        wants.append((p, x, "bottom" if y < mid else "top"))
    wants.sort(key=lambda t: t[1])
    for s in range(max(spacing, 1), 0, -1):
        assign = _nearest_slots(wants, slots, s)
        if assign is not None:
            return assign
    raise InputError(f"{netlist.top}: too many IO pins for the pin slots")


def _nearest_slots(wants, slots, spacing: int):
    """Each (pin, x, edge) in turn to the free slot nearest x on its edge (the other edge when
    its own is full); None when the slots run out at this spacing."""
    free = {edge: sorted(x for e, x in slots if e == edge) for edge in ("bottom", "top")}
    xs = sorted({x for _, x in slots})
    pitch = xs[1] - xs[0] if len(xs) > 1 else 1
    assign = {}
    for p, x, edge in wants:
        if not free[edge]:
            edge = "top" if edge == "bottom" else "bottom"
        side = free[edge]
        if not side:
            return None
        taken = side[int(np.argmin([abs(s - x) for s in side]))]
        assign[p] = (edge, taken)
        side[:] = [s for s in side if abs(s - taken) >= spacing * pitch]
    return assign


def _free_cols(layout: Layout, row: int, c0: int, c1: int) -> list[int]:
    if row in layout.blocked_rows:
        return []
    taps = set()
    for c in layout.tap_cols.get(row, []):
        taps.add(c)
    return [c for c in range(c0, c1) if c not in taps]


def _capacity(layout: Layout, r0: int, r1: int, c0: int, c1: int) -> int:
    """Free sites in the region (sites minus tap cells), from per-row prefix counts."""
    prefix = layout.__dict__.setdefault("_tap_prefix", {})
    total = 0
    for r in range(r0, r1):
        if r in layout.blocked_rows:
            continue
        pre = prefix.get(r)
        if pre is None:
            taps = set(layout.tap_cols.get(r, []))
            pre = [0]
            for c in range(layout.cols):
                pre.append(pre[-1] + (c in taps))
            prefix[r] = pre
        total += (c1 - c0) - (pre[c1] - pre[c0])
    return total


def _bisect(layout: Layout, cells, r0, r1, c0, c1, netlist: Netlist, spill: list, padding: int = 0) -> None:
    if not cells:
        return
    if r1 - r0 == 1:
        _place_row(layout, cells, r0, c0, c1, netlist, spill, padding)
        return
    height = (r1 - r0) * ROW_H
    width = (c1 - c0) * SITE_W
    if height >= width or c1 - c0 < 64:
        rm = (r0 + r1) // 2
        first, second = (r0, rm, c0, c1), (rm, r1, c0, c1)
        key = 2
    else:
        cm = (c0 + c1) // 2
        first, second = (r0, r1, c0, cm), (r0, r1, cm, c1)
        key = 1
    cap1, cap2 = _capacity(layout, *first), _capacity(layout, *second)
    cells = sorted(cells, key=lambda c: (c[key], c[0]))
    total = sum(c[4] for c in cells)  # the cells' area weights (_area_weights)
    target = total * cap1 / max(cap1 + cap2, 1)
    acc, split = 0, 0
    for i, c in enumerate(cells):
        if acc + c[4] / 2 > target:
            break
        acc += c[4]
        split = i + 1
    _bisect(layout, cells[:split], *first, netlist, spill, padding)
    _bisect(layout, cells[split:], *second, netlist, spill, padding)


def _place_row(layout: Layout, cells, row: int, c0: int, c1: int, netlist: Netlist, spill: list,
               padding: int = 0) -> None:
    """Pack the cells left to right in x order, each at or after its wanted column and `padding`
    sites after the one before it (less where the row has too little room for that); a cell that
    no longer fits (fragments between taps) goes to `spill`, placed later in the nearest free gap."""
    free = set(_free_cols(layout, row, c0, c1))
    cells = sorted(cells, key=lambda c: (c[1], c[0]))
    slack = len(free) - sum(c[3] for c in cells)
    pad = min(padding, max(slack, 0) // max(len(cells), 1))
    slack -= pad * len(cells)
    cursor = c0
    for name, x, y, w, _ in cells:
        want = int(round((x - layout.core_x0) / SITE_W - w / 2))
        col = max(cursor, min(want, cursor + max(slack, 0)))
        while col + w <= c1 and not all(c in free for c in range(col, col + w)):
            col += 1
        if col + w > c1:
            spill.append((name, x, y, w))
            continue
        slack -= col - cursor
        _put(layout, netlist, name, row, col)
        free -= set(range(col, col + w))
        cursor = col + w + pad


def _put(layout: Layout, netlist: Netlist, name: str, row: int, col: int) -> None:
    layout.cells[name] = Placed(name, netlist.instances[name].master, layout.core_x0 + col * SITE_W,
                                layout.row_y(row), layout.row_orient(row))


def _place_spill(layout: Layout, macros_w: dict[str, int], spill, netlist: Netlist) -> None:
    """Put each spilled cell into the nearest free gap (rows searched outwards from its row)."""
    used = {r: set(range(layout.cols)) if r in layout.blocked_rows else set(layout.tap_cols.get(r, []))
            for r in range(layout.rows)}
    for p in layout.cells.values():
        if p.name in layout.blocks:
            continue
        r = (p.y - layout.core_y0) // ROW_H
        c = (p.x - layout.core_x0) // SITE_W
        used[r] |= set(range(c, c + macros_w[p.name]))

    def gaps(r):
        out, start = [], None
        for c in range(layout.cols + 1):
            free = c < layout.cols and c not in used[r]
            if free and start is None:
                start = c
            elif not free and start is not None:
                out.append((start, c))
                start = None
        return out

    for name, x, y, w in spill:
        want_r = (y - layout.core_y0) / ROW_H
        want_c = (x - layout.core_x0) / SITE_W
        best = None
        for r in sorted(range(layout.rows), key=lambda r: abs(r - want_r)):
            if best is not None and abs(r - want_r) * ROW_H > best[0]:
                break
            for a, b in gaps(r):
                if b - a < w:
                    continue
                c = int(min(max(round(want_c - w / 2), a), b - w))
                d = abs(r - want_r) * ROW_H + abs(c - want_c) * SITE_W
                if best is None or d < best[0]:
                    best = (d, r, c)
        if best is None:
            raise InputError(f"{layout.top}: no room left for {name}; lower the density")
        _, r, c = best
        used[r] |= set(range(c, c + w))
        _put(layout, netlist, name, r, c)
