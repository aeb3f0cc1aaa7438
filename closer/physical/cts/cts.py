"""A simple clock tree: clustering by placement and clock buffers, built after placement.

The clock net (the SDC clock port's net) is split when it has more than `CtsConfig.max_sinks`
sinks: the sinks are bisected by position (alternately on the wider spread, balanced counts)
into clusters of at most `max_sinks`; each cluster gets a clock buffer at its centroid (placed in
the nearest free sites by the placer's spill placement) driving a new net to its sinks. The level
repeats over the buffers until the root drives at most `max_sinks` pins. qrouter then routes small
clock nets instead of one net over every flop (a 77-sink clock net in fifo8 lost a flop's CLK: an
LVS open), and STA sees the buffers.

The netlist the other tools read (STA, the node's output) is the input Verilog with the sinks'
clock pins moved to the new nets and the buffers appended (`write_verilog`); LVS reads the
in-memory `Netlist`, updated the same way.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from closer.physical.place import place as place_mod
from closer.physical.floorplan.floorplan import DBU, SITE_W, Layout
from closer.physical.io.lef import Macro
from closer.physical.io.netlist import Instance, Netlist

BUFFER = "sky130_fd_sc_hd__clkbuf_4"


@dataclass(frozen=True)
class CtsConfig:
    enabled: bool = True
    max_sinks: int = 16        # pins one clock buffer (or the clock port) drives
    buffer: str = BUFFER


@dataclass(frozen=True)
class Buffer:
    name: str
    input_net: str
    output_net: str
    level: int                 # 1: drives flops; 2: drives level-1 buffers; ...
    sinks: tuple[tuple[str, str], ...]
    master: str = BUFFER


@dataclass
class ClockTree:
    net: str
    sinks: int
    buffers: list[Buffer]

    @property
    def levels(self) -> int:
        return max((b.level for b in self.buffers), default=0)


def clock_ports(sdc_text: str) -> list[str]:
    """Ports named by `create_clock ... [get_ports X]` in a canonical SDC."""
    return re.findall(r"create_clock\b[^\n]*\[get_ports\s+\{?([^\s\]}]+)\}?\]", sdc_text)


def _position(layout: Layout, macros: dict[str, Macro], inst: str, pin: str) -> tuple[float, float]:
    """A pin's position: the placed cell's centre (the instance for buffers not yet placed)."""
    p = layout.cells[inst]
    m = macros[p.master]
    return p.x + m.width * DBU / 2, p.y + m.height * DBU / 2


def _clusters(points: list[tuple[tuple[str, str], float, float]], size: int) -> list[list]:
    """Recursive balanced bisection on the wider spread until each group has <= size points."""
    if len(points) <= size:
        return [points]
    xs, ys = [p[1] for p in points], [p[2] for p in points]
    key = 1 if max(xs) - min(xs) >= max(ys) - min(ys) else 2
    points = sorted(points, key=lambda p: (p[key], p[0]))
    groups = math.ceil(len(points) / size)
    split = math.ceil(groups / 2) * len(points) // groups
    return _clusters(points[:split], size) + _clusters(points[split:], size)


def build_tree(netlist: Netlist, layout: Layout, macros: dict[str, Macro], clock: str,
               cfg: CtsConfig) -> ClockTree:
    """Insert the buffers into `netlist` and `layout` (in place); the tree that was built."""
    sinks = [s for s in netlist.nets.get(clock, []) if s[0] != "PIN"]
    tree = ClockTree(clock, len(sinks), [])
    level = 1
    width = round(macros[cfg.buffer].width * DBU) // SITE_W
    while cfg.enabled and len(sinks) > cfg.max_sinks:
        points = [(s, *_position(layout, macros, *s)) for s in sinks]
        next_sinks = []
        for k, group in enumerate(_clusters(points, cfg.max_sinks)):
            name, net = f"cts_l{level}_{k}", f"cts_clk_l{level}_{k}"
            buf = Buffer(name, clock, net, level, tuple(p[0] for p in group), cfg.buffer)
            _insert(netlist, buf, cfg.buffer)
            cx = sum(p[1] for p in group) / len(group)
            cy = sum(p[2] for p in group) / len(group)
            widths = {n: round(macros[c.master].width * DBU) // SITE_W for n, c in layout.cells.items()}
            place_mod._place_spill(layout, widths, [(name, cx, cy, width)], netlist)
            tree.buffers.append(buf)
            next_sinks.append((name, "A"))
        sinks, level = next_sinks, level + 1
    return tree


def _insert(netlist: Netlist, buf: Buffer, master: str) -> None:
    root = netlist.nets[buf.input_net]
    moved = set(buf.sinks)
    netlist.nets[buf.input_net] = [s for s in root if s not in moved] + [(buf.name, "A")]
    netlist.nets[buf.output_net] = [(buf.name, "X"), *buf.sinks]
    for inst, pin in buf.sinks:
        netlist.instances[inst].pins[pin] = buf.output_net
    netlist.instances[buf.name] = Instance(buf.name, master, {"A": buf.input_net, "X": buf.output_net})
    netlist.original.setdefault(buf.name, buf.name)
    netlist.original.setdefault(buf.output_net, buf.output_net)


def write_verilog(source: Path, out: Path, netlist: Netlist, tree: ClockTree) -> Path:
    """The input netlist (Yosys write_verilog) with each moved sink pin on its buffer's net, the
    new wires declared and the buffers appended before `endmodule`."""
    text = source.read_text()
    buffers = {b.name for b in tree.buffers}
    moves: dict[str, dict[str, str]] = {}
    for b in tree.buffers:
        for inst, pin in b.sinks:
            if inst not in buffers:  # a buffer's input is written with the buffer below
                moves.setdefault(inst, {})[pin] = b.output_net
    for inst, pins in moves.items():
        text = _move_pins(text, netlist.original.get(inst, inst), pins, source)
    wires = "".join(f"  wire {b.output_net};\n" for b in tree.buffers)
    cells = "".join(f"  {b.master} {b.name} (\n"
                    f"    .A({verilog_net(netlist, netlist.instances[b.name].pins['A'])}),\n"
                    f"    .X({b.output_net})\n  );\n" for b in tree.buffers)
    head, sep, tail = text.rpartition("endmodule")
    if not sep:
        raise ValueError(f"{source}: no endmodule")
    body_start = re.search(r"\);\n", head)  # end of the module header
    if body_start is None:
        raise ValueError(f"{source}: no module header")
    i = body_start.end()
    out.write_text(head[:i] + wires + head[i:] + cells + sep + tail)
    return out


def verilog_net(netlist: Netlist, net: str) -> str:
    name = netlist.original.get(net, net)
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\[\d+\])?", name) else f"\\{name} "


def _move_pins(text: str, inst: str, pins: dict[str, str], source: Path) -> str:
    name = rf"(?:\\{re.escape(inst)} |{re.escape(inst)}\s)"  # Yosys escapes some names, not others
    match = re.search(r"\n\s*\S+\s+" + name + r"\s*\((.*?)\);", text, re.S)
    if match is None:
        raise ValueError(f"{source}: instance {inst} not found")
    block = match.group(0)
    for pin, net in pins.items():
        block, n = re.subn(r"\." + re.escape(pin) + r"\([^()]*\)", f".{pin}({net})", block, count=1)
        if n != 1:
            raise ValueError(f"{source}: instance {inst} has no pin {pin}")
    return text[:match.start()] + block + text[match.end():]
