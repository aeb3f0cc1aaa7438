"""Score one task tree under one set of conditions: the one scoring path of the pristine evaluator
(hidden conditions) and of the metered `verify`/`pnr` tools (public conditions).

    score_tree(tree, task, conditions, out) -> TreeScore

The same gates run through the same code; only `ScoringConditions` differ: the workload
(functional seeds, configs, requests), the physical conditions (STA corners, placer seed), the
oracle folder (hidden: the evaluator's copy; public: the tree's own tests/) and the targets
file. Order: functional tests (a failure ends the scoring: the func gate fails, reward 0), the
flow (`closer flow` to STA, or through the physical flow for `flow_to = finish`), LEC (when a
gate), gate-level simulation, `closer.reward`.

Layout under `out`::

    design/<name>/   design folder the flow reads     flow/   `closer flow` run
    sim/func/<cfg>/  cocotb runs                     sim/gls/  gate-level run
    lec/             equivalence check               metrics.json  every raw metric
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from closer.errors import InputError
from closer.pdk import pdk
from closer.reward import GateUnmeasured, MetricNotFound, compute_reward, load_targets, metrics_from_mapping
from closer.reward.errors import MetricsFileError
from closer.tasks import checks, lec, sim_reuse
from closer.tasks.models import Conditions, TaskConfig

# the last `closer flow` step per kind: the physical flow's signoff ("finish") is its pnr step
FLOW_STEP = {"sta": "sta", "finish": "pnr"}
LEC_CORNER = "tt_025C_1v80"  # cell functions are the same at every corner; any Liberty will do
FUNC_FAILED = "not run: the functional tests failed"
LEC_WAIT_S = 1800.0  # how long a scoring waits for another process's proof of the same RTL and netlist

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ScoringConditions:
    """What differs between the hidden evaluation and its public projection."""

    label: str                          # "hidden" | "public"
    conditions: Conditions              # workload and physical conditions
    parameters: dict[str, dict]         # top-module parameters of the scoring config and `conditions.configs`
    oracle: Path                        # cocotb oracle folder
    gates: list[str]
    targets: Path                       # closer.reward targets file
    sim_timeout_s: float = checks.SIM_TIMEOUT_S  # limit of each functional simulation


class Verdict(BaseModel):
    """closer.reward on one scoring's metrics (the reward fields of an evaluation record)."""

    scored: bool = False
    verifier_error: str | None = None
    reward: float | None = None
    gate: int | None = None
    gates: dict[str, str] = Field(default_factory=dict)
    failing_gates: list[str] = Field(default_factory=list)
    gate_reasons: dict[str, str] = Field(default_factory=dict)
    reasons: list[str] = Field(default_factory=list)
    reward_result: dict | None = None

    @property
    def feasible(self) -> bool:
        return self.scored and self.gate == 1


@dataclass
class TreeScore:
    label: str
    func: checks.FuncResult
    gls: checks.FuncResult
    metrics: dict
    verdict: Verdict
    flow: checks.FlowOutcome | None = None
    flow_error: str | None = None
    flow_dir: Path | None = None
    timings_s: dict[str, float] = field(default_factory=dict)


def flow_step(task: TaskConfig) -> str:
    if task.flow_to not in FLOW_STEP:
        raise InputError(f"task {task.task_id}: flow_to {task.flow_to!r}; known: {sorted(FLOW_STEP)}")
    return FLOW_STEP[task.flow_to]


def physical_conditions(task: TaskConfig, cond: Conditions) -> dict | None:
    """The design's [physical] entries the conditions fix (physical flows only)."""
    if flow_step(task) != "pnr" or cond.physical is None:
        return None
    return cond.physical.model_dump()


