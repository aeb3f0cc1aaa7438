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
    if inst in layout.blocks:
        x, y = place_mod.block_pin_point(layout.blocks[inst], macros[layout.blocks[inst].master], pin)
        return float(x), float(y)
    p = layout.cells[inst]
    m = macros[p.master]
    return p.x + m.width * DBU / 2, p.y + m.height * DBU / 2


def _clusters(points: list[tuple[tuple[str, str], float, float]], size: int,
              max_span: float | None = None) -> list[list]:
    """Recursive balanced bisection on the wider spread until each group has <= size points
    (and, with `max_span`, a bounding box of at most that half-perimeter, or one point)."""
    xs, ys = [p[1] for p in points], [p[2] for p in points]
    dx, dy = max(xs) - min(xs), max(ys) - min(ys)
    if len(points) <= size and (max_span is None or dx + dy <= max_span or len(points) == 1):
        return [points]
    key = 1 if dx >= dy else 2
    points = sorted(points, key=lambda p: (p[key], p[0]))
    groups = max(2, math.ceil(len(points) / size))
    split = math.ceil(groups / 2) * len(points) // groups
    return _clusters(points[:split], size, max_span) + _clusters(points[split:], size, max_span)


def build_tree(netlist: Netlist, layout: Layout, macros: dict[str, Macro], clock: str,
               cfg: CtsConfig) -> ClockTree:
    """Insert the buffers into `netlist` and `layout` (in place); the tree that was built."""
    sinks = [s for s in netlist.nets.get(clock, []) if s[0] != "PIN"]
    tree = ClockTree(clock, len(sinks), [])
    level = 1
    width = round(macros[cfg.buffer].width * DBU) // SITE_W
    widths = place_mod.site_widths(netlist, macros)
    while cfg.enabled and len(sinks) > cfg.max_sinks:
        points = [(s, *_position(layout, macros, *s)) for s in sinks]
        next_sinks = []
        for k, group in enumerate(_clusters(points, cfg.max_sinks)):
            name, net = f"cts_l{level}_{k}", f"cts_clk_l{level}_{k}"
            buf = Buffer(name, clock, net, level, tuple(p[0] for p in group), cfg.buffer)
            _insert(netlist, buf, cfg.buffer)
            cx = sum(p[1] for p in group) / len(group)
            cy = sum(p[2] for p in group) / len(group)
            widths[name] = width
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


def write_verilog(source: Path, out: Path, netlist: Netlist, tree: ClockTree,
                  removed: tuple[str, ...] = ()) -> Path:
    """The input netlist (Yosys write_verilog) with each moved sink pin on its buffer's net, the
    new wires declared and the buffers appended before `endmodule`; `removed`: instances (netlist
    names) taken out, their sinks' pins moved as the in-memory netlist has them."""
    text = source.read_text()
    buffers = {b.name for b in tree.buffers}
    moves: dict[str, dict[str, str]] = {}
    for b in tree.buffers:
        for inst, pin in b.sinks:
            if inst not in buffers:  # a buffer's input is written with the buffer below
                moves.setdefault(netlist.original.get(inst, inst), {})[pin] = b.output_net
    text = rewrite_instances(text, moves, {netlist.original.get(n, n) for n in removed}, source)
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


# one cell instance of Yosys's write_verilog: `  <master> <name> (\n    .<pin>(<net>),\n ... );`
# (Yosys escapes some names, `\<name> `, not others)
_INSTANCE = re.compile(r"^([ \t]*)([A-Za-z_][A-Za-z0-9_$]*)[ \t]+(\\\S+ |[A-Za-z_][A-Za-z0-9_$]*)\s*\((.*?)\);\n?",
                       re.M | re.S)
_KEYWORDS = {"module", "input", "output", "inout", "wire", "reg", "assign"}


def rewrite_instances(text: str, moves: dict[str, dict[str, str]], removed: set[str], source: Path) -> str:
    """`text` in one pass: the pins of `moves` (instance -> pin -> Verilog net) reconnected, the
    instances of `removed` deleted; an instance or pin not found is an error."""
    seen: set[str] = set()

    def edit(match: re.Match) -> str:
        if match.group(2) in _KEYWORDS:
            return match.group(0)
        raw = match.group(3)
        inst = raw[1:].rstrip() if raw.startswith("\\") else raw
        if inst in removed:
            seen.add(inst)
            return ""
        pins = moves.get(inst)
        if not pins:
            return match.group(0)
        seen.add(inst)
        block = match.group(0)
        for pin, net in pins.items():
            block, n = re.subn(r"\." + re.escape(pin) + r"\([^()]*\)", lambda _, t=f".{pin}({net})": t, block, count=1)
            if n != 1:
                raise ValueError(f"{source}: instance {inst} has no pin {pin}")
        return block

    text = _INSTANCE.sub(edit, text)
    missing = (set(moves) | removed) - seen
    if missing:
        raise ValueError(f"{source}: instance {sorted(missing)[0]} not found")
    return text


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


def verilog_net(netlist: Netlist, net: str) -> str:
    """`net` as the netlist's Verilog writes it: a bit-select of a vector (`x[3]`), a simple
    identifier, or else escaped (`\\x[3] `: a scalar of that name, as Yosys's splitnets makes)."""
    name = netlist.original.get(net, net)
    if net in netlist.vector_bits and (bit := re.fullmatch(r"(.+)(\[\d+\])", name)):
        base, index = bit.groups()
        return (base if _IDENTIFIER.fullmatch(base) else f"\\{base} ") + index
    return name if _IDENTIFIER.fullmatch(name) else f"\\{name} "
