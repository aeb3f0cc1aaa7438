"""Build the SiliconCompiler ASIC project for one run: design, platform, macros, corners,
flowgraph."""

from __future__ import annotations

from pathlib import Path

from closer.designs.model import HDL_SUFFIXES, Design, DesignPaths
from closer.flow.macros import config_macros, sc_macro_library
from closer.flow.direct.sources import SYSTEMVERILOG_SUFFIXES, param_value
from closer.flow.paths import FlowPaths
from closer.flow.platform import Platform
from closer.flow.sc_library import sc_library
from closer.flow.steps import Step
from closer.pdk import PdkPaths

from closer.flow.paths import JOB_NAME


def sc_design(design: Design, paths: DesignPaths, config_name: str, sdc: Path):
    """The SiliconCompiler Design: fileset `rtl` (sources, include dirs, parameters), `sdc` (the
    canonical SDC closer.sdc wrote from the design's, never the design's file itself)."""
    from siliconcompiler import Design as ScDesign

    config = design.config(config_name)
    sc = ScDesign(design.name)
    with sc.active_fileset("rtl"):
        sc.set_topmodule(design.top)
        for source in paths.rtl(design):
            sc.add_file(str(source), filetype=HDL_SUFFIXES[source.suffix])
        for idir in paths.include_dirs(design):
            sc.add_idir(str(idir))
        for name, value in sorted(config.parameters.items()):
            sc.set_param(name, param_value(value))
    with sc.active_fileset("sdc"):
        sc.add_file(str(sdc), filetype="sdc")
    return sc


def build_project(design: Design, paths: DesignPaths, config_name: str, platform: Platform,
                  pdk_paths: PdkPaths, steps: list[Step], flow_paths: FlowPaths, to: str,
                  flow_name: str, sdc: Path, log_stream=None):
    """The ASIC project over the backend's whole step list, run up to step `to` (SiliconCompiler's
    `option to`), so the graph and its name stay the same whatever `--to` is and the nodes of a
    longer earlier run are reused. With `log_stream`, SiliconCompiler's console log goes there."""
    from siliconcompiler import ASIC, Flowgraph

    from closer.flow.records import use_cached_packages_record

    project = ASIC(sc_design(design, paths, config_name, sdc))
    use_cached_packages_record(project)
    project.option.set_nodashboard(True)   # the CLI draws its own one-line progress
    if log_stream is not None:
        redirect_console_log(project, log_stream)
    project.add_fileset(["rtl", "sdc"])
    library = sc_library(platform, pdk_paths)
    project.set_mainlib(library)
    macros = config_macros(design.config(config_name).macros, pdk_paths)
    if macros:  # each macro one more ASIC library, after the main one (closer.flow.macros)
        project.add_asiclib([library, *(sc_macro_library(m, list(platform.corners),
                                                         platform.platform.delay_model, pdk_paths)
                                        for m in macros)])
    project.set_pdk(f"{platform.platform.name}_pdk")
    project.set_asic_delaymodel(platform.platform.delay_model)
    for corner, checks in platform.corners.items():
        scenario = project.constraint.timing.make_scenario(corner)
        scenario.add_libcorner(corner)
        scenario.add_check(checks.checks)

    flow = Flowgraph(flow_name)
    previous = None
    for step in steps:
        flow.node(step.name, step.make_task())
        if previous is not None:
            flow.edge(previous, step.name)
        previous = step.name
    project.set_flow(flow)
    project.option.add_to(to, clobber=True)
    systemverilog = any(p.suffix in SYSTEMVERILOG_SUFFIXES for p in paths.rtl(design))
    for step in steps:
        _configure(project, step.name, design, config_name, platform, macros, systemverilog)

    option = project.option
    option.set_hash(True)          # reuse keyed on file content, not timestamps
    option.set_nodisplay(True)
    option.set_quiet(True)
    project.set("option", "builddir", str(flow_paths.sc_build))
    project.set("option", "jobname", JOB_NAME)
    return project


def redirect_console_log(project, stream) -> None:
    """Point SiliconCompiler's console handlers (node processes log through them via a queue) at
    `stream`."""
    import logging

    for handler in project.logger.handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler,
                                                                         logging.FileHandler):
            handler.setStream(stream)


def _configure(project, step_name: str, design: Design, config_name: str, platform: Platform,
               macros, systemverilog: bool) -> None:
    """Task settings live in the project's schema: find the node's task there and set them."""
    if step_name == "lint" and macros:
        from closer.flow.lint_task import QuotedParamLintTask

        QuotedParamLintTask.find_task(project).set_macro_lefs([m.lef for m in macros], step=step_name,
                                                              index="0")
    if step_name == "elaborate":
        from siliconcompiler.tools.slang.elaborate import Elaborate

        # without the per-definition "// File:" banners: finding each definition's files walks
        # every token in Python (picorv32: the node's task time 0.18 -> 0.07 s), and only people
        # read them
        Elaborate.find_task(project).set_slang_includesourcepaths(False, step=step_name, index="0")
    if step_name == "synth":
        from closer.flow.synth_task import CloserSynthesis

        task = CloserSynthesis.find_task(project)
        task.add_yosys_synthesiscorner(platform.synthesis.corner, step=step_name, index="0",
                                       clobber=True)
        task.set_synth(design.physical, platform.synthesis.abc_load_ff, step=step_name, index="0")
        if systemverilog:  # of the files the flow reads (a fetched design's too)
            task.set_yosys_useslang(True, step=step_name, index="0")  # needs Yosys's slang plugin
    if step_name == "pnr":
        from closer.flow.pnr_task import PnrTask

        task = PnrTask.find_task(project)
        task.set_physical(design.physical, step=step_name, index="0")
        task.set_sdc_exceptions(design.constraints.sdc_exceptions, step=step_name, index="0")
        config = design.config(config_name)
        task.set_macros(config.macros, config.macro_placements, step=step_name, index="0")
    if step_name == "sta":
        from closer.flow.sta_task import ClassicStaTask

        task = ClassicStaTask.find_task(project)
        task.set_clock_port(design.clock.port, step=step_name, index="0")
        task.set_sdc_exceptions(design.constraints.sdc_exceptions, step=step_name, index="0")
