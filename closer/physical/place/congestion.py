"""Routing congestion estimated from a placement: RUDY (rectangular uniform wire density, Spindler
and Johannes 2007) on a grid of square GCells, against the track supply of the tech LEF.

Each net spreads its half-perimeter wire length uniformly over its pins' bounding box: its
horizontal wire (the box's width) gives every point of the box a horizontal demand of 1/height
(µm of wire per µm²), its vertical wire 1/width; a GCell's demand is that density times its
overlap with the box. The supply of a GCell in one direction is the tracks the routing layers of
that direction put through it (the GCell's extent across the direction / the layer's pitch) times
its length along it. li1 is left out: the cells' own pins and wiring take it. The ratio demand /
supply per GCell and direction is the estimate (above 1: more wire than tracks); it says where
the router will struggle, not what it will do.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from closer.physical.floorplan.floorplan import DBU, ROW_H, Layout
from closer.physical.io.lef import Macro, Tech
from closer.physical.io.netlist import Netlist
from closer.physical.place.place import block_pin_point

GCELL_ROWS = 5  # a GCell's side in cell rows (13.6 um in sky130 hd)
CELL_LAYERS = ("li1",)  # taken by the cells themselves: no supply for the router's nets


@dataclass(frozen=True)
class CongestionMap:
    gcell_um: float
    demand_h: np.ndarray  # (rows, cols): µm of horizontal wire
    demand_v: np.ndarray
    supply_h: float       # µm of horizontal track per GCell
    supply_v: float

    @property
    def ratio(self) -> np.ndarray:
        """Per GCell, the larger of the two directions' demand / supply; a direction the router's
        layers give no tracks (a run limited to li1 and met1) is left out, not counted infinite."""
        parts = [demand / supply for demand, supply in ((self.demand_h, self.supply_h), (self.demand_v, self.supply_v))
                 if supply > 0]
        return np.maximum.reduce(parts) if parts else np.zeros_like(self.demand_h)

    def metrics(self) -> dict[str, float | int]:
        ratio = self.ratio
        return {"closer__place__congestion__gcells": int(ratio.size),
                "closer__place__congestion__peak": round(float(ratio.max()), 4) if ratio.size else 0.0,
                "closer__place__congestion__mean": round(float(ratio.mean()), 4) if ratio.size else 0.0,
                "closer__place__congestion__over_one": int((ratio > 1.0).sum())}

    def to_json(self) -> dict:
        return {"gcell_um": self.gcell_um, "supply_h_um": self.supply_h, "supply_v_um": self.supply_v,
                "demand_h_um": np.round(self.demand_h, 2).tolist(), "demand_v_um": np.round(self.demand_v, 2).tolist()}


def gcell_grid(layout: Layout, gcell_rows: int = GCELL_ROWS) -> tuple[float, int, int]:
    """The die's square GCell grid: (side in um, rows, cols); the last row and column may stick out."""
    gcell = gcell_rows * ROW_H / DBU
    return (gcell, max(1, int(np.ceil(layout.die_h / DBU / gcell))), max(1, int(np.ceil(layout.die_w / DBU / gcell))))


