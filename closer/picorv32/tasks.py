"""Oracles of the three PicoRV32 pilot tasks (definitions in designs/picorv32/tasks/*.toml).

* debug: faults repaired = hidden programs (one per injected fault) that pass on the candidate.
* fmax:  gates = every firmware program of the config on the candidate RTL and the GLS programs on
         its synthesized netlist; fmax from OpenSTA at each corner; reward = gate * min(1, fmax /
         target) at the reward corner. Raw fmax is always reported.
* coverage: see closer.picorv32.coverage.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from closer.errors import InputError
from closer.picorv32.firmware import (build_programs, config_march, config_parameters,
                                      programs_for)
from closer.picorv32.layout import PicoPaths, pico_paths
from closer.picorv32.oracle import gate_level_job, rtl_job, run_suite
from closer.picorv32.synth import run_sta, synthesize


def _load_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError as exc:
        raise InputError(f"{path} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from exc


def _validate(model: type[BaseModel], data: dict, path: Path, prefix: str = ""):
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(f"{path}: key {prefix}{'.'.join(map(str, first['loc']))}: {first['msg']}") from exc


# ---------------------------------------------------------------- debug

class HiddenFault(BaseModel):
    program: str = Field(description="Hidden firmware program that detects this fault")


class DebugHidden(BaseModel):
    config: str
    faults: dict[str, HiddenFault]


class DebugGrade(BaseModel):
    repaired: list[str]
    unrepaired: list[str]
    faults_total: int
    reward: float = Field(description="repaired / total; 0 when the candidate does not simulate")
    messages: dict[str, str] = {}


def load_debug_hidden(paths: PicoPaths | None = None) -> DebugHidden:
    path = (paths or pico_paths()).debug_hidden
    return _validate(DebugHidden, _load_toml(path), path)


def grade_debug(candidate_rtl: Path, work: Path) -> DebugGrade:
    hidden = load_debug_hidden()
    programs = sorted({f.program for f in hidden.faults.values()})
    images = build_programs(programs, config_march(hidden.config), work / "fw")
    suite = run_suite(rtl_job([candidate_rtl], images, work / "sim",
                              config_parameters(hidden.config), timeout_s=300))
    repaired = [f for f, h in hidden.faults.items() if suite.outcomes.get(h.program, False)]
    unrepaired = [f for f in hidden.faults if f not in repaired]
    messages = {f: suite.messages.get(hidden.faults[f].program, "did not run") for f in unrepaired}
    return DebugGrade(repaired=repaired, unrepaired=unrepaired, faults_total=len(hidden.faults),
                      reward=len(repaired) / len(hidden.faults), messages=messages)


# ---------------------------------------------------------------- fmax

class FmaxEvaluation(BaseModel):
    corners: list[str]
    sta_period_ns: float = Field(gt=0)
    abc_period_ps: int = Field(gt=0)
    reward_corner: str
    gls_programs: list[str]


class FmaxReward(BaseModel):
    target_mhz: float = Field(gt=0)


class FmaxTaskInfo(BaseModel):
    name: str
    design: str
    config: str


class FmaxTask(BaseModel):
    task: FmaxTaskInfo
    evaluation: FmaxEvaluation
    reward: FmaxReward


class FmaxResult(BaseModel):
    gate_func: bool
    gate_gls: bool
    failed_programs: list[str]
    fmax_mhz: dict[str, float]
    worst_slack_ns: dict[str, float]
    cells: int
    area_um2: float
    target_mhz: float
    reward_corner: str
    reward: float


def load_fmax_task(paths: PicoPaths | None = None) -> FmaxTask:
    path = (paths or pico_paths()).task_toml("fmax")
    return _validate(FmaxTask, _load_toml(path), path)


def evaluate_fmax(candidate_rtl: Path, work: Path, task: FmaxTask | None = None,
                  measure_failed: bool = True) -> FmaxResult:
    """Gate, measure and score one candidate. With `measure_failed=False` a candidate that fails
    the RTL gate is not synthesized (reward 0, fmax left unmeasured): a quick reject."""
    task = task or load_fmax_task()
    config, ev = task.task.config, task.evaluation
    march, params = config_march(config), config_parameters(config)
    images = build_programs(programs_for(config), march, work / "fw")
    rtl = run_suite(rtl_job([candidate_rtl], images, work / "rtl_sim", params))
    if not rtl.passed and not measure_failed:
        return FmaxResult(gate_func=False, gate_gls=False, failed_programs=rtl.failed_programs,
                          fmax_mhz={}, worst_slack_ns={}, cells=0, area_um2=0.0,
                          target_mhz=task.reward.target_mhz, reward_corner=ev.reward_corner,
                          reward=0.0)
    synth = synthesize([candidate_rtl], work / "synth", params, abc_period_ps=ev.abc_period_ps)
    gls_images = [i for i in images if i.name in ev.gls_programs]
    gls = run_suite(gate_level_job(synth.netlist, gls_images, work / "gls_sim"))
    sta = {c: run_sta(synth.netlist, pico_paths().sdc, work / "sta", c, ev.sta_period_ns)
           for c in ev.corners}
    fmax = {c: r.fmax_mhz for c, r in sta.items()}
    gate = rtl.passed and gls.passed
    reward = min(1.0, fmax[ev.reward_corner] / task.reward.target_mhz) if gate else 0.0
    return FmaxResult(gate_func=rtl.passed, gate_gls=gls.passed,
                      failed_programs=rtl.failed_programs + [f"gls:{p}" for p in gls.failed_programs],
                      fmax_mhz=fmax, worst_slack_ns={c: r.worst_slack_ns for c, r in sta.items()},
                      cells=synth.cells, area_um2=synth.area_um2, target_mhz=task.reward.target_mhz,
                      reward_corner=ev.reward_corner, reward=reward)
