"""The register-correspondence miter of the LEC's first proof (closer.tasks.lec): from the Yosys
JSON of two flat modules, `gold` and `gate`, both reduced to `$_AND_`/`$_NOT_` gates and
single-edge flip-flops (`aigmap`, `dffunmap`), to a binary AIGER file for ABC's `&cec -m`.

    build_miter(Path("lec_cut.json"), Path("lec_miter.aig")) -> Miter

Every flip-flop is cut: its output becomes a free input of the miter. A gold and a gate flip-flop
are paired (given one shared input) when their outputs share a public net name (the netlist keeps
the RTL's register names) or, for the rest, when their next-state functions agree on random
simulation (flip-flops that synthesis named only by instance, such as a memory's read-address
register); primary inputs pair by port name. The miter's one output is the OR, over every pair's
next-state functions and every output port bit, of gold XOR gate. Proven constant 0, every paired
register and output is equal whenever the paired registers are (induction over the clock cycles
from any state in which they agree): a pairing is an assumption the proof checks, so a wrong one
can only make the proof fail. A flip-flop left unpaired stays a free input, which can only make
the proof fail too. An `x` or undriven bit is a fresh free input on its side (it must match every
value).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

FLIP_FLOPS = ("$_DFF_P_", "$_DFF_N_")
IGNORED_CELLS = ("$scopeinfo",)
SIGNATURE_WORDS = 4  # 256 random patterns per signature
MAX_JSON_BYTES = 1_000_000_000  # firdma (9,300 cells, both sides): 43 MB


class MiterError(Exception):
    """The modules cannot be cut into a miter here (an unsupported cell, ports that differ)."""


class Aig:
    """An and-inverter graph with structural hashing; literal 0 is false, 1 true, 2v+1 is NOT 2v."""

    def __init__(self) -> None:
        self.inputs: list[int] = []
        self.ands: list[tuple[int, int, int]] = []
        self._hash: dict[tuple[int, int], int] = {}
        self._vars = 0

    def new_input(self) -> int:
        self._vars += 1
        self.inputs.append(2 * self._vars)
        return 2 * self._vars

    def and_(self, a: int, b: int) -> int:
        a, b = min(a, b), max(a, b)
        if a == 0 or (a ^ 1) == b:
            return 0
        if a == 1 or a == b:
            return b
        if (a, b) not in self._hash:
            self._vars += 1
            self.ands.append((2 * self._vars, a, b))
            self._hash[(a, b)] = 2 * self._vars
        return self._hash[(a, b)]

    def or_(self, a: int, b: int) -> int:
        return self.and_(a ^ 1, b ^ 1) ^ 1

    def xor(self, a: int, b: int) -> int:
        return self.or_(self.and_(a, b ^ 1), self.and_(a ^ 1, b))

    def simulate(self, literals: list[int], seed: int = 1) -> list[int]:
        """Each literal's values under SIGNATURE_WORDS x 64 random input patterns, as one integer."""
        rng = random.Random(seed)
        mask = (1 << (64 * SIGNATURE_WORDS)) - 1
        value = {0: 0}
        for lit in self.inputs:
            value[lit >> 1] = rng.getrandbits(64 * SIGNATURE_WORDS)

        def of(lit: int) -> int:
            return value[lit >> 1] ^ mask if lit & 1 else value[lit >> 1]

        for lhs, a, b in self.ands:
            value[lhs >> 1] = of(a) & of(b)
        return [of(lit) for lit in literals]

    def write(self, path: Path, outputs: list[int]) -> None:
        """Binary AIGER (inputs numbered first, then the and gates in creation order)."""
        order: dict[int, int] = {}
        for lit in self.inputs:
            order[lit >> 1] = len(order) + 1
        for lhs, _, _ in self.ands:
            order[lhs >> 1] = len(order) + 1

        def renumber(lit: int) -> int:
            return lit if lit < 2 else 2 * order[lit >> 1] + (lit & 1)

        body = bytearray(f"aig {len(order)} {len(self.inputs)} 0 {len(outputs)} {len(self.ands)}\n".encode())
        for lit in outputs:
            body += f"{renumber(lit)}\n".encode()
        for lhs, a, b in self.ands:
            lhs, r0, r1 = renumber(lhs), renumber(a), renumber(b)
            r0, r1 = max(r0, r1), min(r0, r1)
            body += _varint(lhs - r0) + _varint(r0 - r1)
        path.write_bytes(bytes(body))


def _varint(x: int) -> bytes:
    out = bytearray()
    while x & ~0x7F:
        out.append((x & 0x7F) | 0x80)
        x >>= 7
    out.append(x)
    return bytes(out)


