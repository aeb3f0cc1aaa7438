"""Global routing over GCells with negotiated congestion (PathFinder, McMurchie and Ebeling 1995).

The die is cut into square GCells (the congestion map's: 5 rows, 13.6 um in sky130 hd). Each
boundary between two neighbouring GCells has a capacity in tracks: the tracks of the router's
layers of that direction that cross it (li1 left out: the cells take it), less the tracks the
power rails and straps cover. Each net is split into two-pin connections along a minimum
spanning tree of its pins' GCells; each connection first takes the cheaper of its two L shapes,
then the connections over overfull boundaries are ripped up and routed again by a maze search
whose boundary cost grows with the present overflow and with the history of overflow there,
until no boundary is over its capacity or the rounds run out. The result is each net's GCells
(its guide, what the detailed router may be told to stay in) and the overflow that is left.
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from closer.errors import InputError
from closer.physical.floorplan.floorplan import DBU, RAIL_W, Layout
from closer.physical.io.lef import Macro, Tech
from closer.physical.io.netlist import Netlist
from closer.physical.io.defio import rails, straps
from closer.physical.place.congestion import CELL_LAYERS, GCELL_ROWS, gcell_at, gcell_grid, overlaps, pin_points

Cell = tuple[int, int]  # (row, col)


@dataclass
class GrouteConfig:
    rounds: int = 12             # rip-up and reroute rounds at most
    present_factor: float = 1.0  # cost of present overflow, multiplied by present_growth each round
    present_growth: float = 1.6
    history_factor: float = 0.5  # cost added per round a boundary stays overfull
    margin: int = 3              # GCells a maze search may leave the connection's bounding box by
    utilization: float = 0.85    # share of a boundary's free tracks the global router may plan on

    def __post_init__(self):
        if not 0.0 < self.utilization <= 1.0:
            raise InputError(f"global route utilization {self.utilization} is outside (0, 1]")
        if self.rounds < 0 or self.margin < 0:
            raise InputError("global route rounds and margin must be 0 or more")


@dataclass(frozen=True)
class Capacity:
    gcell_um: float
    h: np.ndarray  # (rows, cols - 1): tracks across the boundary between (r, c) and (r, c + 1)
    v: np.ndarray  # (rows - 1, cols): between (r, c) and (r + 1, c)


@dataclass
class GlobalRoute:
    gcell_um: float
    capacity: Capacity
    usage_h: np.ndarray
    usage_v: np.ndarray
    guides: dict[str, list[Cell]]   # each net's GCells
    rounds: list[int] = field(default_factory=list)  # overfull boundaries after the first routing and each round

    @property
    def overflow(self) -> int:
        """Tracks over capacity, summed over the boundaries."""
        return int(np.clip(self.usage_h - self.capacity.h, 0, None).sum()
                   + np.clip(self.usage_v - self.capacity.v, 0, None).sum())

    @property
    def overfull(self) -> int:
        return _overfull(self.usage_h, self.usage_v, self.capacity)

    def wirelength_um(self) -> float:
        return float(self.usage_h.sum() + self.usage_v.sum()) * self.gcell_um

    def metrics(self) -> dict[str, float | int]:
        return {"closer__groute__gcells": int(self.usage_h.shape[0] * (self.usage_h.shape[1] + 1)),
                "closer__groute__overflow": self.overflow,
                "closer__groute__overfull_edges": self.overfull,
                "closer__groute__rounds": max(len(self.rounds) - 1, 0),
                "closer__groute__overfull_first": self.rounds[0] if self.rounds else 0,
                "closer__groute__wirelength": round(self.wirelength_um(), 1),
                "closer__groute__max_usage": round(float(max(_ratio(self.usage_h, self.capacity.h).max(initial=0),
                                                             _ratio(self.usage_v, self.capacity.v).max(initial=0))), 4)}


def _ratio(usage: np.ndarray, cap: np.ndarray) -> np.ndarray:
    return np.divide(usage, cap, out=np.where(usage > 0, np.inf, 0.0), where=cap > 0)


def capacity(layout: Layout, tech: Tech, layers: int, blockages: list[tuple[str, float, float, float, float]],
             cfg: GrouteConfig, gcell_rows: int = GCELL_ROWS) -> Capacity:
    """Boundary capacities of the die's GCell grid for the first `layers` routing layers;
    `blockages`: (layer, x1, y1, x2, y2) in um (rails, straps) whose tracks are taken."""
    gcell, rows, cols = gcell_grid(layout, gcell_rows)
    tracks_h, tracks_v = np.zeros((rows, cols)), np.zeros((rows, cols))  # per GCell, before blockages
    routed = [layer for layer in tech.routing_layers[:layers] if layer.name not in CELL_LAYERS]
    by_name = {layer.name: layer for layer in routed}
    for layer in routed:
        if layer.direction == "HORIZONTAL":
            tracks_h += gcell / layer.pitch_y
        else:
            tracks_v += gcell / layer.pitch_x
    edges_x, edges_y = np.arange(cols + 1) * gcell, np.arange(rows + 1) * gcell
    for name, x1, y1, x2, y2 in blockages:
        layer = by_name.get(name)
        if layer is None:
            continue
        overlap_x, overlap_y = overlaps(edges_x, x1, x2), overlaps(edges_y, y1, y2)
        if layer.direction == "HORIZONTAL":  # tracks covered across the shape's height, over its share of the GCell's length
            tracks_h -= np.outer((overlap_y + layer.pitch_y) / layer.pitch_y, overlap_x / gcell) * (overlap_y[:, None] > 0)
        else:
            tracks_v -= np.outer(overlap_y / gcell, (overlap_x + layer.pitch_x) / layer.pitch_x) * (overlap_x[None, :] > 0)
    tracks_h, tracks_v = np.clip(tracks_h, 0, None), np.clip(tracks_v, 0, None)
    h = np.floor(cfg.utilization * np.minimum(tracks_h[:, :-1], tracks_h[:, 1:]) + 1e-6)
    v = np.floor(cfg.utilization * np.minimum(tracks_v[:-1, :], tracks_v[1:, :]) + 1e-6)
    return Capacity(gcell, h, v)


def connections(points: dict[str, list[tuple[float, float]]], gcell: float, shape: tuple[int, int]) -> dict[str, list[tuple[Cell, Cell]]]:
    """Each net's two-pin connections: a minimum spanning tree (Manhattan, Prim) over its pins' GCells."""
    out = {}
    for net, pts in points.items():
        cells = sorted({gcell_at(x, y, gcell, shape) for x, y in pts})
        if len(cells) < 2:
            out[net] = []
            continue
        arr = np.array(cells)
        inside = np.zeros(len(cells), bool)
        inside[0] = True
        best = np.abs(arr - arr[0]).sum(1)
        parent = np.zeros(len(cells), int)
        edges = []
        for _ in range(len(cells) - 1):
            k = int(np.argmin(np.where(inside, np.iinfo(np.int64).max, best)))
            edges.append((cells[parent[k]], cells[k]))
            inside[k] = True
            dist = np.abs(arr - arr[k]).sum(1)
            closer_k = dist < best
            parent[closer_k] = k
            best = np.minimum(best, dist)
        out[net] = edges
    return out


BLOCKED_COST = 1e9


class _Grid:
    """Boundary usage and costs while routing."""

    def __init__(self, cap: Capacity, cfg: GrouteConfig):
        self.cap, self.cfg = cap, cfg
        self.use_h, self.use_v = np.zeros(cap.h.shape), np.zeros(cap.v.shape)
        self.hist_h, self.hist_v = np.zeros(cap.h.shape), np.zeros(cap.v.shape)
        self.present = cfg.present_factor

    def edge(self, a: Cell, b: Cell) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
        (r1, c1), (r2, c2) = a, b
        if r1 == r2:
            return self.use_h, self.cap.h, (r1, min(c1, c2))
        return self.use_v, self.cap.v, (min(r1, r2), c1)

    def cost(self, a: Cell, b: Cell) -> float:
        use, cap, idx = self.edge(a, b)
        hist = (self.hist_h if use is self.use_h else self.hist_v)[idx]
        over = use[idx] + 1 - cap[idx]
        # a boundary with no tracks (a macro) only when nothing else connects: the present and
        # history costs of a crowded channel beside a macro grow past any finite penalty
        return (1.0 + hist) * (1.0 + (self.present * over if over > 0 else 0.0)) + (BLOCKED_COST if cap[idx] <= 0 else 0.0)

    def add(self, path: list[Cell], amount: int) -> None:
        for a, b in zip(path, path[1:]):
            use, _, idx = self.edge(a, b)
            use[idx] += amount

    def _boundaries(self, path: list[Cell]):
        return (self.edge(a, b) for a, b in zip(path, path[1:]))

    def blocked(self, path: list[Cell]) -> bool:
        """Whether the path crosses a boundary with no tracks (a hard macro's obstructions)."""
        return any(cap[idx] <= 0 for _, cap, idx in self._boundaries(path))

    def overfull(self, path: list[Cell]) -> bool:
        return any(use[idx] > cap[idx] for use, cap, idx in self._boundaries(path))


def _line(a: Cell, b: Cell) -> list[Cell]:
    (r1, c1), (r2, c2) = a, b
    if r1 == r2:
        step = 1 if c2 >= c1 else -1
        return [(r1, c) for c in range(c1, c2 + step, step)]
    step = 1 if r2 >= r1 else -1
    return [(r, c1) for r in range(r1, r2 + step, step)]


def _l_shape(grid: _Grid, a: Cell, b: Cell) -> list[Cell]:
    """The cheaper of the two L shapes from a to b."""
    if a[0] == b[0] or a[1] == b[1]:
        return _line(a, b)
    options = []
    for corner in ((a[0], b[1]), (b[0], a[1])):
        path = _line(a, corner) + _line(corner, b)[1:]
        options.append((sum(grid.cost(p, q) for p, q in zip(path, path[1:])), path))
    return min(options)[1]


def _maze(grid: _Grid, a: Cell, b: Cell, shape: tuple[int, int], margin: int) -> list[Cell]:
    """The cheapest path from a to b inside their bounding box grown by `margin` (Dijkstra)."""
    rows, cols = shape
    r0, r1 = max(0, min(a[0], b[0]) - margin), min(rows - 1, max(a[0], b[0]) + margin)
    c0, c1 = max(0, min(a[1], b[1]) - margin), min(cols - 1, max(a[1], b[1]) + margin)
    dist = {a: 0.0}
    prev: dict[Cell, Cell] = {}
    heap = [(0.0, a)]
    while heap:
        d, cell = heapq.heappop(heap)
        if cell == b:
            break
        if d > dist[cell]:
            continue
        r, c = cell
        for nxt in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if not (r0 <= nxt[0] <= r1 and c0 <= nxt[1] <= c1):
                continue
            nd = d + grid.cost(cell, nxt)
            if nd < dist.get(nxt, float("inf")):
                dist[nxt] = nd
                prev[nxt] = cell
                heapq.heappush(heap, (nd, nxt))
    path = [b]
    while path[-1] != a:
        path.append(prev[path[-1]])
    return path[::-1]


def route(points: dict[str, list[tuple[float, float]]], cap: Capacity, cfg: GrouteConfig) -> GlobalRoute:
    """Global routing of the nets (`points`: each net's pin positions in um) on the grid of `cap`."""
    shape = (cap.h.shape[0], cap.v.shape[1])
    grid = _Grid(cap, cfg)
    conns = connections(points, cap.gcell_um, shape)
    paths: dict[tuple[str, int], list[Cell]] = {}
    # short connections first: they have the fewest detours
    order = sorted(((net, k) for net, edges in conns.items() for k in range(len(edges))),
                   key=lambda nk: (sum(abs(p - q) for p, q in zip(*conns[nk[0]][nk[1]])), nk))
    for net, k in order:
        a, b = conns[net][k]
        paths[(net, k)] = _l_shape(grid, a, b)
        grid.add(paths[(net, k)], 1)
    history = [_overfull(grid.use_h, grid.use_v, cap)]
    for _ in range(cfg.rounds):
        if history[-1] == 0:
            break
        grid.hist_h += cfg.history_factor * (grid.use_h > cap.h)
        grid.hist_v += cfg.history_factor * (grid.use_v > cap.v)
        for key in [key for key in order if grid.overfull(paths[key])]:
            grid.add(paths[key], -1)
            a, b = conns[key[0]][key[1]]
            paths[key] = _maze(grid, a, b, shape, cfg.margin)
            if grid.blocked(paths[key]):  # a macro between the pins: the way round leaves the margin
                paths[key] = _maze(grid, a, b, shape, max(shape))
            grid.add(paths[key], 1)
        grid.present *= cfg.present_growth
        history.append(_overfull(grid.use_h, grid.use_v, cap))
    guides: dict[str, set[Cell]] = {net: set() for net in conns}
    for (net, _), path in paths.items():
        guides[net].update(path)
    for net, pts in points.items():  # nets inside one GCell: that GCell
        if not guides[net]:
            guides[net].add(gcell_at(*pts[0], cap.gcell_um, shape))
    return GlobalRoute(cap.gcell_um, cap, grid.use_h, grid.use_v, {n: sorted(g) for n, g in guides.items()}, history)


def _overfull(use_h: np.ndarray, use_v: np.ndarray, cap: Capacity) -> int:
    """Boundaries whose usage is over their capacity."""
    return int((use_h > cap.h).sum() + (use_v > cap.v).sum())


def power_blockages(layout: Layout) -> list[tuple[str, float, float, float, float]]:
    """The power grid's shapes (met1 rails, met2 straps) as routing blockages, in um."""
    out = [("met1", x0 / DBU, (y - RAIL_W / 2) / DBU, x1 / DBU, (y + RAIL_W / 2) / DBU) for _, x0, x1, y in rails(layout)]
    return out + [("met2", st.x0 / DBU, st.y0 / DBU, st.x1 / DBU, st.y1 / DBU) for st in straps(layout)]


def macro_blockages(layout: Layout, macros: dict[str, Macro]) -> list[tuple[str, float, float, float, float]]:
    """Each placed hard macro's obstructions as routing blockages, in um: per layer, the box around
    its OBS rectangles (the SKY130 SRAMs' cover 97-98% of the macro on met1-met4, in 1-143
    rectangles; the box keeps overlapping rectangles from taking the same tracks twice)."""
    out = []
    for placed in layout.blocks.values():
        macro = macros[placed.master]
        by_layer: dict[str, list] = {}
        for layer, rect in macro.obs:
            by_layer.setdefault(layer, []).append(rect)
        for layer, rects in by_layer.items():
            x1, x2 = min(r[0] for r in rects), max(r[2] for r in rects)
            y1, y2 = min(r[1] for r in rects), max(r[3] for r in rects)
            if placed.orient != "N":  # FS: mirrored top to bottom
                y1, y2 = macro.height - y2, macro.height - y1
            out.append((layer, placed.x / DBU + x1, placed.y / DBU + y1, placed.x / DBU + x2, placed.y / DBU + y2))
    return out


def global_route(netlist: Netlist, layout: Layout, macros: dict[str, Macro], tech: Tech, layers: int,
                 blockages: list[tuple[str, float, float, float, float]], cfg: GrouteConfig) -> GlobalRoute:
    """Global routing of the placed `layout`."""
    return route(pin_points(netlist, layout, macros), capacity(layout, tech, layers, blockages, cfg), cfg)


def write_guides(result: GlobalRoute, path: Path, halo: int = 0) -> Path:
    """The guides as text for qrouter (patch 03): per net one line `net x1 y1 x2 y2 ...` in um, a
    rectangle per run of GCells in a row, grown by `halo` GCells."""
    g = result.gcell_um
    lines = []
    for net, cells in sorted(result.guides.items()):
        rects = []
        for r, c0, c1 in _row_runs(cells):
            rects.append(f"{(c0 - halo) * g:.3f} {(r - halo) * g:.3f} {(c1 + 1 + halo) * g:.3f} {(r + 1 + halo) * g:.3f}")
        lines.append(f"{net} " + " ".join(rects))
    path.write_text("\n".join(lines) + "\n")
    return path


def _row_runs(cells: list[Cell]) -> list[tuple[int, int, int]]:
    runs: list[tuple[int, int, int]] = []
    for r, c in sorted(cells):
        if runs and runs[-1][0] == r and runs[-1][2] == c - 1:
            runs[-1] = (r, runs[-1][1], c)
        else:
            runs.append((r, c, c))
    return runs


def write_json(result: GlobalRoute, path: Path) -> Path:
    path.write_text(json.dumps({"gcell_um": result.gcell_um, "rounds": result.rounds, **result.metrics(),
                                "capacity_h": result.capacity.h.tolist(), "capacity_v": result.capacity.v.tolist(),
                                "usage_h": result.usage_h.tolist(), "usage_v": result.usage_v.tolist()}) + "\n")
    return path
