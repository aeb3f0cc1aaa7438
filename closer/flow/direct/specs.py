"""The direct engine's nodes as data (closer.flow.direct.engine.NodeSpec): what each reads, what it
must leave and how it runs."""

from __future__ import annotations

import shutil
import time
import traceback
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from closer.errors import ToolError
from closer.flow.direct.engine import FrontContext, NodeSpec
from closer.flow.direct.sources import DesignSources
from closer.flow.settings import SynthSettings
from closer.flow.tool_versions import cached_version, siliconcompiler_version
from closer.procs import run


@dataclass(frozen=True)
class InProcess:
    """What a node that runs no executable reports in place of closer.procs.Completed."""
    wall_s: float
    cpu_s: float | None = None
    peak_rss_mb: float | None = None


def spec(step: str, ctx: FrontContext, abc: str | None) -> NodeSpec:
    if step == "synth" and abc is None:
        from closer.flow.settings import abc_script

        abc = abc_script(ctx.design.physical)
    builders = {"lint": _lint, "elaborate": _elaborate, "synth": lambda c: _synth(c, abc),
                "sta": _sta, "pnr": _pnr}
    if step not in builders:
        raise ToolError(f"the direct engine has no step {step!r}")
    return builders[step](ctx)


def _source_inputs(sources: DesignSources) -> dict[str, Path]:
    files = {f"rtl{n}:{p.name}": p for n, p in enumerate(sources.rtl)}
    files.update({f"include{n}:{p.name}": p for n, p in enumerate(sources.include_dirs)})
    return files


def _version(kind: str, exe: str, switch: str, parse):
    def version() -> str | None:
        path = shutil.which(exe)
        return cached_version(f"direct.{kind}", path, [switch], parse)[0] if path else None
    return version


def _lint(ctx: FrontContext) -> NodeSpec:
    from closer.flow.direct.lint import lint_command, parse_version, write_blackboxes

    lefs = [m.lef for m in ctx.macros]

    def go(node: Path):
        blackboxes = write_blackboxes(node, lefs)
        return run(lint_command(node, ctx.sources, blackboxes, ctx.timeout_s), ctx.flow_paths.node_log("lint"))

    return NodeSpec("lint", "verilator", {"top": ctx.sources.top, "params": ctx.sources.params},
                    {**_source_inputs(ctx.sources), **{f"lef:{p.name}": p for p in lefs}}, [], [],
                    _version("verilator", "verilator", "--version", parse_version), go)


def _pyslang_version() -> str:
    import pyslang

    info = pyslang.VersionInfo
    return f"{info.getMajor()}.{info.getMinor()}.{info.getPatch()}"


def _elaborate(ctx: FrontContext) -> NodeSpec:
    output = f"outputs/{ctx.sources.elaborated_name}"

    def go(node: Path):
        from closer.flow.direct.elaborate import elaborate

        start = time.monotonic()
        with open(ctx.flow_paths.node_log("elaborate"), "w") as log:
            ok = elaborate(ctx.sources, node / output, log)
        if not ok:
            raise ToolError("pyslang reported errors")
        return InProcess(time.monotonic() - start)

    return NodeSpec("elaborate", "pyslang", {"top": ctx.sources.top, "params": ctx.sources.params},
                    _source_inputs(ctx.sources), [], [output], _pyslang_version, go)


