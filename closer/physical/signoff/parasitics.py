"""qrouter's per-net RC trees (`write_delays`, the `.rc` file) -> SPEF for OpenSTA.

qrouter computes each routed net's RC tree from its own route geometry and the tech LEF's
RPERSQ/CPERSQDIST/EDGECAPACITANCE values; this module only changes the format. A tree is
  <net> 1 <driver> <nloads> ( R C <subtree or load> [, <more>] ... )
where each "( R C ... )" is a node reached through resistance R (ohm) carrying capacitance C
(pF), and a bare "inst/pin" or "PIN/port" inside it is a load attached to that node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from closer.errors import ToolError

_TOKEN = re.compile(r"\(|\)|,|[^\s(),]+")


@dataclass
class RcNet:
    name: str
    driver: str
    nodes: list[tuple[int, float]] = field(default_factory=list)        # (node id, cap pF)
    resistors: list[tuple[int, int, float]] = field(default_factory=list)  # (a, b, ohm)
    loads: list[tuple[str, int]] = field(default_factory=list)          # (pin, node id)

    @property
    def total_cap_pf(self) -> float:
        return sum(c for _, c in self.nodes)


def _read_tree(toks: list[str], pos: int, net: RcNet) -> None:
    """`( R C items... )` subtrees from toks[pos:], each item a load name, `,` or a subtree; with
    an explicit stack (a long route is a chain of thousands of nested subtrees: the SRAM
    wrapper's clock tree went past Python's recursion limit)."""
    open_nodes: list[int] = []
    count = 0
    while pos < len(toks):
        tok = toks[pos]
        if tok == "(":
            r, c = float(toks[pos + 1]), float(toks[pos + 2])
            count += 1
            net.nodes.append((count, c))
            net.resistors.append((open_nodes[-1] if open_nodes else 0, count, r))
            open_nodes.append(count)
            pos += 3
            continue
        if tok == ")" and open_nodes:
            open_nodes.pop()
        elif open_nodes and tok not in (",", ")", "ERROR"):
            net.loads.append((tok, open_nodes[-1]))
        pos += 1


def parse_rc(path: Path) -> dict[str, RcNet]:
    nets: dict[str, RcNet] = {}
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        toks = _TOKEN.findall(line)
        if len(toks) < 4:
            continue
        net = RcNet(toks[0], toks[2])
        net.nodes.append((0, 0.0))  # node 0 is the driver pin
        try:
            _read_tree(toks, 4, net)
        except (IndexError, ValueError) as exc:
            raise ToolError(f"{path}:{lineno}: cannot parse qrouter RC tree ({exc})") from exc
        nets[net.name] = net
    return nets


def _spef_name(name: str, port_bit: bool = False) -> str:
    """A netlist name as SPEF writes it: a bit of a bus port (`resp_msg[0]`) keeps its brackets,
    the SPEF bus delimiter; in any other name (Yosys writes register bits as escaped scalars,
    `\\b[0] `) the characters SPEF gives a meaning are escaped, `$` included."""
    if port_bit:
        return name
    return re.sub(r"([\[\]/:*.\\$#%!@&()+,;<=>?^`{|}~\"'-])", r"\\\1", name)


def write_spef(nets: dict[str, RcNet], top: str, original: dict[str, str], path: Path,
               port_dirs: dict[str, str], bus_bits: set[str] = frozenset()) -> Path:
    """SPEF with the netlist's own names (`original` maps the DEF-safe names back). `bus_bits`:
    the ports that are bits of a multi-bit port (their brackets are SPEF's bus delimiter); a
    scalar port named with brackets (Yosys `splitnets -ports` writes `\\acc[0] `) is escaped."""
    def orig(n: str) -> str:
        return original.get(n, n)

    port_bits = {orig(p) for p in bus_bits}

    def pin_ref(p: str) -> tuple[str, str]:
        if "/" not in p:
            raise ToolError(f"qrouter's RC trees: '{p}' is not an INSTANCE/PIN terminal (SPEF {path})")
        inst, pin = p.split("/", 1)
        if inst == "PIN":
            return _spef_name(orig(pin), port_bit=pin in bus_bits), ("I" if port_dirs.get(pin) == "input" else "O")
        return f"{_spef_name(orig(inst))}:{pin}", ""

    out = ['*SPEF "IEEE 1481-1998"', f'*DESIGN "{top}"', '*DATE "closer"', '*VENDOR "closer"',
           '*PROGRAM "closer.physical.signoff.parasitics (qrouter write_delays)"', '*VERSION "1"',
           '*DESIGN_FLOW "PIN_CAP NONE"', "*DIVIDER /", "*DELIMITER :", "*BUS_DELIMITER [ ]",
           "*T_UNIT 1 NS", "*C_UNIT 1 PF", "*R_UNIT 1 OHM", "*L_UNIT 1 HENRY", ""]
    for net in nets.values():
        name = _spef_name(orig(net.name), port_bit=orig(net.name) in port_bits)

        def node(i: int, net=net, name=name) -> str:
            return pin_ref(net.driver)[0] if i == 0 else f"{name}:{i}"

        out.append(f"*D_NET {name} {net.total_cap_pf:.6g}")
        out.append("*CONN")
        drv, d = pin_ref(net.driver)
        out.append(f"*P {drv} I" if ":" not in drv else f"*I {drv} O")
        for p, _ in net.loads:
            ref, d = pin_ref(p)
            out.append(f"*I {ref} I" if ":" in ref else f"*P {ref} O")
        out.append("*CAP")
        for k, (i, c) in enumerate(net.nodes, 1):
            out.append(f"{k} {node(i)} {c:.6g}")
        out.append("*RES")
        res = [(node(a), node(b), r) for a, b, r in net.resistors]
        # each load hangs off its tree node through a negligible resistor (several loads can
        # share one node)
        res += [(node(k), pin_ref(p)[0], 0.0) for p, k in net.loads]
        for k, (a, b, r) in enumerate(res, 1):
            out.append(f"{k} {a} {b} {max(r, 1e-4):.6g}")
        out.append("*END")
        out.append("")
    path.write_text("\n".join(out) + "\n")
    return path
