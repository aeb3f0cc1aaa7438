"""Fanout trees by placement: synthesis's buffer trees taken out before placement, trees built
from the placed sinks after it (what OpenROAD's flow does with `remove_buffers` and
`repair_design -max_fanout`).

ABC's `buffer -N` (closer.flow.settings) splits every net with more than `max_fanout` pins into a
tree of buffers that groups the sinks by logic, not by where they will be: on PicoRV32 1,218
`buf_1` drive 1,237 eight-pin nets that span the die (up to 720 um), and they were 588 of the
1,038 nets qrouter left unrouted (docs/physical.md). `unbuffer` removes those buffers (Yosys-named
`buf_*` instances whose output is not a port and whose nets are not clock nets); after placement
`build_trees` splits each net with more than `max_sinks` sinks by recursive bisection of the sink
positions (closer.physical.cts.cts's clustering), a buffer at each cluster's centroid, level by
level until the driver drives at most `max_sinks` pins. Timing repair (sizing) comes after, as
before.

Both run only on designs of `min_instances` instances and more: the suite's designs keep the
netlists their sign-off was measured with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from closer.physical.cts import cts
from closer.physical.floorplan.floorplan import DBU, SITE_W, Layout, is_block
from closer.physical.io.lef import Macro
from closer.physical.io.netlist import Netlist
from closer.physical.place import place as place_mod

_SYNTH_BUFFER = re.compile(r"sky130_fd_sc_hd__buf_\d+")
_GENERATED = re.compile(r"_\d+_")  # Yosys `rename -enumerate`: the names synthesis made up
PREFIX = "fo_"                     # instances (and, with `net_`, nets) the trees add


@dataclass(frozen=True)
class FanoutConfig:
    enabled: bool = True
    min_instances: int = 3000  # designs below keep synthesis's buffers (the suite's sign-off)
    max_sinks: int = 24        # sinks one driver (or tree buffer) drives (PicoRV32 stage 1:
                               # 16 -> 432 failed nets, 24 -> 399, 32 -> 369, docs/physical.md)
    max_span_um: float | None = None  # a cluster's bounding box half-perimeter at most (None: any)
    buffer: str = "sky130_fd_sc_hd__buf_4"

    def applies(self, netlist: Netlist) -> bool:
        return self.enabled and len(netlist.instances) >= self.min_instances


@dataclass(frozen=True)
class Removed:
    name: str
    input_net: str
    output_net: str
    sinks: tuple[tuple[str, str], ...]  # the pins moved to input_net


def unbuffer(netlist: Netlist, keep_nets: set[str]) -> list[Removed]:
    """Take synthesis's buffers out of `netlist` (in place): each one's sinks join its input net.
    Buffers on a port's net (an output port keeps its driver) or a net of `keep_nets` stay."""
    removed = []
    for name in sorted(netlist.instances):
        inst = netlist.instances[name]
        if not _SYNTH_BUFFER.fullmatch(inst.master) or not _GENERATED.fullmatch(netlist.original.get(name, name)):
            continue
        a, x = inst.pins.get("A"), inst.pins.get("X")
        if a is None or x is None or x in netlist.ports or {a, x} & keep_nets:
            continue
        sinks = tuple(t for t in netlist.nets[x] if t != (name, "X"))
        netlist.nets[a] = [t for t in netlist.nets[a] if t != (name, "A")] + list(sinks)
        for sink, pin in sinks:
            netlist.instances[sink].pins[pin] = a
        del netlist.nets[x], netlist.instances[name]
        removed.append(Removed(name, a, x, sinks))
    return removed


def removed_moves(netlist: Netlist, removed: list[Removed]) -> dict[str, dict[str, str]]:
    """Verilog instance -> pin -> Verilog net, for the sinks `unbuffer` moved (a sink of a buffer
    that was itself removed has moved on with it)."""
    gone = {r.name for r in removed}
    moves: dict[str, dict[str, str]] = {}
    for r in removed:
        for inst, pin in r.sinks:
            if inst not in gone:
                net = netlist.instances[inst].pins[pin]
                moves.setdefault(netlist.original.get(inst, inst), {})[pin] = cts.verilog_net(netlist, net)
    return moves


def _sinks(netlist: Netlist, macros: dict[str, Macro], net: str) -> list[tuple[str, str]]:
    """The instance input pins of `net` (ports stay on the net's root)."""
    out = []
    for inst, pin in netlist.nets[net]:
        if inst == "PIN" or is_block(macros[netlist.instances[inst].master]):
            continue  # ports and hard-macro pins (their bus connections stay as written) keep the root
        lef_pin = macros[netlist.instances[inst].master].pins.get(pin)
        if lef_pin is not None and lef_pin.direction.upper() == "INPUT":
            out.append((inst, pin))
    return out


def build_trees(netlist: Netlist, layout: Layout, macros: dict[str, Macro], cfg: FanoutConfig,
                skip: set[str]) -> list[cts.Buffer]:
    """Split every net (but those of `skip`) with more than `max_sinks` sinks into a tree of
    `cfg.buffer` by the sinks' placed positions; the buffers go into `netlist` and `layout`."""
    todo = {net: sinks for net in sorted(netlist.nets) if net not in skip
            and len(sinks := _sinks(netlist, macros, net)) > cfg.max_sinks}
    widths = place_mod.site_widths(netlist, macros)
    width = round(macros[cfg.buffer].width * DBU) // SITE_W
    buffers: list[cts.Buffer] = []
    span = cfg.max_span_um * DBU if cfg.max_span_um is not None else None
    level = 1
    while todo:
        spill, next_todo = [], {}
        for net, sinks in todo.items():
            points = [(s, *cts._position(layout, macros, *s)) for s in sinks]
            tops = []
            # the span bounds the sinks' clusters only: above them the buffers are grouped by count
            for group in cts._clusters(points, cfg.max_sinks, span if level == 1 else None):
                name = f"{PREFIX}{len(buffers)}"
                buf = cts.Buffer(name, net, f"{PREFIX}net_{len(buffers)}", level,
                                 tuple(p[0] for p in group), cfg.buffer)
                cts._insert(netlist, buf, cfg.buffer)
                spill.append((name, sum(p[1] for p in group) / len(group), sum(p[2] for p in group) / len(group), width))
                widths[name] = width
                buffers.append(buf)
                tops.append((name, "A"))
            if len(tops) > cfg.max_sinks:
                next_todo[net] = tops
        place_mod._place_spill(layout, widths, spill, netlist)
        todo, level = next_todo, level + 1
    return buffers