def _synth(ctx: FrontContext, abc: str) -> NodeSpec:
    from closer.flow.direct.synth import parse_version, prepare_synthesis

    top, elaborated = ctx.sources.top, ctx.sources.elaborated_name
    physical = ctx.design.physical
    settings = {"abc": abc, "top": top, "params": ctx.sources.params,
                "synthesis": {k: getattr(physical, k) for k in SynthSettings.model_fields},
                "macros": [m.name for m in ctx.macros], "siliconcompiler": siliconcompiler_version()}
    corner = ctx.platform.synthesis.corner
    liberty = [ctx.pdk_paths.liberty(corner), *(m.liberty_for(corner) for m in ctx.macros)]
    elaborate_out = ctx.flow_paths.node_dir("elaborate") / "outputs" / elaborated

    def go(node: Path):
        command = prepare_synthesis(node, ctx.sources, physical, abc, ctx.platform, ctx.pdk_paths,
                                    ctx.macros, ctx.sdc)
        return run(replace(command, timeout_s=ctx.timeout_s), ctx.flow_paths.node_log("synth"))

    return NodeSpec("synth", "yosys", settings, {"elaborated": elaborate_out, "sdc": ctx.sdc}, liberty,
                    [f"outputs/{top}.vg", "reports/stat.json"],
                    _version("yosys", "yosys", "--version", parse_version), go,
                    copy_in={elaborated: elaborate_out})


def sta_corners(ctx: FrontContext):
    """One StaCorner per platform corner, in name order (SiliconCompiler's scenario order): the
    main library's Liberty, then each macro's for that corner."""
    from closer.flow.direct.sta import StaCorner

    return [StaCorner(name, [str(ctx.pdk_paths.liberty(name)), *(str(m.liberty_for(name)) for m in ctx.macros)],
                      list(checks.checks))
            for name, checks in sorted(ctx.platform.corners.items())]


def _sta(ctx: FrontContext) -> NodeSpec:
    from closer.flow.direct.sta import STA_JSON, collect_sta, parse_version, sta_command, write_sta_inputs

    top = ctx.sources.top
    corners = sta_corners(ctx)
    exceptions = [str(e) for e in ctx.design.constraints.sdc_exceptions]
    clock_port = ctx.design.clock.port
    macro_liberty = {c.name: c.liberty[1:] for c in corners if len(c.liberty) > 1}
    netlist = ctx.flow_paths.node_dir("synth") / "outputs" / f"{top}.vg"

    def go(node: Path):
        write_sta_inputs(node, top, corners, [str(ctx.sdc)], exceptions, clock_port)
        done = run(sta_command(node, ctx.timeout_s), ctx.flow_paths.node_log("sta"))
        collect_sta(node, top, macro_liberty)
        return done

    settings = {"corners": [asdict(c) for c in corners], "clock_port": clock_port,
                "sdc_exceptions": exceptions}
    pdk_files = [Path(f) for c in corners for f in c.liberty]
    return NodeSpec("sta", "sta", settings, {"netlist": netlist, "sdc": ctx.sdc}, pdk_files,
                    [STA_JSON, f"outputs/{top}.vg"],
                    _version("sta", "sta", "-version", parse_version), go,
                    copy_in={f"{top}.vg": netlist})


def _pnr(ctx: FrontContext) -> NodeSpec:
    from closer.flow.direct.pnr import PNR_JSON, PnrSettings, physical_revision, run_pnr

    top = ctx.sources.top
    config = ctx.design.config(ctx.config)
    settings = PnrSettings.of(ctx.design.physical, ctx.design.constraints.sdc_exceptions,
                              config.macros, config.macro_placements)
    netlist = ctx.flow_paths.node_dir("sta") / "outputs" / f"{top}.vg"

    def go(node: Path):
        start = time.monotonic()
        with open(ctx.flow_paths.node_log("pnr"), "w") as log, redirect_stdout(log), redirect_stderr(log):
            try:
                print(run_pnr(node, top, ctx.sdc, settings))
            except Exception:
                traceback.print_exc()
                raise
        return InProcess(time.monotonic() - start)

    def version() -> str:
        from closer.physical.route.route import QROUTER_VERSION
        return QROUTER_VERSION

    return NodeSpec("pnr", "qrouter", {**asdict(settings), "physical": physical_revision()},
                    {"netlist": netlist, "sdc": ctx.sdc}, [],
                    [PNR_JSON, f"outputs/{top}.vg", f"outputs/{top}.gds", f"outputs/{top}.def"],
                    version, go, copy_in={f"{top}.vg": netlist})
