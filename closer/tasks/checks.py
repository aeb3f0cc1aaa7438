"""The checks a task is scored by, as plain functions over a workspace tree: the functional
oracle (cocotb) under given conditions, the flow to synthesis/STA, gate-level simulation of the
synthesized netlist. The evaluator runs them on hidden conditions; the metered public tools
(`python -m closer.tasks.public_check`) run them on the public conditions from the workspace.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

from closer import metrics as mk
from closer.errors import CloserError, ToolError
from closer.flow.paths import FlowPaths
from closer.pdk import pdk
from closer.sim import CocotbJob, run_cocotb
from closer.tasks.models import Conditions, TaskConfig

SIM_TIMEOUT_S = 900.0


@dataclass
class FuncResult:
    tests: int = 0
    failed: int = 0
    cycles: int | None = None  # workload cycles of the scoring config (None: a test did not report)
    runs: list[dict] = field(default_factory=list)  # per config: results.xml, log, counts
    errors: list[str] = field(default_factory=list)


def oracle_env(conditions: Conditions, width: int, report_dir: Path, gls: bool = False) -> dict[str, str]:
    seeds = conditions.gls_seeds if gls else conditions.seeds
    return {
        "GCD_WIDTH": str(width),
        "GCD_SEEDS": ",".join(str(s) for s in seeds),
        "GCD_COUNT": str(conditions.gls_count if gls else conditions.count),
        "GCD_BACKPRESSURE": "1" if conditions.backpressure else "0",
        "GCD_EDGE_CASES": "1" if conditions.edge_cases and not gls else "0",
        "GCD_REPORT_DIR": str(report_dir),
    }


def _width(parameters: dict) -> int:
    return int(parameters.get("WIDTH", 16))


def _collect(result: FuncResult, sim, report_dir: Path, label: str, count_cycles: bool) -> None:
    result.runs.append({"run": label, "tests": sim.tests, "failed": sim.failed, "build_ok": sim.build_ok,
                        "completed": sim.completed, "results_xml": str(sim.results_xml), "log": str(sim.log)})
    if not sim.build_ok:
        result.errors.append(f"{label}: the design does not build (log {sim.log})")
        result.tests += 1
        result.failed += 1
        return
    if not sim.completed or sim.tests == 0:
        result.errors.append(f"{label}: the simulation ended without results (log {sim.log})")
        result.tests += 1
        result.failed += 1
        return
    result.tests += sim.tests
    result.failed += sim.failed
    if count_cycles:
        reports = sorted(report_dir.glob("*.json"))
        cycles = [json.loads(p.read_text())["cycles"] for p in reports]
        result.cycles = sum(cycles) if len(reports) >= sim.tests else None


def run_functional(sources: list[Path], top: str, oracle_dir: Path, test_module: str,
                   conditions: Conditions, parameters_by_config: dict[str, dict], scoring_config: str,
                   build_root: Path) -> FuncResult:
    """One cocotb run per config of `conditions`; cycles come from the scoring config's run."""
    result = FuncResult()
    for config in conditions.configs:
        params = parameters_by_config[config]
        build = build_root / config
        shutil.rmtree(build, ignore_errors=True)
        report = build / "reports"
        job = CocotbJob(sources=sources, toplevel=top, test_module=test_module, test_dir=oracle_dir,
                        build_dir=build, parameters=params, env=oracle_env(conditions, _width(params), report),
                        timeout_s=SIM_TIMEOUT_S)
        sim = run_cocotb(job, check_build=False)
        _collect(result, sim, report, config, count_cycles=config == scoring_config)
    return result