def gcell_at(x: float, y: float, gcell: float, shape: tuple[int, int]) -> tuple[int, int]:
    """(row, col) of the GCell holding the point (um); points on the die's top or right edge go to the last one."""
    return min(shape[0] - 1, int(y // gcell)), min(shape[1] - 1, int(x // gcell))


def overlaps(edges: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Per grid interval (between consecutive `edges`), its overlap with [lo, hi]."""
    return np.clip(np.minimum(edges[1:], hi) - np.maximum(edges[:-1], lo), 0, None)


def pin_points(netlist: Netlist, layout: Layout, macros: dict[str, Macro]) -> dict[str, list[tuple[float, float]]]:
    """Each net's pin positions in µm: a cell pin at its cell's centre, an IO pin at its die edge."""
    centre = {}
    for name, cell in layout.cells.items():
        width = macros[netlist.instances[name].master].width if name in netlist.instances else 0.0
        centre[name] = (cell.x / DBU + width / 2, (cell.y + ROW_H / 2) / DBU)
    points: dict[str, list[tuple[float, float]]] = {}
    for net, terms in netlist.nets.items():
        found = []
        for inst, pin in terms:
            if inst == "PIN":
                io = layout.io_pins.get(pin)
                if io is not None:
                    found.append((io.x / DBU, 0.0 if io.edge == "bottom" else layout.die_h / DBU))
            elif inst in layout.blocks:
                x, y = block_pin_point(layout.blocks[inst], macros[layout.blocks[inst].master], pin)
                found.append((x / DBU, y / DBU))
            elif inst in centre:
                found.append(centre[inst])
        if len(found) > 1:
            points[net] = found
    return points


def rudy(netlist: Netlist, layout: Layout, macros: dict[str, Macro], tech: Tech, layers: int,
         gcell_rows: int = GCELL_ROWS) -> CongestionMap:
    """The RUDY map of the placed `layout` over the die, with the supply of the first `layers`
    routing layers (the router's)."""
    gcell, rows, cols = gcell_grid(layout, gcell_rows)
    routed = [layer for layer in tech.routing_layers[:layers] if layer.name not in CELL_LAYERS]
    supply_h = sum(gcell / layer.pitch_y * gcell for layer in routed if layer.direction == "HORIZONTAL")
    supply_v = sum(gcell / layer.pitch_x * gcell for layer in routed if layer.direction == "VERTICAL")
    min_extent = min((min(layer.pitch_x, layer.pitch_y) for layer in routed), default=0.46)
    demand_h, demand_v = np.zeros((rows, cols)), np.zeros((rows, cols))
    edges_x, edges_y = np.arange(cols + 1) * gcell, np.arange(rows + 1) * gcell
    for found in pin_points(netlist, layout, macros).values():
        xs, ys = [p[0] for p in found], [p[1] for p in found]
        x1, x2, y1, y2 = min(xs), max(xs), min(ys), max(ys)
        w, h = max(x2 - x1, min_extent), max(y2 - y1, min_extent)
        x2, y2 = x1 + w, y1 + h
        area = np.outer(overlaps(edges_y, y1, y2), overlaps(edges_x, x1, x2))
        demand_h += area / h
        demand_v += area / w
    return CongestionMap(gcell, demand_h, demand_v, supply_h, supply_v)


def write_json(congestion: CongestionMap, path: Path) -> Path:
    path.write_text(json.dumps(congestion.to_json()) + "\n")
    return path


def read_json(path: Path) -> CongestionMap:
    data = json.loads(path.read_text())
    return CongestionMap(data["gcell_um"], np.array(data["demand_h_um"]), np.array(data["demand_v_um"]),
                         data["supply_h_um"], data["supply_v_um"])


def write_png(congestion: CongestionMap, path: Path, title: str,
              unrouted: dict[str, tuple[float, float]] | None = None) -> Path:
    """The map as a heat map (demand / supply per GCell, the larger direction; 1 is the supply);
    `unrouted`: per net the router left unrouted, the point (um) where its search failed, drawn
    over the map."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratio = congestion.ratio
    rows, cols = ratio.shape
    fig, ax = plt.subplots(figsize=(6, 6 * rows / max(cols, 1) + 0.6))
    image = ax.imshow(ratio, origin="lower", cmap="inferno", vmin=0, vmax=max(1.0, float(ratio.max())),
                      extent=(0, cols * congestion.gcell_um, 0, rows * congestion.gcell_um))
    fig.colorbar(image, ax=ax, label="RUDY demand / track supply")
    if unrouted:
        xs, ys = zip(*unrouted.values())
        ax.scatter(xs, ys, s=14, marker="x", color="cyan", linewidths=1,
                   label=f"{len(unrouted)} unrouted nets: where the search failed")
        ax.legend(loc="upper right", fontsize=8)
    ax.set_xlabel("x (µm)")
    ax.set_ylabel("y (µm)")
    ax.set_title(f"{title}\npeak {ratio.max():.2f}, {int((ratio > 1).sum())} of {ratio.size} GCells over 1", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
