"""Firmware oracle: run our firmware images on PicoRV32 RTL or on a gate-level sky130 netlist, in
Icarus through `closer.sim.run_cocotb` and the cocotb memory model `oracles/picorv32/firmware_tb.py`.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

from closer.errors import ToolError
from closer.pdk import pdk
from closer.picorv32.firmware import FirmwareImage
from closer.picorv32.layout import pico_paths
from closer.sim import CocotbJob, SimResult, run_cocotb

TOP = "picorv32"


@dataclass(frozen=True)
class SuiteResult:
    sim: SimResult
    outcomes: dict[str, bool]  # program name -> passed
    messages: dict[str, str] = field(default_factory=dict)  # program name -> failure message

    @property
    def passed(self) -> bool:
        return self.sim.passed and bool(self.outcomes) and all(self.outcomes.values())

    @property
    def failed_programs(self) -> list[str]:
        return [name for name, ok in self.outcomes.items() if not ok]


def rtl_job(rtl: list[Path], images: list[FirmwareImage], build_dir: Path,
            parameters: dict[str, int] | None = None, timeout_s: float = 600) -> CocotbJob:
    return _job(rtl, images, build_dir, parameters or {}, {}, timeout_s)


def gate_level_job(netlist: Path, images: list[FirmwareImage], build_dir: Path,
                   timeout_s: float = 1800) -> CocotbJob:
    """The synthesized netlist with the PDK's functional cell models (`-DFUNCTIONAL`)."""
    models = pdk().verilog_models
    return _job([*models, netlist], images, build_dir, {}, {"FUNCTIONAL": 1, "UNIT_DELAY": "#0"},
                timeout_s)


def _job(sources: list[Path], images: list[FirmwareImage], build_dir: Path,
         parameters: dict[str, int], defines: dict[str, object], timeout_s: float) -> CocotbJob:
    paths = pico_paths()
    env = {"CLOSER_FW_PROGRAMS": json.dumps([image.as_job_entry() for image in images])}
    return CocotbJob(sources=sources, toplevel=TOP, test_module=paths.testbench_module,
                     test_dir=paths.oracle_dir, build_dir=build_dir, simulator="icarus",
                     parameters=parameters, defines=defines, env=env, timeout_s=timeout_s)


def run_suite(job: CocotbJob) -> SuiteResult:
    sim = run_cocotb(job)
    if not sim.completed:
        raise ToolError(f"simulation of {job.toplevel} ended without results; log: {sim.log}")
    outcomes, messages = read_outcomes(sim.results_xml)
    return SuiteResult(sim, outcomes, messages)


def read_outcomes(results_xml: Path) -> tuple[dict[str, bool], dict[str, str]]:
    """Per-testcase pass/fail and failure message from cocotb's xUnit results file."""
    try:
        root = ElementTree.parse(results_xml).getroot()
    except ElementTree.ParseError as exc:
        raise ToolError(f"cocotb results file {results_xml} does not parse: {exc}") from exc
    outcomes: dict[str, bool] = {}
    messages: dict[str, str] = {}
    for case in root.iter("testcase"):
        name = case.get("name", "")
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        outcomes[name] = bad is None
        if bad is not None:
            messages[name] = bad.get("message", "") or (bad.text or "")
    return outcomes, messages