def score_tree(tree: Path, task: TaskConfig, sc: ScoringConditions, out: Path,
               progress: Progress | None = None, shared: Path | None = None) -> TreeScore:
    """`shared`: the folder where the scorings of one evaluation share their flow runs
    (checks.run_synthesis)."""
    say = progress or (lambda _line: None)
    out.mkdir(parents=True, exist_ok=True)
    sources = [tree / rel for rel in task.rtl]
    timings: dict[str, float] = {}
    say(f"[{sc.label}] functional tests ({', '.join(sc.conditions.configs)})")
    t0 = time.monotonic()
    func = checks.run_functional(sources, task.top, sc.oracle, task.test_module, sc.conditions, sc.parameters,
                                 task.config, out / "sim" / "func", timeout_s=sc.sim_timeout_s,
                                 reuse=sim_reuse.active())
    timings["func"] = round(time.monotonic() - t0, 1)
    metrics: dict = checks.func_metrics(func)
    if func.failed:
        # the func gate already fails (reward 0): the flow and GLS would not change the score
        gls = checks.FuncResult(tests=0, failed=0, errors=[FUNC_FAILED])
        score = TreeScore(sc.label, func, gls, metrics, Verdict(), flow_error=FUNC_FAILED, timings_s=timings)
        score.verdict = verdict(metrics, sc, out, score.flow_error)
        return score
    step = flow_step(task)
    folder = checks.write_design_folder(tree, task, {task.config: task.parameters[task.config]},
                                        out / "design" / task.design, physical_conditions(task, sc.conditions))
    say(f"[{sc.label}] flow to {step}" + (" (synthesis, place, route, GDS, DRC, LVS, STA)" if step == "pnr" else ""))
    t0 = time.monotonic()
    flow = checks.run_synthesis(folder, task, out / "flow", to=step, progress=say, shared=shared)
    timings["flow"] = round(time.monotonic() - t0, 1)
    metrics.update(flow.metrics)
    if "lec" in sc.gates and flow.netlist is not None:
        say(f"[{sc.label}] logic equivalence (RTL vs synthesized netlist)")
        t0 = time.monotonic()
        metrics.update(run_lec(sources, task, flow.netlist, out / "lec").metrics())
        timings["lec"] = round(time.monotonic() - t0, 1)
    if flow.netlist is not None:
        say(f"[{sc.label}] gate-level simulation")
        t0 = time.monotonic()
        gls = checks.run_gate_level(flow.netlist, task.top, sc.oracle, task.test_module, gls_conditions(sc.conditions),
                                    sc.parameters[task.config], out / "sim" / "gls", reuse=sim_reuse.active())
        timings["gls"] = round(time.monotonic() - t0, 1)
    else:
        gls = checks.FuncResult(tests=1, failed=1, errors=[flow.error or "no synthesized netlist"])
    metrics.update(checks.gls_metrics(gls))
    score = TreeScore(sc.label, func, gls, metrics, Verdict(), flow=flow, flow_error=flow.error,
                      flow_dir=out / "flow", timings_s=timings)
    score.verdict = verdict(metrics, sc, out, flow.error)
    return score


def gls_conditions(cond: Conditions) -> Conditions:
    """Gate-level seeds: the conditions' own, else the first functional seed."""
    return cond if cond.gls_seeds else cond.model_copy(update={"gls_seeds": cond.seeds[:1]})


def run_lec(sources: list[Path], task: TaskConfig, netlist: Path, work: Path) -> lec.LecResult:
    """The candidate's RTL against the netlist the flow synthesized from it (the layout is built
    from that netlist and LVS ties the layout to it). A proof or refutation of the same RTL and
    netlist is reused from the flow cache (closer.flow.reuse): the hidden and public scorings
    synthesize the same netlist, and a verify call has often checked the tree already."""
    from closer.flow import reuse
    from closer.toolchain import search_path

    job = lec.LecJob(rtl=sources, top=task.top, netlist=netlist, liberty=pdk().liberty(LEC_CORNER),
                     work=work, parameters=task.parameters[task.config],
                     reset=lec.find_reset(lec.netlist_inputs(netlist)))
    cache = reuse.active()
    if cache is None:
        return lec.run_lec(job)
    liberty = job.liberty.relative_to(pdk().root).as_posix()  # the key covers the PDK's content, wherever it lies
    fields = {"top": job.top, "parameters": job.parameters, "liberty": liberty,
              "reset": None if job.reset is None else [job.reset.name, job.reset.active_high],
              "bmc_cycles": job.bmc_cycles, "rtl": [p.name for p in sources]}
    key = reuse.files_key("lec", [*sources, netlist], fields, search_path())
    # the folders the stored files name, besides its own: the netlist's and the RTL's
    locations = reuse.run_locations(work) | {"netlist": netlist.parent}
    if sources:
        locations["rtl"] = Path(os.path.commonpath([path.parent for path in sources]))
    # the other scoring may be proving the same pair right now (closer.tasks.evaluate runs both at once)
    with cache.first_run(key, LEC_WAIT_S):
        if (entry := cache.lookup(key)) is not None:
            cache.restore(entry, work, locations=locations)
            if (stored := lec.LecResult.from_record(entry.result, old_work=Path(entry.source), work=work)) is not None:
                return stored
        result = lec.run_lec(job)
        if result.result in lec.DECIDED:  # an inconclusive run may be a solver time-out: never reused
            cache.store(key, work, result=result.record(work), locations=locations)
        return result


