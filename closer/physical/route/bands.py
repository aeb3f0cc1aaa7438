"""Band routing: a large die is cut into bands of whole rows and qrouter routes each band alone,
two at a time, instead of the whole die at once.

Why: qrouter's rip-up and reroute (stage 2) converges on a few thousand nets and diverges on
ten thousand (PicoRV32, 9.5k nets: every stage-2 pass on the whole die adds failed nets, with
or without a congestion history), while a band's stage 2 does converge. Measured on PicoRV32 it
does not pay yet: the bands' stage 1 fails far more nets (a crossing net is two nets pinned to
fixed columns), and after stage 2 the central bands still end at 14-72 failed nets each, about
the whole die's stage 1 in all; so it is off by default (`BandConfig.min_nets = 0`), an option
to build on (docs/physical.md "Placement for routing, band routing, and what stage 1 leaves").

How the bands fit together. A band boundary is a row boundary, where the met1 rail already
takes the two met1 tracks beside it. Each band gets its own DEF (closer.physical.io.defio,
`Band`): its rows, components, the rails on its edges, the die-edge IO pins it touches, and
the horizontal tracks strictly inside it, so no wire of one band can reach the other's tracks.
A net with terminals on both sides of a boundary crosses it once, on a met2 column of its own
(`Crossing`): each band gets a pin on its track nearest the boundary at that column, routes to
it, and the merged layout joins the two pins with a met2 segment across the rail line. The
columns are given out along each boundary by the crossing's wanted x (the terminals nearest
the boundary on both sides), at least `crossing_spacing` columns apart where the boundary has
room. The bands' wiring and pin stubs are merged into one routed DEF of the whole design, and
qrouter reads that DEF once more to write every net's RC tree (`rc_from_def`).
"""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from closer import procs
from closer.errors import InputError
from closer.physical.floorplan.floorplan import DBU, ROW_H, Layout
from closer.physical.io import defio
from closer.physical.io.defnets import block_name, net_blocks, stubs, wire_segments, wiring, with_stubs
from closer.physical.io.lef import Macro, Tech
from closer.physical.io.netlist import Netlist
from closer.physical.route import route as router

# the vertical layers a crossing may use. Not met4: qrouter finds a met4 pin on a band's outer row
# "completely obstructed" (no tap; measured on PicoRV32's band 0, where the routing of the whole
# die had crossed on those very met4 points)
CROSSING_LAYERS = ("met2",)


@dataclass
class BandConfig:
    min_nets: int = 0             # designs with this many nets and more are routed band by band (0: never)
    rows: int = 24                # rows per band (65 um in sky130 hd; PicoRV32's 192 rows: 8 bands)
    crossing_spacing: int = 2     # met2 columns between two crossings of a boundary, where it has room
    workers: int = 2              # bands routed at once
    crossing_nets_first: bool = False  # a band routes the nets with crossing pins before its own
                                      # (PicoRV32: stage 1 worse, 58 -> 108 in band 0; stage 2 mixed)
    # stage 2 per band: PicoRV32's central bands stayed flat over the masks 10..70 and dropped at
    # 80 (220 -> 62 failed nets), so a band starts there
    schedule: tuple[tuple[str, int], ...] = (("80", 10), ("100", 10), ("none", 20), ("none", 20), ("none", 40),
                                             ("none", 40), ("none", 60), ("none", 60), ("none", 80), ("none", 80),
                                             ("none", 100), ("none", 100))
    patience: int = 15            # stage-2 passes without a new best before a band stops (the whole
                                  # schedule: PicoRV32's band 7 went 36 -> 9 -> 3 -> 0 over 11 passes)

    def __post_init__(self) -> None:
        if self.rows < 2 or self.crossing_spacing < 1 or self.workers < 1:
            raise InputError("band routing: rows >= 2, crossing_spacing >= 1 and workers >= 1")

    def applies(self, nets: int) -> bool:
        return bool(self.min_nets) and nets >= self.min_nets


