"""Antenna repair by diode insertion: a `sky130_fd_sc_hd__diode_2` beside the gate pins of each
net the antenna check flagged (closer.physical.signoff.antenna), on that net, and an incremental
reroute of only the nets the diodes touch.

The diode's DIODE pin is all diffusion (cell LEF ANTENNADIFFAREA 0.4347 um^2), so once it is
wired to the net at the gate's end, the piece holding the gate also holds that diffusion and the
limit rises from the PWL's first point (400 on met1..met5) to above 2,600. A flagged net with at
most `max_net_gates` gate pins gets a diode beside every one of them (its reroute cannot then move
the violation to another of its gates, as it did on mac16's `clk`); a larger net gets them beside
the flagged pieces' gates only. The diodes go into the netlist (the Verilog the STA reads, and
the layout's netlist) and into the nearest free sites (the placer's spill placement, fill removed
first).

The reroute (the flow's Antenna step) keeps every other wire: the diode nets and the nets with
li1 or met1 wiring near a diode's cell are rerouted against the rest
(closer.physical.repair.incremental, which the setup repair uses too).
"""

from __future__ import annotations

from pathlib import Path

from closer.physical.place import place as place_mod
from closer.physical.signoff.antenna import AntennaViolation
from closer.physical.cts.cts import verilog_net
from closer.physical.floorplan.floorplan import DBU, FILL_MASTERS, SITE_W, Layout
from closer.physical.io.lef import Macro, Tech
from closer.physical.io.netlist import Instance, Netlist

DIODE_CELL = "sky130_fd_sc_hd__diode_2"
DIODE_PIN = "DIODE"


def gate_instances(netlist: Netlist, macros: dict[str, Macro], net: str) -> list[str]:
    """The instances with a gate-only pin (LEF gate area, no diffusion) on `net`, in net order."""
    out = []
    for inst, pin in netlist.nets.get(net, []):
        if inst == "PIN":
            continue
        lef_pin = macros[netlist.instances[inst].master].pins.get(pin)
        if lef_pin is not None and lef_pin.gate_area and not lef_pin.diff_area and inst not in out:
            out.append(inst)
    return out


def diode_sites(violations: list[AntennaViolation], netlist: Netlist, macros: dict[str, Macro],
                done: set[tuple[str, str]], max_net_gates: int = 16) -> list[tuple[str, str]]:
    """(net, gate instance) pairs that get a diode, once each, leaving out the pairs in `done`
    (diodes an earlier round placed): every gate of a flagged net with at most `max_net_gates`
    gates, else each gate of each flagged piece."""
    out: list[tuple[str, str]] = []
    for v in violations:
        gates = gate_instances(netlist, macros, v.net)
        if len(gates) > max_net_gates:
            gates = [g.rsplit("/", 1)[0] for g in v.gates]
        for gate in gates:
            pair = (v.net, gate)
            if pair not in done and pair not in out:
                out.append(pair)
    return out


MAX_DIODES_PER_PIECE = 8


def more_diodes(violations: list[AntennaViolation], done: set[tuple[str, str]], tech: Tech,
                diode_diff_area: float, limit_scale: float = 1.0) -> list[tuple[str, str]]:
    """Further diodes for the flagged pieces every gate of which has one already (`done`), as many
    as the layer's LEF rule needs for the piece's ratio: the smallest k with
    limit(diffusion + k x `diode_diff_area`) x `limit_scale` >= ratio, k <= MAX_DIODES_PER_PIECE,
    each (net, first flagged gate) pair once per diode (a piece flagged on two layers gets the larger
    count, not both). A long wire's piece can need more than one: PicoRV32's fo_net_168 on met3,
    ratio 2,948.78 with one diode (limit 2,773.88; each diode adds about 174 on the PWL's slope of
    400 per um^2)."""
    wanted: dict[tuple[str, str], int] = {}
    for v in violations:
        flagged = [(v.net, g.rsplit("/", 1)[0]) for g in v.gates]
        rule = tech.antenna.get(v.layer)
        if not flagged or rule is None or not all(pair in done for pair in flagged):
            continue
        for k in range(1, MAX_DIODES_PER_PIECE + 1):
            limit = rule.limit(v.diff_area_um2 + k * diode_diff_area)
            if limit is not None and limit * limit_scale >= v.ratio:
                wanted[flagged[0]] = max(k, wanted.get(flagged[0], 0))
                break
    return [pair for pair, k in wanted.items() for _ in range(k)]


def insert_diodes(netlist: Netlist, layout: Layout, macros: dict[str, Macro],
                  sites: list[tuple[str, str]]) -> list[str]:
    """Add one diode per (net, gate instance) to `netlist` and `layout` (in place), placed in the
    free sites nearest the gate's cell; the fill cells are removed (the flow fills again)."""
    fills = {m for m, _ in FILL_MASTERS}
    layout.physical = [p for p in layout.physical if p.master not in fills]
    width = round(macros[DIODE_CELL].width * DBU) // SITE_W
    first = sum(1 for i in netlist.instances.values() if i.master == DIODE_CELL)
    names, spill = [], []
    for k, (net, gate) in enumerate(sites):
        name = f"ant_diode_{first + k}"
        netlist.instances[name] = Instance(name, DIODE_CELL, {DIODE_PIN: net})
        netlist.nets[net].append((name, DIODE_PIN))
        netlist.original.setdefault(name, name)
        p = layout.cells[gate]
        m = macros[p.master]
        spill.append((name, p.x + m.width * DBU / 2, p.y + m.height * DBU / 2, width))
        names.append(name)
    # one spill pass: each diode takes the nearest gap the ones before it left free
    widths = {n: round(macros[c.master].width * DBU) // SITE_W for n, c in layout.cells.items()}
    place_mod._place_spill(layout, widths, spill, netlist)
    return names


def write_verilog(source: Path, out: Path, netlist: Netlist, names: list[str]) -> Path:
    """The input netlist with the diodes appended before `endmodule`."""
    text = source.read_text()
    head, sep, tail = text.rpartition("endmodule")
    if not sep:
        raise ValueError(f"{source}: no endmodule")
    cells = "".join(f"  {DIODE_CELL} {n} (\n    .{DIODE_PIN}({verilog_net(netlist, netlist.instances[n].pins[DIODE_PIN])})\n  );\n"
                    for n in names)
    out.write_text(head + cells + sep + tail)
    return out