def run_gate_level(netlist: Path, top: str, oracle_dir: Path, test_module: str, conditions: Conditions,
                   parameters: dict, build_dir: Path) -> FuncResult:
    """The synthesized netlist with the PDK's functional cell models."""
    result = FuncResult()
    shutil.rmtree(build_dir, ignore_errors=True)
    report = build_dir / "reports"
    build_dir.mkdir(parents=True)
    netlist_v = build_dir / f"{top}_netlist.v"  # cocotb's runner classifies sources by suffix
    shutil.copyfile(netlist, netlist_v)
    job = CocotbJob(sources=[*pdk().verilog_models, netlist_v], toplevel=top, test_module=test_module,
                    test_dir=oracle_dir, build_dir=build_dir,
                    defines={"FUNCTIONAL": 1, "UNIT_DELAY": "#0"},
                    env=oracle_env(conditions, _width(parameters), report, gls=True), timeout_s=SIM_TIMEOUT_S)
    sim = run_cocotb(job, check_build=False)
    _collect(result, sim, report, "gls", count_cycles=False)
    return result


def write_design_folder(tree: Path, task: TaskConfig, parameters_by_config: dict[str, dict],
                        folder: Path) -> Path:
    """A design folder (design.toml + copies of the tree's RTL and SDC) named after the design,
    which is what `closer flow` reads."""
    shutil.rmtree(folder, ignore_errors=True)
    for rel in [*task.rtl, task.sdc]:
        src = tree / rel
        if not src.is_file():
            raise ToolError(f"{src}: missing (the task's design needs {rel})")
        dest = folder / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
    design = {
        "design": {"name": task.design, "top": task.top, "description": f"task {task.task_id}"},
        "sources": {"rtl": task.rtl, "include_dirs": []},
        "clock": {"port": task.clock_port, "period_ns": task.clock_period_ns},
        "constraints": {"sdc": task.sdc},
        "configs": {name: {"parameters": params} for name, params in parameters_by_config.items()},
    }
    (folder / "design.toml").write_text(tomli_w.dumps(design))
    return folder


@dataclass
class FlowOutcome:
    metrics: dict
    netlist: Path | None
    error: str | None
    metadata: Path | None


def run_synthesis(design_folder: Path, task: TaskConfig, out: Path, to: str = "sta") -> FlowOutcome:
    """`closer flow run <folder> --to sta`; a tool failure is returned as `error`, not raised."""
    from closer.flow.runner import run_flow

    fpaths = FlowPaths(out, task.design)
    netlist = fpaths.node_dir("synth") / "outputs" / f"{task.top}.vg"
    try:
        result = run_flow(str(design_folder), config=task.config, to=to, backend="classic", out=out)
    except CloserError as exc:
        # a failed STA step still leaves the synthesized netlist and the unconstrained-endpoint report
        audit = unconstrained_from_report(fpaths.node_dir("sta") / "reports" / "unconstrained.rpt")
        partial = {} if audit is None else {mk.UNCONSTRAINED_ENDPOINTS: audit}
        return FlowOutcome(partial, netlist if netlist.is_file() else None, f"flow to {to} failed: {exc}", None)
    metadata = Path(result.metadata)
    data = json.loads(metadata.read_text())
    return FlowOutcome(data, netlist if netlist.is_file() else None, None, metadata)


_UNCONSTRAINED = re.compile(r"There are (\d+) unconstrained endpoints")


def unconstrained_from_report(path: Path) -> int | None:
    """OpenSTA `check_setup -unconstrained_endpoints` output (the flow's reports/unconstrained.rpt):
    the count, or None when the report does not exist. No such line means none."""
    if not path.is_file():
        return None
    match = _UNCONSTRAINED.search(path.read_text(errors="replace"))
    return int(match.group(1)) if match else 0


def func_metrics(result: FuncResult) -> dict[str, float]:
    out = {mk.FUNC_TESTS_TOTAL: result.tests, mk.FUNC_TESTS_FAILED: result.failed}
    if result.cycles is not None:
        out[mk.SIM_CYCLES] = result.cycles
    return out


def gls_metrics(result: FuncResult) -> dict[str, float]:
    return {mk.GLS_TESTS_TOTAL: result.tests, mk.GLS_TESTS_FAILED: result.failed}