@dataclass(frozen=True)
class Crossing:
    net: str
    boundary: int   # between band `boundary` and band `boundary + 1`
    x: int          # the column (dbu)
    layer: str      # a vertical routing layer (CROSSING_LAYERS)
    from_routing: bool = False  # where the routing of the whole die crossed


@dataclass
class BandResult:
    band: defio.Band
    nets: int
    components: int
    crossing_pins: int
    result: router.RouteResult


@dataclass
class BandRouting:
    bands: list[BandResult] = field(default_factory=list)
    crossings: list[Crossing] = field(default_factory=list)

    def failed(self) -> list[str]:
        return sorted({n for b in self.bands for n in b.result.failed})


def plan(layout: Layout, cfg: BandConfig) -> list[defio.Band]:
    """The bands: `cfg.rows` rows each (the rows shared out evenly), the first and last reaching
    the die edges."""
    count = max(1, round(layout.rows / cfg.rows))
    cuts = [round(k * layout.rows / count) for k in range(count + 1)]
    bands = []
    for k in range(count):
        y0 = 0 if k == 0 else layout.row_y(cuts[k])
        y1 = layout.die_h if k == count - 1 else layout.row_y(cuts[k + 1])
        # the tracks strictly inside: a boundary (a rail line) is on no track of either band
        bands.append(defio.Band(cuts[k], cuts[k + 1], y0, y1, y0 + (1 if k else 0), y1 - (1 if k < count - 1 else 0)))
    return bands


