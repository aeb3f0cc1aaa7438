"""Hard macros of a design config (`macros = [...]` in design.toml) in the flow.

Each macro is a PDK abstract (closer.pdk.MacroAbstract: a LEF and Liberty files) and enters the
SiliconCompiler project as one more ASIC library (`asic asiclib`), the way SiliconCompiler takes
macro libraries:

* synthesis (SiliconCompiler's `yosys/syn_asic`) reads every asiclib's synthesis-corner Liberty
  with `read_liberty -lib` (its second, unit-delay read skips cells with buses, which the SRAMs
  have), so the macro stays a black-box cell and its instance stays in the netlist; ABC maps to
  the main library's files only; `stat -liberty` counts the macro's Liberty area;
* STA (closer.flow.sta_task) reads each asiclib's Liberty of the scenario's corner;
* lint (Verilator) gets a black-box module made from the LEF's ports (`blackbox_verilog`), since
  the RTL instantiates a module no source file defines; elaboration (slang) already ignores
  unknown modules.

A macro whose PDK has no Liberty for a corner is timed there with its typical one
(`MacroAbstract.liberty_for`); the STA node records that (`closer__sta__macro_liberty_corner`).
"""

from __future__ import annotations

import re
from pathlib import Path

from closer.errors import InputError
from closer.pdk import MacroAbstract, PdkPaths

_BIT = re.compile(r"(.+)\[(\d+)\]")
_DIRECTIONS = {"INPUT": "input", "OUTPUT": "output", "INOUT": "inout"}


def config_macros(names: list[str], pdk_paths: PdkPaths) -> list[MacroAbstract]:
    """The abstracts of a config's macros (closer.designs.model checked they exist)."""
    out = []
    for name in names:
        abstract = pdk_paths.macro(name)
        if abstract is None:
            raise InputError(f"unknown macro {name!r}: no LEF and Liberty in {pdk_paths.sram_macros}")
        out.append(abstract)
    return out


def sc_macro_library(abstract: MacroAbstract, corners: list[str], delay_model: str,
                     pdk_paths: PdkPaths):
    """The SiliconCompiler library of one macro: a timing fileset per Liberty file
    (`models.timing.<characterized corner>.<delay model>`), each of the platform's `corners` mapped
    to the one `MacroAbstract.liberty_corner_for` picks, and the LEF as its APR fileset."""
    from siliconcompiler import StdCellLibrary

    library = StdCellLibrary(abstract.name)
    library.set_dataroot("pdk_root", str(pdk_paths.root))
    with library.active_dataroot("pdk_root"):
        for characterized, liberty in abstract.liberty_files.items():
            with library.active_fileset(_timing_fileset(characterized, delay_model)):
                library.add_file(str(liberty.relative_to(pdk_paths.root)), filetype="liberty")
        for corner in corners:
            library.add_asic_libcornerfileset(
                corner, delay_model, _timing_fileset(abstract.liberty_corner_for(corner), delay_model))
        with library.active_fileset("models.physical"):
            library.add_file(str(abstract.lef.relative_to(pdk_paths.root)), filetype="lef")
            library.add_asic_aprfileset()
    return library


def _timing_fileset(corner: str, delay_model: str) -> str:
    return f"models.timing.{corner}.{delay_model}"


def blackbox_verilog(name: str, lef: Path) -> str:
    """A Verilog black-box module of macro `name` with the LEF's signal ports (buses from `pin[i]`
    bits, in LEF order; power pins left out, as the RTL leaves them unconnected)."""
    from closer.physical.io.lef import read_macros

    macros = read_macros(lef)
    if name not in macros:
        raise InputError(f"{lef}: no MACRO {name}")
    ports: dict[str, list] = {}  # base name -> [direction, highest bit or None]
    for pin in macros[name].signal_pins():
        match = _BIT.fullmatch(pin.name)
        base, bit = (match.group(1), int(match.group(2))) if match else (pin.name, None)
        direction = _DIRECTIONS.get(pin.direction.upper())
        if direction is None:
            raise InputError(f"{lef}: macro {name} pin {pin.name}: direction {pin.direction!r}")
        entry = ports.setdefault(base, [direction, bit])
        if bit is not None and (entry[1] is None or bit > entry[1]):
            entry[1] = bit
    lines = [f"// Black box of {name}: the signal ports of {lef.name} (closer.flow.macros).",
             "(* blackbox *)", f"module {name} ("]
    decls = [f"    {direction} wire {f'[{high}:0] ' if high is not None else ''}{base}"
             for base, (direction, high) in ports.items()]
    lines.append(",\n".join(decls))
    lines += [");", "endmodule", ""]
    return "\n".join(lines)


_INSTANCE = re.compile(r"^\s*(\\\S+|[A-Za-z_][\w$]*)\s+(\\\S+|[A-Za-z_][\w$]*)\s*\(", re.M)


def netlist_instances(netlist_text: str, masters: set[str]) -> dict[str, str]:
    """{instance name: master} of the instances of `masters` in a Yosys gate netlist (escaped
    names without their leading backslash)."""
    found = {}
    for master, instance in _INSTANCE.findall(netlist_text):
        master = master.lstrip("\\")
        if master in masters:
            found[instance.lstrip("\\")] = master
    return found


def resolve_instance(name: str, instances: dict[str, str]) -> str | None:
    """The netlist's name of the instance design.toml calls `name`: the same name, else the one
    name that equals it with every hierarchy separator (`/`, `.`) read as `.` (the flow's netlist
    joins module levels with `/` and generate blocks with `.`: `u_buf/u_mem/g_macro.g_bank[0].u_sram`
    for `u_buf.u_mem.g_macro.g_bank[0].u_sram`); None when none or several match."""
    if name in instances:
        return name
    key = name.replace("/", ".")
    matches = [i for i in instances if i.replace("/", ".") == key]
    return matches[0] if len(matches) == 1 else None
