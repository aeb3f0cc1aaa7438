"""The synthesis node without SiliconCompiler's Python: SiliconCompiler's own Yosys script
(`tools/yosys/scripts/sc_synth_asic.tcl`, run from the installed package) with a manifest holding
only what that script reads.

SiliconCompiler's `yosys/syn_asic` node (closer.flow.synth_task.CloserSynthesis) writes the whole
project schema as a Tcl dict (`sc_manifest.tcl`) and runs `yosys -c sc_synth_asic.tcl` in the node
folder. The script reads about 50 keys of it (traced by wrapping `sc_cfg_get`/`sc_cfg_exists`);
`prepare_synthesis` writes those with the values the flow's project gives them, so the script
takes the same branches and passes Yosys and ABC the same arguments: the netlist
(`outputs/<top>.vg`) and `reports/stat.json` are byte-identical to SiliconCompiler's node
(tests/test_flow_direct_synth.py). The helper procs (`sc_cfg_get`, ...) are SiliconCompiler's
Tcl files, sourced from the installed package at run time, as its own manifest inlines them.

Also written as SiliconCompiler's node does: `inputs/sc_abc.constraints` (the driver cell and
output load ABC maps against) and the ABC delay target `abc_clock_period` (ps): the canonical SDC's
fastest clock period, less `synth_delay_margin` of it (SiliconCompiler's `abc_clock_derating`),
computed in SiliconCompiler's order of float operations and written as its `%.9g`. The Liberty
files are the prepared ones the SiliconCompiler engine reads (closer.flow.liberty_prep's cache
entries; their paths are in stat.json's `invocation`, so they must be the very same files).

Branches the script only takes for settings the flow never uses (flatten off, hier_opt, adder
and clock-gate mapping, logic locking, memory maps, blackbox filesets) read keys this manifest
does not write: changing one of the constants below without adding its keys fails the node with
SiliconCompiler's "key ... is not in the siliconcompiler configuration" rather than diverging.

Nothing here imports SiliconCompiler (its package body costs about a second): its files are found
through closer.flow.sc_files.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from closer.errors import InputError, ToolError, ToolMissing
from closer.flow.sc_files import siliconcompiler_root
from closer.procs import Command

if TYPE_CHECKING:
    from closer.flow.direct.sources import DesignSources
    from closer.flow.platform import Platform
    from closer.flow.settings import SynthSettings
    from closer.pdk import MacroAbstract, PdkPaths

TOOL, TASK, STEP, INDEX = "yosys", "syn_asic", "synth", "0"
FLOW = "closer-direct"     # any name: the script only looks its own node up under it
FILESET = "rtl"            # the design fileset holding the parameters (closer.flow.project)
ABC_CONSTRAINTS = "sc_abc.constraints"
MAINLIB_CELL_GROUPS = ("dontuse", "hold", "clkbuf", "clkgate", "clklogic")  # ABC's dont-use groups

# The task's settings as the SiliconCompiler engine leaves them (SiliconCompiler's defaults; the
# flow sets only strategy, derating, load, separator, corner and use_slang: closer.flow.project)
TASK_VARS: dict[str, object] = {
    "add_buffers": True,
    "add_tieoffs": True,
    "autoname": True,
    "flatten": True,
    "lock_design": False,
    "map_adders": False,
    "map_clockgates": False,
    "memory_libmap": None,
    "memory_techmap": None,
    "opt_dff_sat": False,
    "opt_undriven": True,
    "preserve_modules": [],
    "synth_extra_map": [],
    "tie_undef": "low",
}


def synthesis_script() -> Path:
    return siliconcompiler_root() / "tools" / "yosys" / "scripts" / "sc_synth_asic.tcl"


def _helper_tcl() -> list[Path]:
    """SiliconCompiler's Tcl helpers its manifest template inlines (`sc::parse_args`, then
    `sc_cfg_get` and the other schema accessors)."""
    common = siliconcompiler_root() / "tools" / "_common" / "tcl"
    return [common / "sc_proc_args.tcl", common / "sc_schema_access.tcl"]


def yosys_executable() -> str:
    exe = shutil.which(TOOL)
    if exe is None:
        raise ToolMissing("yosys: not found on PATH (the venv's launcher: closer.launchers.yosys)")
    return exe


def yosys_version(exe: str | None = None) -> str:
    """`yosys --version`'s second word, as SiliconCompiler records it (`record toolversion`: the
    script picks `abc` or `abc -fast` and the slang frontend by it); cached per executable
    (closer.flow.tool_versions, the same entry as the direct engine's version check)."""
    from closer.flow.tool_versions import cached_version

    exe = exe or yosys_executable()
    version, _ = cached_version(f"direct.{TOOL}", exe, ["--version"], parse_version)
    if not version:
        raise ToolError(f"{exe} --version failed: the synthesis script needs Yosys's version")
    return version


def parse_version(stdout: str) -> str | None:
    words = stdout.split()
    return words[1] if len(words) > 1 else None


def prepare_synthesis(node: Path, sources: DesignSources, settings: SynthSettings, abc: str,
                      platform: Platform, pdk_paths: PdkPaths, macros: list[MacroAbstract],
                      sdc: Path) -> Command:
    """Write the synthesis node's manifest and ABC constraints into `node` (whose
    `inputs/<sources.elaborated_name>` the caller has put there) and return the Yosys command that
    writes `outputs/<top>.vg`, `outputs/<top>.netlist.json` and `reports/stat.json` there.

    `abc` is the ABC script (closer.flow.settings.abc_scripts' inline `+cmd;...` form), `sdc` the
    canonical SDC. Raises InputError for a missing input or Liberty file, ToolMissing without
    Yosys or SiliconCompiler's scripts."""
    from closer.flow.settings import HIERARCHY_SEPARATOR

    node = Path(node).resolve()
    script, helpers = synthesis_script(), _helper_tcl()
    for path in (script, *helpers):
        if not path.is_file():
            raise ToolMissing(f"{path}: SiliconCompiler's Yosys synthesis script is missing")
    exe = yosys_executable()
    version = yosys_version(exe)

    design_input = node / "inputs" / sources.elaborated_name
    if not design_input.is_file():
        raise InputError(f"{design_input}: the synthesis node's input (the elaborate node's "
                         f"output) is missing")
    for sub in ("outputs", "reports"):
        (node / sub).mkdir(parents=True, exist_ok=True)
    for stale in (f"outputs/{sources.top}.vg", f"outputs/{sources.top}.netlist.json",
                  "reports/stat.json"):
        (node / stale).unlink(missing_ok=True)

    syn = platform.synthesis
    constraints = node / "inputs" / ABC_CONSTRAINTS
    text = abc_constraints_text(syn.driver_cell, syn.abc_load_ff)
    if text is None:
        constraints.unlink(missing_ok=True)
    else:
        constraints.write_text(text)

    period = abc_clock_period_ps(sdc_clock_period_ns(sdc), syn.abc_clock_multiplier,
                                 settings.synth_delay_margin)
    use_slang = sources.systemverilog
    params = list(sources.params)
    if use_slang and (node / "inputs" / f"{sources.top}.sv").is_file():
        # CloserSynthesis.write_task_manifest: read_slang refuses `-G P="v"`; the elaborated top
        # already has each overridden value as its default
        params = [(name, value) for name, value in params if not value.startswith('"')]

    mainlib = platform.platform.name
    libraries = dict.fromkeys([mainlib, *(m.name for m in macros)])  # SiliconCompiler's asiclib
    variables = {
        **TASK_VARS,
        "abc_clock_period": period,
        "abc_constraint_file": str(constraints),
        "hierarchy_separator": HIERARCHY_SEPARATOR,
        "strategy": abc,
        "synthesis_libraries": [str(p) for p in synthesis_libraries(node, platform, pdk_paths, macros)],
        "use_slang": use_slang,
    }
    entries = manifest_entries(sources, list(libraries), params, variables, version,
                               mainlib_cells=_mainlib_cells(platform, pdk_paths), platform=platform)
    write_manifest(node / "sc_manifest.tcl", entries, sources)
    return Command([exe, "-c", str(script)], cwd=node)


def manifest_entries(sources: DesignSources, libraries: list[str], params: list[tuple[str, str]],
                     variables: dict[str, object], version: str, mainlib_cells: dict[str, list[str]],
                     platform: Platform) -> list[tuple[tuple[str, ...], object]]:
    """(key path, value) of every key sc_synth_asic.tcl reads, in SiliconCompiler's schema
    naming. `libraries` is SiliconCompiler's `asic asiclib`, the main library first."""
    mainlib = libraries[0]
    syn = platform.synthesis
    task = ("tool", TOOL, "task", TASK)
    entries: list[tuple[tuple[str, ...], object]] = [
        (("arg", "step"), STEP),
        (("arg", "index"), INDEX),
        (("option", "flow"), FLOW),
        (("option", "design"), sources.name),
        (("option", "fileset"), [FILESET]),
        (("option", "optmode"), 0),
        (("flowgraph", FLOW, STEP, INDEX, "tool"), TOOL),
        (("flowgraph", FLOW, STEP, INDEX, "task"), TASK),
        (("record", "toolversion"), version),
        (("asic", "mainlib"), mainlib),
        (("asic", "asiclib"), libraries),
    ]
    entries += [(("library", mainlib, "asic", "cells", group), mainlib_cells.get(group, []))
                for group in MAINLIB_CELL_GROUPS]
    entries += [(("library", lib, "asic", "cells", "dontuse"), []) for lib in libraries[1:]]
    yosys = ("library", mainlib, "tool", "yosys")
    entries += [
        ((*yosys, "blackbox_fileset"), []),
        ((*yosys, "techmap"), []),
        ((*yosys, "tristatebuffermap"), None),
        ((*yosys, "buffer_cell"), list(syn.buffer_cell)),
        ((*yosys, "tielow_cell"), list(syn.tielow_cell)),
        ((*yosys, "tiehigh_cell"), list(syn.tiehigh_cell)),
    ]
    entries += [(("library", sources.name, "fileset", FILESET, "param", name), value)
                for name, value in params]
    entries.append(((*task, "refdir"), [str(synthesis_script().parent)]))
    entries += [((*task, "var", name), value) for name, value in sorted(variables.items())]
    return entries


def write_manifest(path: Path, entries: list[tuple[tuple[str, ...], object]],
                   sources: DesignSources) -> None:
    root = siliconcompiler_root()
    lines = ["# The synthesis node's manifest (closer.flow.direct.synth): the keys",
             "# SiliconCompiler's sc_synth_asic.tcl reads, and its helper procs.", ""]
    lines += [f"dict set sc_cfg {' '.join(_tcl_string(k) for k in keys)} {_tcl(value)}"
              for keys, value in entries]
    lines += ["", f"proc sc_root {{}} {{\n    return {_tcl_string(str(root))}\n}}"]
    lines += [f"source {_tcl_string(str(helper))}" for helper in _helper_tcl()]
    refdir = synthesis_script().parent
    lines += ["", f"set sc_tool {_tcl_string(TOOL)}", f"set sc_task {_tcl_string(TASK)}",
              f"set sc_topmodule {_tcl_string(sources.top)}",
              f"set sc_designlib {_tcl_string(sources.name)}",
              f"set sc_refdir {_tcl([str(refdir)])}", ""]
    path.write_text("\n".join(lines), encoding="ascii")


def abc_constraints_text(driver: str | None, load_ff: float | None) -> str | None:
    """`inputs/sc_abc.constraints` as SiliconCompiler's template renders it (a line each for the
    driver cell and the load, no final newline); None when neither is set (no file: the script
    then passes ABC no `-constr`)."""
    if not driver and not load_ff:
        return None
    return "\n".join([f"set_driving_cell {driver}" if driver else "",
                      f"set_load {load_ff}" if load_ff else ""])


def sdc_clock_period_ns(sdc: Path) -> float | None:
    """The fastest `create_clock -period` of the canonical SDC; None without a clock."""
    from closer.sdc import SdcException, SdcPolicy, parse_sdc

    # the canonical SDC passed the task's policy when it was written: read it allowing everything
    parsed = parse_sdc(sdc, SdcPolicy(allow=frozenset(SdcException)))
    periods = [value.value for command in parsed.commands if command.name == "create_clock"
               for option, value in command.options if option == "-period"]
    return min(periods) if periods else None


def abc_clock_period_ps(period_ns: float | None, clock_multiplier: float,
                        derating: float) -> float | None:
    """ABC's delay target in ps, by SiliconCompiler's arithmetic (the same operations in the same
    order, so the same float): the period in library units times 1000, less `derating` of it
    when 0 <= derating <= 1. None without a clock (or a zero target): no `-D`."""
    if period_ns is None:
        return None
    period = period_ns * 1.0
    period *= clock_multiplier / 1000
    period *= 1000
    if 0 <= derating <= 1:
        period *= (1.0 - derating)
    return period or None


def _mainlib_cells(platform: Platform, pdk_paths: PdkPaths) -> dict[str, list[str]]:
    from closer.flow.platform import dont_use_cells

    cells = {kind: list(names) for kind, names in platform.cells.items()}
    cells["dontuse"] = dont_use_cells(pdk_paths, platform.platform.name)
    return cells


# --- the synthesis Liberty ----------------------------------------------------------------------

def synthesis_liberty_files(platform: Platform, pdk_paths: PdkPaths,
                            macros: list[MacroAbstract]) -> list[tuple[str, Path]]:
    """(SiliconCompiler's prepared name `sc_<library>_<file stem>.lib`, source) of each library's
    synthesis-corner Liberty, main library first (CloserSynthesis._synthesis_liberty_files)."""
    info, corner = platform.platform, platform.synthesis.corner
    main = (pdk_paths.root / info.pdk / "libs.ref" / info.library / "lib"
            / f"{info.library}__{corner}.lib")        # as closer.flow.sc_library declares it
    named = [(info.name, main)]
    seen = {info.name}
    for macro in macros:
        if macro.name not in seen:
            seen.add(macro.name)
            named.append((macro.name, macro.liberty_for(corner)))
    return [(f"sc_{library}_{_stem(source)}.lib", source) for library, source in named]


def synthesis_libraries(node: Path, platform: Platform, pdk_paths: PdkPaths,
                        macros: list[MacroAbstract]) -> list[Path]:
    """The prepared Liberty files: closer.flow.liberty_prep's cache entries (built there when
    absent), or, without a usable cache, prepared into `node/inputs/` as SiliconCompiler does."""
    named = synthesis_liberty_files(platform, pdk_paths, macros)
    if len({name for name, _ in named}) != len(named):
        raise InputError("two synthesis Liberty files have the same prepared name: "
                         + ", ".join(str(source) for _, source in named))
    for _, source in named:
        if not source.is_file():
            raise InputError(f"{source}: synthesis Liberty file not found")
    return [prepared_liberty(source, name, node / "inputs") for name, source in named]


def prepared_liberty(source: Path, name: str, fallback_dir: Path) -> Path:
    """closer.flow.liberty_prep's cache entry for `source` (the file the SiliconCompiler engine
    reads too), built when absent; without a usable cache, a copy in `fallback_dir`."""
    from closer.flow import liberty_prep

    entry = liberty_prep.prepared_liberty(source, name)
    if entry is None:
        entry = fallback_dir / name
        entry.write_text(liberty_prep.prepare(source))
    return entry


def _stem(liberty: Path) -> str:
    """The file name without `.gz` and `.lib`, as SiliconCompiler names the prepared copy."""
    base = liberty.name
    for suffix in (".gz", ".lib"):
        if base.lower().endswith(suffix):
            base = base[: -len(suffix)]
    return base


# --- Tcl values as SiliconCompiler's manifest writes them ----------------------------------------

def _tcl(value: object) -> str:
    if value is None:
        return "{}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format(value, ".9g")
    if isinstance(value, (list, tuple)):
        return "[list " + " ".join(_tcl(item) for item in value) + "]"
    return _tcl_string(str(value))


_TCL_ESCAPES = str.maketrans({"\\": "\\\\", "[": "\\[", "$": "\\$", '"': '\\"'})


def _tcl_string(text: str) -> str:
    """A double-quoted Tcl word that reads back as `text` (no substitution), in ASCII: other
    characters as `\\uXXXX` UTF-16 code units, as Tcl decodes a script by the locale."""
    escaped = text.translate(_TCL_ESCAPES)
    if not escaped.isascii():
        escaped = "".join(char if char.isascii() else _tcl_units(char) for char in escaped)
    return f'"{escaped}"'


def _tcl_units(char: str) -> str:
    data = char.encode("utf-16-be")
    return "".join(f"\\u{int.from_bytes(data[i:i + 2], 'big'):04x}" for i in range(0, len(data), 2))