class _Module:
    """One flat module: its gates by output bit, flip-flops, public net names per bit."""

    def __init__(self, name: str, module: dict) -> None:
        self.name = name
        self.ports = module["ports"]
        self.gates: dict[int, dict] = {}
        self.flops: list[dict] = []
        for cell_name, cell in module["cells"].items():
            kind = cell["type"]
            if kind in FLIP_FLOPS:
                self.flops.append(cell)
            elif kind in ("$_AND_", "$_NOT_"):
                self.gates[cell["connections"]["Y"][0]] = cell
            elif kind not in IGNORED_CELLS:
                raise MiterError(f"{name}: cell {cell_name} of type {kind} (the miter takes and/not gates "
                                 f"and {'/'.join(FLIP_FLOPS)} flip-flops)")
        self.names: dict[int, list[str]] = {}
        for net, entry in module["netnames"].items():
            if entry.get("hide_name"):
                continue
            bits, offset = entry["bits"], entry.get("offset", 0)
            for i, bit in enumerate(bits):
                if isinstance(bit, int):
                    self.names.setdefault(bit, []).append(f"{net}[{i + offset}]" if len(bits) > 1 else net)


class _Literals:
    """The literal of each bit of one module in a shared Aig, given the literals of its cut bits."""

    def __init__(self, module: _Module, aig: Aig, cut: dict[int, int]) -> None:
        self.module, self.aig, self.known = module, aig, dict(cut)

    def __call__(self, bit: int | str) -> int:
        if bit in ("0", "1"):
            return int(bit)
        if isinstance(bit, str):  # x or z: any value
            return self.aig.new_input()
        stack, waiting = [bit], set()  # waiting: bits whose gate inputs are being resolved
        while stack:
            top = stack[-1]
            if top in self.known:
                stack.pop()
                continue
            gate = self.module.gates.get(top)
            if gate is None:  # undriven: any value
                self.known[top] = self.aig.new_input()
                stack.pop()
                continue
            ins = [gate["connections"][p][0] for p in (("A", "B") if gate["type"] == "$_AND_" else ("A",))]
            pending = [b for b in ins if isinstance(b, int) and b not in self.known]
            if pending:
                if top in waiting:
                    raise MiterError(f"{self.module.name}: a combinational loop through bit {top}")
                waiting.add(top)
                stack.extend(pending)
                continue
            lits = [self(b) if isinstance(b, str) else self.known[b] for b in ins]
            self.known[top] = self.aig.and_(*lits) if gate["type"] == "$_AND_" else lits[0] ^ 1
            stack.pop()
        return self.known[bit]


@dataclass
class Miter:
    pairs_by_name: int
    pairs_by_signature: int
    unpaired_gold: list[str] = field(default_factory=list)
    unpaired_gate: list[str] = field(default_factory=list)
    output_bits: int = 0
    and_gates: int = 0
    pairs: list[tuple[str, str, str]] = field(default_factory=list)  # gold register, gate register, how

    def write_pairs(self, path: Path) -> None:
        """The register correspondence the proof assumed, for the person reading the result."""
        path.write_text(json.dumps({"pairs": [{"gold": g, "gate": t, "by": by} for g, t, by in self.pairs],
                                    "unpaired_gold": self.unpaired_gold, "unpaired_gate": self.unpaired_gate},
                                   indent=1) + "\n")

    def summary(self) -> str:
        text = (f"{self.pairs_by_name + self.pairs_by_signature} register pairs ({self.pairs_by_name} by name, "
                f"{self.pairs_by_signature} by simulation signature) and {self.output_bits} output bits")
        if self.unpaired_gold or self.unpaired_gate:
            text += (f"; unpaired: {len(self.unpaired_gold)} gold ({', '.join(self.unpaired_gold[:3])}), "
                     f"{len(self.unpaired_gate)} gate ({', '.join(self.unpaired_gate[:3])})")
        return text


