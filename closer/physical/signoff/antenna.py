"""Antenna check from the LEF antenna data, per net and layer, on the final GDS.

The tech LEF gives each layer a partial (ANTENNAMODEL OXIDE1, non-cumulative) ratio: routing
layers limit side area (perimeter x THICKNESS of that layer's metal) over the gate area it
charges, cut layers cut area over gate area; the DIFF forms make the limit a piecewise-linear
function of the diffusion area connected (which bleeds the charge off). The cell LEF gives each
input pin's ANTENNAGATEAREA and each output's ANTENNADIFFAREA (`diode_2`'s DIODE pin is all
diffusion).

While layer L is etched, only the layers up to L exist: for each routing layer L the GDS is
extracted with li1..L and the cuts between them (the cut above L attached to L, for the cut
ratio); each netlist terminal with a gate or diffusion area is probed, and every extracted piece
that holds gate area is one (net, layer) check: its L metal's side area (or its cut area) over the
gate area of the pins on that piece, against the limit at the diffusion area on that piece.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from closer import procs
from closer.errors import InputError
from closer.physical.floorplan.floorplan import Layout
from closer.physical.signoff import probes
from closer.physical.signoff.gds import LAYERS
from closer.physical.io.lef import AntennaRule, Macro, Tech
from closer.physical.signoff.lvs import reference_terminals
from closer.physical.io.netlist import Netlist

METALS = ("li1", "met1", "met2", "met3", "met4", "met5")
CUT_ABOVE = {"li1": "mcon", "met1": "via", "met2": "via2", "met3": "via3", "met4": "via4"}


@dataclass(frozen=True)
class AntennaConfig:
    repair_rounds: int = 3     # diode-insertion rounds (closer.physical.repair.diodes), each an
                               # incremental reroute of the nets the diodes touch
    # a round whose incremental reroute leaves the layout worse than its start (steps.antenna_repair._round_standing)
    # is routed again in full (steps.reroute.REROUTE_STEPS: the whole layout with its diodes, as a setup
    # repair's fallback) before it is judged; PicoRV32's first round (644 nets) broke held
    full_reroute: bool = True
    max_net_gates: int = 16    # a flagged net with up to this many gate pins gets a diode at each
    # the LEF limits times this; only ever <= 1 (tighter than the foundry's: tests use it to
    # make a clean layout fail and exercise the repair), never a way to loosen a rule
    limit_scale: float = 1.0

    def __post_init__(self) -> None:
        if not 0 < self.limit_scale <= 1:
            raise InputError(f"antenna limit_scale {self.limit_scale}: must be in (0, 1] (only tightens)")
        if self.repair_rounds < 0:
            raise InputError(f"antenna repair_rounds {self.repair_rounds}: must be >= 0")
        if self.max_net_gates < 0:
            raise InputError(f"antenna max_net_gates {self.max_net_gates}: must be >= 0")


@dataclass(frozen=True)
class AntennaViolation:
    net: str
    layer: str            # the routing or cut layer whose ratio is exceeded
    ratio: float
    limit: float
    gate_area_um2: float
    diff_area_um2: float
    gates: tuple[str, ...]  # the gate pins ("inst/pin") on the piece


@dataclass
class AntennaResult:
    violations: list[AntennaViolation] = field(default_factory=list)
    checks: int = 0        # (piece, layer) ratios computed
    worst_margin: float = 0.0  # max ratio / limit over every check
    wall_s: float = 0.0

    @property
    def violating_nets(self) -> list[str]:
        return sorted({v.net for v in self.violations})


@dataclass(frozen=True)
class _Terminal:
    net: str
    label: str
    layer: str
    point: tuple[float, float]
    gate_area: float
    diff_area: float


def antenna_terminals(layout: Layout, netlist: Netlist, macros: dict[str, Macro]) -> list[_Terminal]:
    """Every instance pin with a LEF gate or diffusion area, at its probe point."""
    out = []
    for net, terms in reference_terminals(layout, netlist, macros).items():
        for label, layer, point in terms:
            inst, pin = label.rsplit("/", 1)
            if inst == "PIN" or inst not in netlist.instances:
                continue
            lef_pin = macros[netlist.instances[inst].master].pins[pin]
            if lef_pin.gate_area or lef_pin.diff_area:
                out.append(_Terminal(net, label, layer, point, lef_pin.gate_area, lef_pin.diff_area))
    return out


def _extract_up_to(layout, top, metal: str, probe_layers: dict[str, int]):
    """LayoutToNetlist of the layers that exist while `metal` is etched (plus the cut above it),
    with the probes (`probes.add_probe_layers`) of those metals; returns (l2n, regions, probe key ->
    net name or None)."""
    import klayout.db as kdb

    k = METALS.index(metal)
    l2n = kdb.LayoutToNetlist(kdb.RecursiveShapeIterator(layout, top, []))
    regions = {}
    names = [*METALS[:k + 1], *(CUT_ABOVE[m] for m in METALS[:k + 1] if m in CUT_ABOVE)]
    for name in names:
        idx = layout.find_layer(*LAYERS[name])
        regions[name] = l2n.make_layer(layout.layer(*LAYERS[name]) if idx is None else idx, name)
    for i, m in enumerate(METALS[:k + 1]):
        l2n.connect(regions[m])
        if m in CUT_ABOVE:
            cut = CUT_ABOVE[m]
            l2n.connect(regions[cut])
            l2n.connect(regions[cut], regions[m])
            if i < k:
                l2n.connect(regions[cut], regions[METALS[i + 1]])
    probe_regions = probes.connect_probes(l2n, {m: i for m, i in probe_layers.items() if m in METALS[:k + 1]}, regions)
    l2n.extract_netlist()
    return l2n, regions, probes.probed_nets(l2n, probe_regions, regions)


def _drawn_layers(layout, top) -> set[str]:
    """The antenna check's layers (METALS and their cuts) with at least one shape under `top`."""
    out = set()
    for name in (*METALS, *CUT_ABOVE.values()):
        idx = layout.find_layer(*LAYERS[name])
        if idx is not None and not top.bbox_per_layer(idx).empty():
            out.add(name)
    return out