def verdict(metrics: dict, sc: ScoringConditions, out: Path, flow_error: str | None) -> Verdict:
    metrics_path = out / "metrics.json"
    metrics_path.write_text(json.dumps(metrics, indent=1, sort_keys=True, default=str) + "\n")
    label = str(metrics_path)
    try:
        result = compute_reward(metrics_from_mapping(metrics, label), load_targets(sc.targets))
    except MetricsFileError as exc:
        try:
            return _failed_gates_only(metrics, sc.gates, label, str(exc))
        except MetricsFileError as gate_exc:  # a gate's own key is malformed: nothing to score
            return Verdict(verifier_error=f"not scored: {gate_exc}")
    except (GateUnmeasured, MetricNotFound) as exc:
        cause = f"the flow failed: {flow_error}" if flow_error else "a required metric was not produced"
        gates = observed_gates(metrics, sc.gates, label)
        return Verdict(verifier_error=f"not scored: {exc} ({cause})", gates=gates,
                       failing_gates=[g for g, s in gates.items() if s == "fail"],
                       reasons=[f"gate {g}: {s}" for g, s in gates.items() if s != "pass"])
    result_json = result.model_dump(mode="json")
    return Verdict(scored=True, reward=result.reward, gate=result.gate,
                   gates={k: v.value for k, v in result.gates.items()},
                   failing_gates=[k for k, v in result.gates.items() if v.value == "fail"],
                   gate_reasons={k: d.reason for k, d in result.gate_details.items() if d.required},
                   reward_result=result_json, reasons=below_one_reasons(result_json))


def _failed_gates_only(metrics: dict, gates: list[str], label: str, problem: str) -> Verdict:
    """When the targets cannot be evaluated (e.g. no setup slack because nothing is timed) but a
    required gate fails, the reward is 0 regardless of the targets; else the scoring stays unscored."""
    observed = observed_gate_reasons(metrics, gates, label)
    failing = [g for g, (status, _) in observed.items() if status == "fail"]
    if not failing:
        return Verdict(verifier_error=f"not scored: {problem}",
                       gates={g: status for g, (status, _) in observed.items()})
    return Verdict(scored=True, reward=0.0, gate=0, gates={g: status for g, (status, _) in observed.items()},
                   failing_gates=failing, gate_reasons={g: reason for g, (_, reason) in observed.items()},
                   reasons=[f"gate {g}: {status}: {reason}" for g, (status, reason) in observed.items()
                            if status != "pass"] + [f"targets not evaluated: {problem}"])


def observed_gates(metrics: dict, gates: list[str], label: str) -> dict[str, str]:
    """What the metrics show for each required gate when no reward could be computed."""
    return {gate: status for gate, (status, _) in observed_gate_reasons(metrics, gates, label).items()}


def observed_gate_reasons(metrics: dict, gates: list[str], label: str) -> dict[str, tuple[str, str]]:
    """gate -> (pass | fail | not_measured, the gate's reason)."""
    from closer.reward.gates import GATES, observe
    from closer.reward.targets import GateName

    values = metrics_from_mapping(metrics, label)
    out = {}
    for gate in gates:
        observation = observe(GATES[GateName(gate)], values)
        observed = observation.observed.value
        out[gate] = ("not_measured" if observed == "unmeasured" else observed, observation.reason)
    return out


def below_one_reasons(result: dict) -> list[str]:
    """Failing gates (with the reward library's reason) and unmet targets of a reward result."""
    reasons = [f"gate {name}: {detail['observed']}: {detail['reason']}"
               for name, detail in result.get("gate_details", {}).items()
               if detail.get("required") and detail.get("observed") != "pass"]
    for name, term in (result.get("terms") or {}).items():
        if term.get("value") is None:
            reasons.append(f"target {name}: {term['metric']} not measured")
        elif not term.get("met", True):
            reasons.append(f"target {name}: {term['metric']} = {term['value']:.6g} > target "
                           f"{term['target']:.6g} (penalty {term['penalty']:.4f})")
    return reasons


def public_reasons(v: Verdict) -> list[str]:
    """The reasons an agent may see: gates with their reasons; of the targets only that the reward
    is below 1 (their names, values and penalties would tell more than the reward number)."""
    out = [r for r in v.reasons if r.startswith("gate ")]
    if v.scored and v.gate == 1 and v.reward is not None and v.reward < 1.0:
        out.append("targets: some not met (which, and by how much, is the hidden objective)")
    return out