def build_miter(netlist_json: Path, out: Path) -> Miter:
    size = netlist_json.stat().st_size
    if size > MAX_JSON_BYTES:  # ~5 kB per cell: far beyond the designs this flow closes
        raise MiterError(f"{netlist_json}: {size / 1e6:.0f} MB, more than the miter reads "
                         f"({MAX_JSON_BYTES / 1e6:.0f} MB)")
    modules = json.loads(netlist_json.read_text())["modules"]
    try:
        gold, gate = _Module("gold", modules["gold"]), _Module("gate", modules["gate"])
    except KeyError as exc:
        raise MiterError(f"{netlist_json}: no module {exc}") from None
    _check_ports(gold, gate)
    aig = Aig()
    cut_gold, cut_gate = _shared_inputs(gold, gate, aig)
    pairs = _pair_by_name(gold, gate, aig, cut_gold, cut_gate)
    by_name = len(pairs)
    pairs += _pair_by_signature(gold, gate, aig, cut_gold, cut_gate, pairs)
    paired_gate = {id(g) for _, g in pairs}
    paired_gold = {id(g) for g, _ in pairs}
    lit_gold, lit_gate = _Literals(gold, aig, cut_gold), _Literals(gate, aig, cut_gate)
    differences = [aig.xor(lit_gold(g["connections"]["D"][0]), lit_gate(t["connections"]["D"][0])) for g, t in pairs]
    output_bits = 0
    for name, port in gold.ports.items():
        if port["direction"] == "output":
            for bit_gold, bit_gate in zip(port["bits"], gate.ports[name]["bits"]):
                differences.append(aig.xor(lit_gold(bit_gold), lit_gate(bit_gate)))
                output_bits += 1
    trigger = 0
    for lit in differences:
        trigger = aig.or_(trigger, lit)
    aig.write(out, [trigger])
    named = [(_flop_name(gold, g), _flop_name(gate, t), "name" if i < by_name else "signature")
             for i, (g, t) in enumerate(pairs)]
    return Miter(by_name, len(pairs) - by_name,
                 [_flop_name(gold, f) for f in gold.flops if id(f) not in paired_gold],
                 [_flop_name(gate, f) for f in gate.flops if id(f) not in paired_gate], output_bits, len(aig.ands),
                 named)


def _check_ports(gold: _Module, gate: _Module) -> None:
    def shape(module: _Module) -> dict[str, tuple[str, int]]:
        return {name: (p["direction"], len(p["bits"])) for name, p in module.ports.items()}

    if shape(gold) != shape(gate):
        differ = sorted(set(shape(gold).items()) ^ set(shape(gate).items()))
        raise MiterError(f"the ports differ: {', '.join(f'{n} {d}[{w}]' for n, (d, w) in differ[:4])}")


def _shared_inputs(gold: _Module, gate: _Module, aig: Aig) -> tuple[dict[int, int], dict[int, int]]:
    cut_gold: dict[int, int] = {}
    cut_gate: dict[int, int] = {}
    for name, port in gold.ports.items():
        if port["direction"] == "input":
            for bit_gold, bit_gate in zip(port["bits"], gate.ports[name]["bits"]):
                lit = aig.new_input()
                cut_gold[bit_gold], cut_gate[bit_gate] = lit, lit
    return cut_gold, cut_gate


def _q(flop: dict) -> int:
    return flop["connections"]["Q"][0]


def _pair_by_name(gold: _Module, gate: _Module, aig: Aig, cut_gold: dict, cut_gate: dict) -> list[tuple[dict, dict]]:
    gate_by_name: dict[str, dict] = {}
    for flop in gate.flops:
        for name in gate.names.get(_q(flop), []):
            gate_by_name.setdefault(name, flop)
    pairs, taken = [], set()
    for flop in gold.flops:
        cut_gold[_q(flop)] = lit = aig.new_input()
        match = next((gate_by_name[n] for n in gold.names.get(_q(flop), []) if n in gate_by_name), None)
        if match is not None and id(match) not in taken and match["type"] == flop["type"]:
            taken.add(id(match))
            cut_gate[_q(match)] = lit
            pairs.append((flop, match))
    for flop in gate.flops:
        if id(flop) not in taken:
            cut_gate[_q(flop)] = aig.new_input()
    return pairs


def _pair_by_signature(gold: _Module, gate: _Module, aig: Aig, cut_gold: dict, cut_gate: dict,
                       pairs: list[tuple[dict, dict]]) -> list[tuple[dict, dict]]:
    """Unpaired flip-flops whose next-state functions agree on random simulation (with the
    unpaired ones' outputs as independent inputs), first come first paired."""
    paired = {id(f) for pair in pairs for f in pair}
    rest_gold = [f for f in gold.flops if id(f) not in paired]
    rest_gate = [f for f in gate.flops if id(f) not in paired]
    if not rest_gold or not rest_gate:
        return []
    lit_gold, lit_gate = _Literals(gold, aig, cut_gold), _Literals(gate, aig, cut_gate)
    signatures = aig.simulate([lit_gold(f["connections"]["D"][0]) for f in rest_gold]
                              + [lit_gate(f["connections"]["D"][0]) for f in rest_gate])
    waiting: dict[tuple[str, int], list[dict]] = {}
    for flop, signature in zip(rest_gate, signatures[len(rest_gold):]):
        waiting.setdefault((flop["type"], signature), []).append(flop)
    found = []
    for flop, signature in zip(rest_gold, signatures[:len(rest_gold)]):
        if candidates := waiting.get((flop["type"], signature)):
            match = candidates.pop(0)
            cut_gate[_q(match)] = cut_gold[_q(flop)]
            found.append((flop, match))
    return found


def _flop_name(module: _Module, flop: dict) -> str:
    names = module.names.get(_q(flop))
    return names[0] if names else f"flip-flop driving bit {_q(flop)}"