def _terminal_points(netlist: Netlist, layout: Layout, macros: dict[str, Macro]) -> dict[str, list[tuple[str, str, int, int]]]:
    """Each net's terminals with a position: (instance or "PIN", pin, x, y) in dbu (a cell pin at
    its cell's centre, an IO pin at its die edge)."""
    out: dict[str, list[tuple[str, str, int, int]]] = {}
    for net, terms in netlist.nets.items():
        found = []
        for inst, pin in terms:
            if inst == "PIN":
                io = layout.io_pins.get(pin)
                if io is not None:
                    found.append((inst, pin, io.x, 0 if io.edge == "bottom" else layout.die_h))
            else:
                cell = layout.cells[inst]
                width = round(macros[netlist.instances[inst].master].width * DBU)
                found.append((inst, pin, cell.x + width // 2, cell.y + ROW_H // 2))
        out[net] = found
    return out


def _band_of(y: int, bands: list[defio.Band]) -> int:
    for k, band in enumerate(bands):
        if y < band.y1:
            return k
    return len(bands) - 1


def _slots(layout: Layout, tech: Tech) -> dict[str, list[int]]:
    """Per crossing layer, the columns a crossing may take: on qrouter's grid for the layer (the
    base grid of the finest vertical pitch, every n-th column for a coarser layer), inside the
    core and a micron clear of its sides."""
    base = min((lay for lay in tech.routing_layers if lay.direction == "VERTICAL" and lay.name != "li1"),
               key=lambda lay: lay.pitch_x)
    pitch0, offset0 = round(base.pitch_x * DBU), round(base.offset_x * DBU)
    lo, hi = layout.core_x0 + DBU, layout.core_x1 - DBU
    out = {}
    for name in CROSSING_LAYERS:
        step = round(tech.layer(name).pitch_x * DBU) // pitch0
        first = offset0 + (step - 1) * pitch0  # met4: 0.69 = 0.23 + 0.46 (qrouter's 1-of-2 columns)
        out[name] = [x for x in range(first, layout.die_w, step * pitch0) if lo <= x <= hi]
    return out


def routed_crossings(routed_text: str, bands: list[defio.Band]) -> dict[tuple[str, int], list[tuple[str, int]]]:
    """Where a routing of the whole die (qrouter's stage 1) crosses each band boundary: per (net,
    boundary), the (layer, x) of its vertical wires on a crossing layer across the boundary line."""
    lines = [band.y1 for band in bands[:-1]]
    out: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for block in net_blocks(routed_text)[2]:
        name = block_name(block)
        if not name:
            continue
        for layer, (x1, y1), (x2, y2) in wire_segments(block):
            if layer not in CROSSING_LAYERS or x1 != x2:
                continue
            for b, line in enumerate(lines):
                if min(y1, y2) < line < max(y1, y2):
                    out.setdefault((name, b), []).append((layer, x1))
    return out


def crossings(netlist: Netlist, layout: Layout, macros: dict[str, Macro], tech: Tech,
              bands: list[defio.Band], cfg: BandConfig,
              routed: dict[tuple[str, int], list[tuple[str, int]]] | None = None,
              in_use: set[tuple[int, str, int]] = frozenset(), only: set[str] | None = None) -> list[Crossing]:
    """One crossing per net and boundary it spans. Its wanted x is the median x of the (up to)
    three terminals nearest the boundary on each side. With `routed` (routed_crossings of a
    routing of the whole die), a net that crossed there takes first, of the slots it crossed on,
    the one nearest its wanted x. The others, in x order, take the free slot (a column of a
    crossing layer) nearest their wanted x, a taken slot keeping the `cfg.crossing_spacing - 1`
    columns of its layer on either side free while the boundary has room for that. `in_use`:
    (boundary, layer, x) slots already in use; `only`: the nets to give crossings (all: None)."""
    points = _terminal_points(netlist, layout, macros)
    ports = {p for p in netlist.ports if p.startswith(PIN_PREFIX)}
    if ports:
        raise InputError(f"band routing names its pins {PIN_PREFIX}*: the design has ports {sorted(ports)[:3]}")
    wanted: dict[int, list[tuple[int, str]]] = {b: [] for b in range(len(bands) - 1)}
    for net, found in points.items():
        if len(found) < 2 or (only is not None and net not in only):
            continue
        sides = [_band_of(y, bands) for _, _, _, y in found]
        for b in range(min(sides), max(sides)):
            line = bands[b].y1
            below = sorted((line - y, x) for (_, _, x, y), s in zip(found, sides) if s <= b)[:3]
            above = sorted((y - line, x) for (_, _, x, y), s in zip(found, sides) if s > b)[:3]
            xs = sorted(x for _, x in below + above)
            wanted[b].append((xs[len(xs) // 2], net))
    slots = _slots(layout, tech)
    total = sum(len(v) for v in slots.values())
    out = []
    for b, wants in wanted.items():
        if len(wants) > total:
            raise InputError(f"band boundary {b}: {len(wants)} nets cross it but it has {total} crossing columns; "
                             "use taller bands")
        spacing = cfg.crossing_spacing if len(wants) * (2 * cfg.crossing_spacing - 1) <= total else 1
        free = {layer: [x for x in xs if (b, layer, x) not in in_use] for layer, xs in slots.items()}
        placed = set()
        for x, net in sorted(wants):
            options = [(abs(cx - x), layer, cx) for layer, cx in (routed or {}).get((net, b), [])
                       if cx in free.get(layer, ())]
            if options:
                _, layer, taken = min(options)
                free[layer].remove(taken)
                out.append(Crossing(net, b, taken, layer, True))
                placed.add(net)
        for x, net in sorted(wants):
            if net in placed:
                continue
            layer, k = min(((layer, i) for layer, xs in free.items() for i in range(len(xs))),
                           key=lambda li: (abs(free[li[0]][li[1]] - x), li[0]))
            taken = free[layer][k]
            pitch = slots[layer][1] - slots[layer][0]
            free[layer] = [c for c in free[layer] if abs(c - taken) >= spacing * pitch]
            out.append(Crossing(net, b, taken, layer))
    return out


PIN_PREFIX = "closer_band"


def pin_name(c: Crossing) -> str:
    return f"{PIN_PREFIX}{c.boundary}_{c.net}"


def _pin_y(c: Crossing, bands: list[defio.Band], band: int, pitch_y: int) -> int:
    """The crossing's pin in `band`: on the band's horizontal track nearest the boundary line."""
    line = bands[c.boundary].y1
    return line - pitch_y // 2 if band == c.boundary else line + pitch_y // 2


def band_nets(netlist: Netlist, layout: Layout, macros: dict[str, Macro], bands: list[defio.Band],
              cross: list[Crossing], tech: Tech) -> list[tuple[dict[str, list[tuple[str, str]]], tuple[defio.ExtraPin, ...]]]:
    """Per band, each net's terminals inside it (crossing pins as ("PIN", name)) and its crossing pins."""
    pitch_y = round(tech.layer("met1").pitch_y * DBU)
    points = _terminal_points(netlist, layout, macros)
    out: list[tuple[dict[str, list[tuple[str, str]]], list[defio.ExtraPin]]] = [({}, []) for _ in bands]
    for net, found in points.items():
        for inst, pin, _, y in found:
            out[_band_of(y, bands)][0].setdefault(net, []).append((inst, pin))
    for c in cross:
        for k in (c.boundary, c.boundary + 1):
            name = pin_name(c)
            out[k][0].setdefault(c.net, []).append(("PIN", name))
            out[k][1].append(defio.ExtraPin(name, c.net, c.x, _pin_y(c, bands, k, pitch_y), c.layer,
                                            round(tech.layer(c.layer).width * DBU)))
    return [(nets, tuple(pins)) for nets, pins in out]


def edge_obstructions(layout: Layout, tech: Tech, bands: list[defio.Band], k: int, cross: list[Crossing],
                      pitch_y: int) -> tuple[str, ...]:
    """qrouter `obstruction` lines for band `k`: the crossing layers on its rows next to a boundary,
    but for the crossings' own columns. Without them a wire of this band could end there under a
    via pad of another net's wire ending on the other band's row, 0.34 um away (m2.2, m4.2)."""
    lines = []
    for b, y in ((k - 1, bands[k].y0 + pitch_y // 2), (k, bands[k].y1 - pitch_y // 2)):
        if not 0 <= b < len(bands) - 1:
            continue
        for layer in CROSSING_LAYERS:
            lay = tech.layer(layer)
            pitch, half_w = round(lay.pitch_x * DBU), round(lay.width * DBU) // 2
            keep = sorted(c.x for c in cross if c.boundary == b and c.layer == layer)
            x0 = 0
            for x in [*keep, layout.die_w + pitch]:
                x1 = x - pitch // 2
                if x1 > x0:
                    lines.append(f"obstruction {x0 / DBU:.3f} {(y - half_w) / DBU:.3f} {x1 / DBU:.3f} {(y + half_w) / DBU:.3f} {layer}")
                x0 = x + pitch // 2
    return tuple(lines)


def route_bands(netlist: Netlist, layout: Layout, macros: dict[str, Macro], tech: Tech, tech_lef: Path,
                router_lef: Path, placed_def: Path, work: Path, route_cfg: router.RouteConfig,
                cfg: BandConfig, whole: Path | None = None) -> tuple[router.RouteResult, BandRouting]:
    """Route the placed `layout` band by band (see the module's docstring); returns the merged
    result (its routed DEF and RC file in `work`) and each band's. `whole`: a routed DEF of the
    whole die whose crossings the bands take where it has them (`routed_crossings`)."""
    bands = plan(layout, cfg)
    hint = routed_crossings(whole.read_text(), bands) if whole is not None else None
    cross = crossings(netlist, layout, macros, tech, bands, cfg, hint)
    per_band = band_nets(netlist, layout, macros, bands, cross, tech)
    rcfg = replace(route_cfg.for_nets(len(netlist.nets)), patience=cfg.patience, schedule=cfg.schedule,
                   max_passes=len(cfg.schedule))
    pitch_y = round(tech.layer("met1").pitch_y * DBU)
    work.mkdir(parents=True, exist_ok=True)
    t0, cpu0 = time.monotonic(), procs.tree_cpu_s()

    def one(k: int) -> BandResult:
        folder = work / "bands" / f"band{k}"
        folder.mkdir(parents=True, exist_ok=True)
        nets, pins = per_band[k]
        band_def = defio.write_def(layout, netlist, tech, folder / "band.def", bands[k], pins, nets)
        view = replace(layout, top=f"{layout.top}_band{k}")
        # the nets that reach a crossing pin first, those with two first of all: their pins sit
        # on the band's edges, where the band's own nets would otherwise wall them in
        pinned = sorted((n for n, t in nets.items() if len(t) >= 2 and any(i == "PIN" and p.startswith(PIN_PREFIX) for i, p in t)),
                        key=lambda n: (-sum(i == "PIN" and p.startswith(PIN_PREFIX) for i, p in nets[n]), n))
        result = router.route(tech_lef, router_lef, band_def, view, folder, rcfg,
                              before_read=edge_obstructions(layout, tech, bands, k, cross, pitch_y),
                              first=tuple(pinned) if cfg.crossing_nets_first else ())
        components = sum(1 for c in [*layout.cells.values(), *layout.physical]
                         if layout.row_y(bands[k].row0) <= c.y < layout.row_y(bands[k].row1))
        return BandResult(bands[k], sum(1 for t in nets.values() if len(t) >= 2), components, len(pins), result)

    with ThreadPoolExecutor(cfg.workers) as pool:
        done = BandRouting(list(pool.map(one, range(len(bands)))), cross)
    return _finish(done, bands, layout, tech, tech_lef, router_lef, placed_def, work, route_cfg, t0, cpu0), done


def _finish(done: BandRouting, bands: list[defio.Band], layout: Layout, tech: Tech, tech_lef: Path, router_lef: Path,
            placed_def: Path, work: Path, route_cfg: router.RouteConfig, t0: float, cpu0: float) -> router.RouteResult:
    """The bands' routing merged into one routed DEF of the whole die, its RC trees, the result."""
    routed_def = work / f"{layout.top}_route.def"
    pitch_y = round(tech.layer("met1").pitch_y * DBU)
    routed_def.write_text(merge(placed_def.read_text(), done, bands, pitch_y))
    rc_def = work / "bands" / "rc.def"
    rc_def.write_text(with_crossing_pins(routed_def.read_text(), done.crossings, bands, pitch_y))
    rc = router.rc_from_def(tech_lef, router_lef, rc_def, work / "bands" / "rc_with_crossings.rc", route_cfg,
                            work / "bands")
    (work / f"{layout.top}.rc").write_text(without_crossing_loads(rc.read_text()))
    rc = work / f"{layout.top}.rc"
    failed = done.failed()
    stage1 = sum(b.result.passes[0] for b in done.bands if b.result.passes)
    result = router.RouteResult(routed_def, rc, len(failed), [stage1, len(failed)], failed, None,
                                time.monotonic() - t0, max(b.result.peak_rss_mb for b in done.bands),
                                any(b.result.time_limited for b in done.bands), done.bands[0].result.patch,
                                [(b.result.patch, b.result.failed_nets) for b in done.bands],
                                procs.tree_cpu_s() - cpu0)
    (work / "bands.json").write_text(json.dumps(record(done), indent=1) + "\n")
    return result


def merge(placed_text: str, routing: BandRouting, bands: list[defio.Band], pitch_y: int) -> str:
    """The whole design's routed DEF: `placed_text` (the placed DEF of the whole die) with every
    net's wiring from each band it was routed in, a met2 segment across the boundary line for each
    crossing, and the bands' pin stubs (one entry per net)."""
    wires: dict[str, list[str]] = {}
    stub_wires: dict[str, list[str]] = {}
    for band in routing.bands:
        text = band.result.routed_def.read_text()
        for block in net_blocks(text)[2]:
            if (name := block_name(block)) and (w := wiring(block)):
                wires.setdefault(name, []).append(w)
        for block in stubs(text):
            if (name := block_name(block)) and (w := wiring(block)):
                stub_wires.setdefault(name, []).append(w)
    for c in routing.crossings:
        line = bands[c.boundary].y1
        wires.setdefault(c.net, []).append(f"{c.layer} ( {c.x} {line - pitch_y // 2} ) ( * {line + pitch_y // 2} )")
    start, end, blocks = net_blocks(placed_text)
    out = []
    for block in blocks:
        name = block_name(block)
        if name in wires:
            block = block.rstrip().removesuffix(";").rstrip() + "\n+ ROUTED " + "\n  NEW ".join(wires[name]) + " ;"
        out.append(block.rstrip())
    text = placed_text[:start] + "\n".join(out) + "\n" + placed_text[end:]
    return with_stubs(text, [f"- {name}\n+ ROUTED " + "\n  NEW ".join(ws) + " ;" for name, ws in stub_wires.items()])


def with_crossing_pins(routed_text: str, cross: list[Crossing], bands: list[defio.Band], pitch_y: int) -> str:
    """The merged DEF with each crossing's two band pins back as pins of its net, for qrouter's RC
    run: it walks a net's wiring from node to node, and a band's wiring starts and ends at its
    crossing pins. They are OUTPUT pins, after the net's own terminals: with qrouter patch 08 a
    design output is a load, never the tree's root (unpatched, qrouter rooted the counter's clk
    tree at a crossing pin, whatever its DIRECTION)."""
    pins: list[str] = []
    extra: dict[str, list[str]] = {}
    for c in cross:
        half = defio.IO_PIN_W // 2 if c.layer == "met2" else 150
        for k in (c.boundary, c.boundary + 1):
            name = f"{pin_name(c)}_{k}"
            pins.append(f"- {name} + DIRECTION OUTPUT + USE SIGNAL + LAYER {c.layer} ( {-half} {-half} ) "
                        f"( {half} {half} ) + PLACED ( {c.x} {_pin_y(c, bands, k, pitch_y)} ) N ;")
            extra.setdefault(c.net, []).append(f"( PIN {name} )")
    head = re.search(r"\nPINS (\d+) ;", routed_text)
    text = (routed_text[:head.start()] + f"\nPINS {int(head.group(1)) + len(pins)} ;\n" + "\n".join(pins)
            + routed_text[head.end():])
    start, end, blocks = net_blocks(text)
    out = []
    for block in blocks:
        name = block_name(block)
        if name in extra:
            at = re.search(r"\n\s*\+", block)
            at = at.start() if at else len(block.rstrip())
            block = f"{block[:at]}\n  {' '.join(extra[name])}{block[at:]}"
        out.append(block.rstrip())
    return text[:start] + "\n".join(out) + "\n" + text[end:]


_CROSSING_LOAD = re.compile(r"PIN/closer_band\w+")


def without_crossing_loads(rc_text: str) -> str:
    """qrouter's RC trees with the crossing pins' load labels taken out (their tree nodes stay)."""
    return _CROSSING_LOAD.sub("", rc_text)


def record(routing: BandRouting) -> dict:
    """bands.json: each band's rows, nets, crossing pins and qrouter passes, and the crossings."""
    return {"bands": [{"band": k, "rows": [b.band.row0, b.band.row1], "y_um": [b.band.y0 / DBU, b.band.y1 / DBU],
                       "nets": b.nets, "components": b.components, "crossing_pins": b.crossing_pins,
                       "passes": b.result.passes, "failed": b.result.failed, "capped_at": b.result.capped_at,
                       "wall_s": round(b.result.wall_s, 2), "cpu_s": round(b.result.cpu_s, 2)}
                      for k, b in enumerate(routing.bands)],
            "crossings": [{"net": c.net, "boundary": c.boundary, "x_um": c.x / DBU, "layer": c.layer,
                           "from_routing": c.from_routing} for c in routing.crossings]}


def metrics(routing: BandRouting) -> dict:
    return {"closer__route__bands": len(routing.bands),
            "closer__route__band_crossings": len(routing.crossings),
            "closer__route__band_crossings_from_routing": sum(c.from_routing for c in routing.crossings),
            "closer__route__band_failed_nets": [b.result.failed_nets for b in routing.bands],
            "closer__route__band_stage1_failed_nets": [b.result.passes[0] if b.result.passes else 0 for b in routing.bands]}