def _checks_of(rule: AntennaRule | None, name: str):
    return rule is not None and (rule.uses_side_area or name in CUT_ABOVE.values())


@dataclass
class _Prepared:
    """The flattened GDS with its probes and what each level's check reads (a forked worker
    inherits it: procs.fork_map)."""
    klay: object
    top: object
    terminals: list[_Terminal]
    probe_layers: dict[str, int]
    levels: dict[str, list[tuple[str, AntennaRule]]]  # metal -> (layer, rule) checked while it is etched
    limit_scale: float


def check_antenna(gds: Path, layout: Layout, netlist: Netlist, macros: dict[str, Macro], tech: Tech,
                  out_dir: Path | None = None, limit_scale: float = 1.0, jobs: int = 1) -> AntennaResult:
    """With `jobs` > 1 the levels (one extraction each, 42 of PicoRV32's 70 s) are checked in that
    many forked processes, the highest (costliest) first."""
    import klayout.db as kdb

    start = time.monotonic()
    if not Path(gds).is_file():
        raise InputError(f"antenna check input {gds} does not exist")
    if not tech.antenna:
        raise InputError("the tech LEF has no antenna rules (ANTENNA*AREARATIO)")
    klay = kdb.Layout()
    klay.read(str(gds))
    top = klay.top_cell()
    klay.flatten(top.cell_index(), -1, True)
    terminals = antenna_terminals(layout, netlist, macros)
    drawn = _drawn_layers(klay, top)
    points: dict[str, set[tuple[float, float]]] = {}
    for t in terminals:
        points.setdefault(t.layer, set()).add(t.point)
    levels = {}
    for metal in METALS:
        cut = CUT_ABOVE.get(metal)
        layers = [(metal, tech.antenna.get(metal))] + ([(cut, tech.antenna.get(cut))] if cut else [])
        # a layer with no shapes has no ratio to check (every piece's shapes on it are empty), so
        # its extraction is skipped: met5 and via4 on a layout routed up to met4 (~5 s of CPU
        # per check on mac16)
        layers = [(n, r) for n, r in layers if _checks_of(r, n) and n in drawn]
        if layers:
            levels[metal] = layers
    prepared = _Prepared(klay, top, terminals, probes.add_probe_layers(klay, top, points), levels, limit_scale)
    order = list(reversed(levels))  # the highest levels extract the most: first
    found = dict(zip(order, procs.fork_map(_check_level, order, jobs, prepared)))
    result = AntennaResult()
    for metal in levels:  # the report in METALS order, however the levels ran
        violations, checks, worst = found[metal]
        result.violations += violations
        result.checks += checks
        result.worst_margin = max(result.worst_margin, worst)
    result.wall_s = time.monotonic() - start
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "antenna.json").write_text(json.dumps(
            {"gds": str(gds), "checks": result.checks, "worst_margin": round(result.worst_margin, 4),
             "violating_nets": result.violating_nets, "violations": [_reported(v) for v in result.violations],
             "wall_s": round(result.wall_s, 2)}, indent=1))
    return result


def _check_level(metal: str, pre: _Prepared) -> tuple[list[AntennaViolation], int, float]:
    """The checks while `metal` is etched: (violations, checks, worst ratio / limit)."""
    klay, top = pre.klay, pre.top
    dbu = klay.dbu
    l2n, regions, found = _extract_up_to(klay, top, metal, pre.probe_layers)
    by_name = {n.expanded_name(): n for n in l2n.netlist().top_circuit().each_net()}
    pieces: dict[str, list[_Terminal]] = {}
    for t in pre.terminals:
        if METALS.index(t.layer) > METALS.index(metal):
            continue  # the pin's layer does not exist yet
        net_name = found[probes.key(t.layer, t.point, dbu)]
        if net_name is not None:
            pieces.setdefault(net_name, []).append(t)
    violations, checks, worst = [], 0, 0.0
    for net_name, terms in pieces.items():
        net = by_name[net_name]
        gate = sum(t.gate_area for t in terms if t.gate_area and not t.diff_area)
        diff = sum(t.diff_area for t in terms)
        if gate <= 0:
            continue
        for name, rule in pre.levels[metal]:
            shapes = l2n.shapes_of_net(net, regions[name], True).merged()
            if shapes.is_empty():
                continue
            if rule.uses_side_area:
                value = shapes.perimeter() * dbu * rule.thickness
            else:
                value = shapes.area() * dbu * dbu
            limit = rule.limit(diff)
            if limit is None or limit <= 0:
                continue
            limit *= pre.limit_scale
            ratio = value / gate
            checks += 1
            worst = max(worst, ratio / limit)
            if ratio > limit:
                violations.append(AntennaViolation(
                    terms[0].net, name, round(ratio, 2), round(limit, 2), round(gate, 4), round(diff, 4),
                    tuple(sorted(t.label for t in terms if t.gate_area and not t.diff_area))))
    return violations, checks, worst


def _reported(violation: AntennaViolation) -> dict:
    """A violation as antenna.json shows it: the first gate pins and their count (the repair gets
    every one: a high-fanout piece needs a diode per gate, not per the first eight)."""
    return {**asdict(violation), "gates": list(violation.gates[:8]), "gates_total": len(violation.gates)}
