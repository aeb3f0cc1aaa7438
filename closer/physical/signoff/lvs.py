"""LVS by connectivity: extract li1..met5 and the cuts from the final GDS (standard cells
included as drawn, so a route touching a cell's metal is seen), and compare the extracted
clusters with the netlist.

Each netlist terminal (instance pin from the cell LEF, placed; top-level IO pin; power strap)
is probed at a point inside its pin shape. The comparison is a partition check:
  open   a netlist net whose terminals fall in more than one extracted cluster (or none),
  short  an extracted cluster that holds terminals of more than one netlist net.
Cells are black boxes with their LEF pins: only pins are terminals (VPB/VNB, the well pins,
are not BEOL and are not checked). Internal cell metal that no pin reaches gets a terminal of
its own ("inst/#obsN"), so a route shorted to a cell's internal node is a short too.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from closer.errors import InputError
from closer.physical.io.defio import straps
from closer.physical.floorplan.floorplan import DBU, IO_PIN_LEN, Layout, Placed, power_strip
from closer.physical.signoff import probes
from closer.physical.signoff.gds import LAYERS
from closer.physical.io.lef import Macro
from closer.physical.io.netlist import Netlist

CONDUCTORS = ("li1", "met1", "met2", "met3", "met4", "met5")
CUTS = (("mcon", "li1", "met1"), ("via", "met1", "met2"), ("via2", "met2", "met3"),
        ("via3", "met3", "met4"), ("via4", "met4", "met5"))
WELL_PINS = ("VPB", "VNB")


@dataclass
class LvsResult:
    ok: bool
    opens: list[dict] = field(default_factory=list)
    shorts: list[dict] = field(default_factory=list)
    nets_checked: int = 0
    terminals: int = 0
    wall_s: float = 0.0

    def summary(self) -> dict:
        return {"ok": self.ok, "opens": len(self.opens), "shorts": len(self.shorts),
                "nets_checked": self.nets_checked, "terminals": self.terminals}


def _place_point(p: Placed, macro: Macro, x: float, y: float) -> tuple[float, float]:
    """LEF-local point (um) -> die point (um) for orientations N and FS."""
    if p.orient == "N":
        return p.x / DBU + x, p.y / DBU + y
    if p.orient == "FS":
        return p.x / DBU + x, p.y / DBU + macro.height - y
    raise InputError(f"instance {p.name}: orientation {p.orient} not supported")


def _probe_spot(rects) -> tuple[str, tuple[float, float]]:
    """(layer, centre) of the largest pin rectangle on a conductor layer."""
    best = max((r for r in rects if r[0] in CONDUCTORS), key=lambda lr: (lr[1][2] - lr[1][0]) * (lr[1][3] - lr[1][1]),
               default=None)
    if best is None:
        raise InputError(f"pin has no shape on {CONDUCTORS}")
    layer, (x1, y1, x2, y2) = best
    return layer, ((x1 + x2) / 2, (y1 + y2) / 2)


def reference_terminals(layout: Layout, netlist: Netlist, macros: dict[str, Macro]):
    """netlist net -> [(terminal label, layer, die point um)], including the power nets."""
    ref: dict[str, list[tuple[str, str, tuple[float, float]]]] = {}
    for inst in netlist.instances.values():
        placed = layout.cells[inst.name]
        macro = macros[inst.master]
        for pin, net in inst.pins.items():
            if pin in WELL_PINS or pin not in macro.pins:
                continue
            layer, (x, y) = _probe_spot(macro.pins[pin].rects)
            ref.setdefault(net, []).append((f"{inst.name}/{pin}", layer, _place_point(placed, macro, x, y)))
    for placed in [*layout.cells.values(), *layout.physical]:
        macro = macros[placed.master]
        for pname in ("VPWR", "VGND"):
            if pname in macro.pins:
                layer, (x, y) = _probe_spot(macro.pins[pname].rects)
                ref.setdefault(pname, []).append((f"{placed.name}/{pname}", layer, _place_point(placed, macro, x, y)))
    for stub in layout.power_stubs:  # a hard macro's power pins (vccd1, vssd1) on the grid's nets
        placed = layout.blocks[stub.instance]
        macro = macros[placed.master]
        x1, y1, x2, y2 = power_strip(macro.pins[stub.pin])  # its pin shapes are not joined in the black box
        layer, x, y = "met4", (x1 + x2) / 2, (y1 + y2) / 2
        ref.setdefault(stub.net, []).append((f"{placed.name}/{stub.pin}", layer, _place_point(placed, macro, x, y)))
    for pin in layout.io_pins.values():
        y = IO_PIN_LEN / 2 / DBU if pin.edge == "bottom" else (layout.die_h - IO_PIN_LEN / 2) / DBU
        ref.setdefault(pin.name, []).append((f"PIN/{pin.name}", "met2", (pin.x / DBU, y)))
    for st in straps(layout):
        ref.setdefault(st.net, []).append((f"PIN/{st.net}", "met2", ((st.x0 + st.x1) / 2 / DBU, (st.y0 + st.y1) / 2 / DBU)))
    return ref


def _obs_terminals(layout: Layout, netlist: Netlist, macros: dict[str, Macro]):
    """One probe per met1 OBS rectangle of each placed netlist instance (internal cell metal)."""
    out = []
    for inst in netlist.instances.values():
        if inst.name in layout.blocks:
            continue  # a black box: its obstructions are not drawn
        placed = layout.cells[inst.name]
        macro = macros[inst.master]
        for k, (layer, (x1, y1, x2, y2)) in enumerate(macro.obs):
            if layer != "met1":
                continue
            out.append((f"{inst.name}/#obs{k}", layer, _place_point(placed, macro, (x1 + x2) / 2, (y1 + y2) / 2)))
    return out


def _extract(gds: Path, points: dict[str, set[tuple[float, float]]]):
    """Extract the conductors and cuts of `gds` (flat: one circuit) with a probe at each of
    `points[layer]` (µm). Returns (probe key -> net name or None, dbu)."""
    import klayout.db as kdb

    layout = kdb.Layout()
    layout.read(str(gds))
    top = layout.top_cell()
    layout.flatten(top.cell_index(), -1, True)
    probe_layers = probes.add_probe_layers(layout, top, points)
    l2n = kdb.LayoutToNetlist(kdb.RecursiveShapeIterator(layout, top, []))
    regions = {}
    for name in (*CONDUCTORS, *(c[0] for c in CUTS)):
        idx = layout.find_layer(*LAYERS[name])
        if idx is None:
            idx = layout.layer(*LAYERS[name])
        regions[name] = l2n.make_layer(idx, name)
    for name in CONDUCTORS:
        l2n.connect(regions[name])
    for cut, below, above in CUTS:
        l2n.connect(regions[cut])
        l2n.connect(regions[cut], regions[below])
        l2n.connect(regions[cut], regions[above])
    probe_regions = probes.connect_probes(l2n, probe_layers, regions)
    l2n.extract_netlist()
    return probes.probed_nets(l2n, probe_regions, regions), layout.dbu


def run_lvs(gds: Path, layout: Layout, netlist: Netlist, macros: dict[str, Macro],
            out_dir: Path | None = None) -> LvsResult:
    start = time.monotonic()
    if not Path(gds).is_file():
        raise InputError(f"LVS input {gds} does not exist")
    ref = reference_terminals(layout, netlist, macros)
    ref = {n: t for n, t in ref.items() if len(t) >= 2 or n in ("VPWR", "VGND")}
    obs = _obs_terminals(layout, netlist, macros)
    points: dict[str, set[tuple[float, float]]] = {}
    for _, layer, pt in [t for terms in ref.values() for t in terms] + obs:
        points.setdefault(layer, set()).add(pt)
    found, dbu = _extract(gds, points)

    def probe(layer: str, pt: tuple[float, float]):
        return found[probes.key(layer, pt, dbu)]

    cluster_nets: dict[int, set[str]] = {}
    cluster_terms: dict[int, list[str]] = {}
    opens = []
    n_terms = 0
    for net, terms in sorted(ref.items()):
        clusters: dict[object, list[str]] = {}
        for label, layer, pt in terms:
            n_terms += 1
            cid = probe(layer, pt)
            clusters.setdefault(cid, []).append(label)
            if cid is not None:
                cluster_nets.setdefault(cid, set()).add(net)
                cluster_terms.setdefault(cid, []).append(label)
        if len(clusters) > 1 or None in clusters:
            opens.append({"net": net, "pieces": [sorted(v)[:6] for v in clusters.values()],
                          "unconnected_terminals": sorted(clusters.get(None, []))[:6]})
    for label, layer, pt in obs:
        cid = probe(layer, pt)
        if cid is not None and cid in cluster_nets and not _obs_belongs(label, cluster_terms[cid]):
            cluster_nets[cid].add(f"<internal {label}>")
            cluster_terms[cid].append(label)
    shorts = [{"nets": sorted(nets)[:8], "terminals": sorted(cluster_terms[cid])[:8]}
              for cid, nets in cluster_nets.items() if len(nets) > 1]
    result = LvsResult(not opens and not shorts, opens, shorts, len(ref), n_terms, time.monotonic() - start)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "lvs.json").write_text(json.dumps(
            {"gds": str(gds), **result.summary(), "opens": opens[:200], "shorts": shorts[:200]}, indent=1))
    return result


def _obs_belongs(obs_label: str, terminals: list[str]) -> bool:
    """An OBS shape that is wired (inside the cell) to one of that same instance's pins is part
    of that pin's net, not a short."""
    inst = obs_label.rsplit("/", 1)[0]
    return any(t.rsplit("/", 1)[0] == inst for t in terminals)
