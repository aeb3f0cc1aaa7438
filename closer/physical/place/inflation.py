"""Routability-driven placement: cell inflation from the RUDY map, as RePlAce's routability mode
does it. After a placement, each cell in a GCell whose estimated demand / supply is above the
target counts as (ratio / target) ** exponent times its width in the legalizer's area balance
(its real width is what the row gets), the factors grow round by round where the congestion
stays, and the cells are placed again; the round with the least overflow over the target is kept.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from closer.physical.floorplan.floorplan import DBU, ROW_H, Layout
from closer.physical.io.lef import Macro, Tech
from closer.physical.io.netlist import Netlist
from closer.physical.place import place as placer
from closer.physical.place.congestion import CongestionMap, gcell_at, rudy


@dataclass(frozen=True)
class InflationRound:
    round: int            # 0: the placement before any inflation
    peak: float           # the map's largest demand / supply
    overflow: float       # sum over GCells of max(0, ratio - target)
    over_target: int      # GCells above the target
    hpwl_um: float
    inflated_cells: int   # cells counted larger than their width in this round's placement
    max_factor: float


def overflow(cmap: CongestionMap, target: float) -> float:
    return float(np.clip(cmap.ratio - target, 0, None).sum())


def cell_ratios(cmap: CongestionMap, netlist: Netlist, layout: Layout, macros: dict[str, Macro]) -> dict[str, float]:
    """Each placed cell's GCell ratio (the GCell of its centre)."""
    ratio = cmap.ratio
    out = {}
    for name in netlist.instances:
        cell = layout.cells.get(name)
        if cell is None:
            continue
        x = cell.x / DBU + macros[netlist.instances[name].master].width / 2
        y = (cell.y + ROW_H / 2) / DBU
        out[name] = float(ratio[gcell_at(x, y, cmap.gcell_um, ratio.shape)])
    return out


def grow(factors: dict[str, float], ratios: dict[str, float], target: float, exponent: float,
         max_factor: float) -> dict[str, float]:
    """The next round's factors: each cell above the target multiplied by (ratio / target) ** exponent,
    capped at `max_factor` in all."""
    return {name: min(max_factor, factors.get(name, 1.0) * max(1.0, ratios.get(name, 0.0) / target) ** exponent)
            for name in factors}


def inflate(netlist: Netlist, macros: dict[str, Macro], layout: Layout, tech: Tech, layers: int,
            cfg: placer.PlaceConfig) -> tuple[CongestionMap, list[InflationRound]]:
    """Inflation rounds on the placed `layout` (it is left at the best round); returns that round's
    map and every round's record. No round when the placement is at or below the target."""
    target = cfg.congestion_target
    widths = placer.site_widths(netlist, macros)
    factors = {n: 1.0 for n in widths}
    estimate = rudy(netlist, layout, macros, tech, layers)
    rounds = [_record(0, estimate, target, netlist, layout, factors)]
    best = (rounds[0].overflow, dict(layout.cells), dict(layout.io_pins), estimate)
    for k in range(1, cfg.inflation_rounds + 1):
        if rounds[-1].over_target == 0:
            break
        factors = grow(factors, cell_ratios(estimate, netlist, layout, macros), target,
                       cfg.inflation_exponent, cfg.max_inflation)
        placer.place_weighted(netlist, macros, layout, cfg, {n: widths[n] * f for n, f in factors.items()})
        estimate = rudy(netlist, layout, macros, tech, layers)
        rounds.append(_record(k, estimate, target, netlist, layout, factors))
        if rounds[-1].overflow < best[0]:
            best = (rounds[-1].overflow, dict(layout.cells), dict(layout.io_pins), estimate)
    layout.cells, layout.io_pins = best[1], best[2]
    return best[3], rounds


def _record(k: int, estimate: CongestionMap, target: float, netlist: Netlist, layout: Layout,
            factors: dict[str, float]) -> InflationRound:
    ratio = estimate.ratio
    return InflationRound(k, round(float(ratio.max()), 4), round(overflow(estimate, target), 4),
                          int((ratio > target).sum()), round(placer.hpwl(netlist, layout), 1),
                          sum(1 for f in factors.values() if f > 1.0), round(max(factors.values(), default=1.0), 3))


def metrics(rounds: list[InflationRound], target: float) -> dict[str, float | int]:
    best = min(rounds, key=lambda r: (r.overflow, r.round))
    return {"closer__place__inflation__target": target,
            "closer__place__inflation__rounds": len(rounds) - 1,
            "closer__place__inflation__kept_round": best.round,
            "closer__place__inflation__overflow_before": rounds[0].overflow,
            "closer__place__inflation__overflow_after": best.overflow,
            "closer__place__inflation__peak_before": rounds[0].peak,
            "closer__place__inflation__hpwl_before": rounds[0].hpwl_um}


def rounds_json(rounds: list[InflationRound]) -> list[dict]:
    return [asdict(r) for r in rounds]
