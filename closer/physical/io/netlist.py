"""The gate netlist the physical steps work on, read through Yosys' JSON writer.

`Netlist` holds instances (cell master + pin -> net), top-level ports and nets, each under a
DEF-safe name; `original` maps the safe names back to the netlist's own names (for SPEF/STA).
Constant drivers are rejected: the netlist must use tie cells (e.g. conb_1) for 0/1.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from closer.errors import InputError
from closer.procs import Command, run
from closer.toolchain import search_path

_SAFE = re.compile(r"[^A-Za-z0-9_]")


@dataclass
class Instance:
    name: str
    master: str
    pins: dict[str, str]  # pin -> net (safe names)


@dataclass
class Netlist:
    top: str
    instances: dict[str, Instance]
    ports: dict[str, str]  # safe port/net name -> direction ("input"/"output"/"inout")
    nets: dict[str, list[tuple[str, str]]]  # net -> [(instance or "PIN", pin)]
    original: dict[str, str] = field(default_factory=dict)  # safe name -> netlist name
    bus_bits: set[str] = field(default_factory=set)  # ports that are one bit of a multi-bit port
    # nets that are one bit of a multi-bit port or wire (`x[3]` is a bit-select in the Verilog; a
    # net named `x[3]` otherwise is the escaped scalar `\\x[3] ` that Yosys's splitnets makes)
    vector_bits: set[str] = field(default_factory=set)

    def masters(self) -> set[str]:
        return {inst.master for inst in self.instances.values()}


class _Namer:
    def __init__(self) -> None:
        self.used: dict[str, str] = {}
        self.original: dict[str, str] = {}

    def safe(self, name: str, kind: str) -> str:
        key = (kind, name)
        if key in self.used:
            return self.used[key]
        base = _SAFE.sub("_", name.lstrip("\\")) or "n"
        if base[0].isdigit():
            base = "n" + base
        cand, k = base, 1
        taken = set(self.original)
        while cand in taken:
            k += 1
            cand = f"{base}_{k}"
        self.used[key] = cand
        self.original[cand] = name
        return cand


def _hdl_index(port: dict, i: int) -> int:
    """The Verilog index of bit `i` of a Yosys JSON port (`[7:4]` has offset 4; `[0:3]` is upto)."""
    offset, width = int(port.get("offset", 0)), len(port["bits"])
    return offset + width - 1 - i if port.get("upto") else offset + i


def yosys_json(netlist_v: Path, top: str, liberty: Path, out_json: Path, log: Path,
               macro_liberties: tuple[Path, ...] = ()) -> Path:
    """The netlist as Yosys JSON; `macro_liberties` declare hard macros (black boxes) it may use."""
    reads = "".join(f"read_liberty -lib {lib}; " for lib in (liberty, *macro_liberties))
    script = f"{reads}read_verilog {netlist_v}; hierarchy -check -top {top}; write_json {out_json}"
    run(Command(["yosys", "-q", "-p", script], env={"PATH": search_path()}, timeout_s=300), log)
    return out_json


def read_netlist(json_path: Path, top: str) -> Netlist:
    data = json.loads(Path(json_path).read_text())
    module = data.get("modules", {}).get(top)
    if module is None:
        raise InputError(f"{json_path}: module {top!r} not found (have: {', '.join(data.get('modules', {}))})")
    namer = _Namer()
    bit_name: dict[int, str] = {}
    ports: dict[str, str] = {}
    bus_bits: set[str] = set()
    vector_bits: set[str] = set()
    for pname, port in module["ports"].items():
        bits = port["bits"]
        for i, bit in enumerate(bits):
            if isinstance(bit, str):
                raise InputError(f"{json_path}: port {pname} bit {i} is tied to constant {bit!r}; "
                                 "use tie cells (hilomap) and buffer port-to-port assigns (insbuf)")
            label = pname if len(bits) == 1 else f"{pname}[{_hdl_index(port, i)}]"
            if bit in bit_name:
                raise InputError(f"{json_path}: ports {bit_name[bit]} and {label} are the same net; "
                                 "buffer port-to-port assigns (yosys insbuf)")
            bit_name[bit] = namer.safe(label, "net")
            ports[bit_name[bit]] = port["direction"]
            if len(bits) > 1:
                bus_bits.add(bit_name[bit])
                vector_bits.add(bit_name[bit])
    for nname, info in sorted(module.get("netnames", {}).items(), key=lambda kv: kv[1].get("hide_name", 0)):
        bits = info["bits"]
        for i, bit in enumerate(bits):
            if isinstance(bit, int) and bit not in bit_name:
                label = nname if len(bits) == 1 else f"{nname}[{_hdl_index(info, i)}]"
                bit_name[bit] = namer.safe(label, "net")
                if len(bits) > 1:
                    vector_bits.add(bit_name[bit])
    instances: dict[str, Instance] = {}
    nets: dict[str, list[tuple[str, str]]] = {n: [("PIN", n)] for n in ports}
    for cname, cell in module.get("cells", {}).items():
        iname = namer.safe(cname, "inst")
        pins: dict[str, str] = {}
        for bus, bits in cell["connections"].items():
            # a macro's bus pin (an SRAM's addr0) becomes one pin a bit, named as its LEF names them
            for i, bit in enumerate(bits):
                pin = bus if len(bits) == 1 else f"{bus}[{i}]"
                if isinstance(bit, str):
                    if bit in ("x", "z"):
                        continue  # unconnected
                    raise InputError(f"{json_path}: cell {cname} pin {pin} is tied to constant {bit!r}; "
                                     "use tie cells (yosys hilomap with sky130_fd_sc_hd__conb_1)")
                net = bit_name.setdefault(bit, namer.safe(f"net{bit}", "net"))
                pins[pin] = net
                nets.setdefault(net, []).append((iname, pin))
        instances[iname] = Instance(iname, cell["type"], pins)
    return Netlist(top, instances, ports, nets, namer.original, bus_bits, vector_bits)


GATE_SYNTH_SCRIPT = """read_liberty -lib {lib}
{macro_reads}{reads}
hierarchy -check -top {top}
{chparams}
synth -flatten -top {top}
dfflibmap{dont_use} -liberty {lib}
abc{dont_use} -liberty {lib}
hilomap -singleton -hicell sky130_fd_sc_hd__conb_1 HI -locell sky130_fd_sc_hd__conb_1 LO
setundef -zero
splitnets -ports
insbuf -buf sky130_fd_sc_hd__buf_2 A X
opt_clean -purge
rename -enumerate
stat -liberty {lib}
write_verilog -noattr -noexpr -nohex -nodec {out}
"""


def synthesize(rtl: list[Path], top: str, liberty: Path, out_v: Path, log: Path,
               parameters: dict[str, int] | None = None, macro_liberties: tuple[Path, ...] = ()) -> Path:
    """A plain Yosys gate-level synthesis for experiments and tests (the real front half is
    closer.flow's); tie cells and port buffers are inserted so the netlist is placeable. Hard
    macros (`macro_liberties`) stay black-box instances."""
    from closer.flow.platform import dont_use_patterns

    chparams = "".join(f"chparam -set {k} {v} {top}\n" for k, v in (parameters or {}).items())
    # the flow's list, as globs (Yosys script lines are cut at 4 KB: one option per cell is too long)
    dont_use = "".join(f" -dont_use {pattern}" for pattern in dont_use_patterns())
    script = GATE_SYNTH_SCRIPT.format(lib=liberty, macro_reads="".join(f"read_liberty -lib {m}\n" for m in macro_liberties),
                                      reads="\n".join(f"read_verilog -sv {p}" for p in rtl),
                                      top=top, chparams=chparams, out=out_v, dont_use=dont_use)
    ys = out_v.with_suffix(".ys")
    ys.write_text(script)
    run(Command(["yosys", "-s", str(ys)], env={"PATH": search_path()}, timeout_s=900), log)
    return out_v
