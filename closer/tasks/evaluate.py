"""`closer evaluate WORKSPACE --task TASK`: the pristine evaluator.

Only the edit surface is taken from the candidate workspace and copied onto a pristine copy of
the task's starting workspace; a changed or deleted locked file rejects the submission (recorded,
never scored). The rebuild uses the task's own scripts and the hidden conditions: the functional
oracle on the hidden workloads and widths, `closer flow` to STA (kinds that stop at synthesis) or
through the physical flow (`pnr`: place, route, DRC, LVS, STA with parasitics; kinds whose
`flow_to` is `finish`), logic equivalence of the RTL and the synthesized netlist (kinds whose gates
include `lec`), gate-level simulation of the synthesized netlist; then `closer.reward` on the
hidden targets. The public tests run too, and the record carries both (their gap is a reported
measure).
"""

from __future__ import annotations

import json
import math
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from closer import __version__
from closer import metrics as mk
from closer.errors import InputError
from closer.reward import GateUnmeasured, MetricNotFound, compute_reward, load_targets, metrics_from_mapping
from closer.reward.errors import MetricsFileError
from closer.pdk import pdk
from closer.tasks import checks, intake, lec, rtl_policy
from closer.tasks.models import HiddenConfig, LockedManifest, TaskConfig, TaskKind
from closer.tasks.paths import EvalPaths, TaskPaths, in_surface, sha256_file, workspace_files

# the last `closer flow` step per kind: the physical flow's signoff ("finish") is its pnr step
FLOW_STEP = {"sta": "sta", "finish": "pnr"}
LEC_CORNER = "tt_025C_1v80"  # cell functions are the same at every corner; any Liberty will do


class LockedViolation(BaseModel):
    path: str
    problem: str  # changed | deleted
    expected_sha256: str
    found_sha256: str | None = None


class CheckSummary(BaseModel):
    tests: int
    failed: int
    cycles: int | None = None
    errors: list[str] = Field(default_factory=list)
    runs: list[dict] = Field(default_factory=list)


class EvaluationRecord(BaseModel):
    """evaluation.json (schema: closer/schemas/task-evaluation.schema.json)."""

    model_config = ConfigDict(extra="forbid")
    schema_version: str = "1"
    task_id: str
    suite_version: str
    design: str
    kind: TaskKind
    budget_tier: str
    evaluated_at: str
    workspace: str
    accepted: bool = Field(description="false: a locked file was changed or deleted, or the RTL broke the RTL "
                                       "policy; not scored")
    locked_violations: list[LockedViolation] = Field(default_factory=list)
    ignored_files: list[str] = Field(default_factory=list, description="added outside the surface")
    refused_files: list[intake.RefusedFile] = Field(default_factory=list, description=(
        "edit-surface paths not taken: symlinks, special files, hard links, over the size limits"))
    rtl_violations: list[rtl_policy.Violation] = Field(default_factory=list, description=(
        "RTL policy violations (closer.tasks.rtl_policy): file I/O, DPI, includes from outside, tool "
        "macros; any rejects the submission"))
    surface_files: dict[str, str] = Field(default_factory=dict, description="path -> SHA-256 taken")
    scored: bool = Field(description="every required gate was measured and a reward computed")
    verifier_error: str | None = None
    reward: float | None = None
    gate: int | None = None
    gates: dict[str, str] = Field(default_factory=dict)
    failing_gates: list[str] = Field(default_factory=list)
    gate_reasons: dict[str, str] = Field(default_factory=dict)
    reasons: list[str] = Field(default_factory=list, description=(
        "why the reward is below 1: each failing or unmeasured gate with its reason, each unmet "
        "target with its value and target"))
    public_reward: float | None = Field(None, description="the reward with the public tests as the func gate")
    public_private_gap: float | None = Field(None, description="public_reward - reward")
    func_pass_gap: float | None = Field(None, description="public pass fraction - hidden pass fraction")
    public: CheckSummary | None = None
    hidden: CheckSummary | None = None
    gls: CheckSummary | None = None
    flow_error: str | None = None
    metrics: dict[str, object] = Field(default_factory=dict)
    reward_result: dict | None = None
    provenance: dict[str, object] = Field(default_factory=dict)
    wall_s: float = 0.0


def load_task(task_dir: Path) -> tuple[TaskPaths, TaskConfig]:
    paths = TaskPaths(task_dir.resolve()).require()
    try:
        return paths, TaskConfig.model_validate_json(paths.config.read_text())
    except ValueError as exc:
        raise InputError(f"{paths.config}: {exc}") from exc


def load_hidden(paths: TaskPaths) -> HiddenConfig:
    if not paths.hidden.config.is_file():
        raise InputError(f"{paths.hidden.config} does not exist: the task's hidden part is missing "
                         "(it is written next to tasks/ by `closer task generate`)")
    return HiddenConfig.model_validate_json(paths.hidden.config.read_text())


def check_locked(workspace: Path, locked: LockedManifest, surface: dict) -> tuple[list[LockedViolation], list[str]]:
    violations = []
    for entry in locked.files:
        path = workspace / entry.path
        if not path.is_file():
            violations.append(LockedViolation(path=entry.path, problem="deleted", expected_sha256=entry.sha256))
            continue
        found = sha256_file(path)
        if found != entry.sha256:
            violations.append(LockedViolation(path=entry.path, problem="changed", expected_sha256=entry.sha256,
                                              found_sha256=found))
    known = {e.path for e in locked.files}
    ignored = [rel for rel in workspace_files(workspace) if rel not in known and not in_surface(rel, surface)]
    return violations, ignored


def build_tree(pristine: Path, candidate: Path, surface: dict, tree: Path,
               refused: list | None = None) -> dict[str, str]:
    """Pristine workspace with its surface files replaced by the candidate's regular files
    (closer.tasks.intake.take_surface); returns what was taken, appends what was refused."""
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(pristine, tree)
    for rel in workspace_files(tree):
        if in_surface(rel, surface):
            (tree / rel).unlink()
    taken, not_taken = intake.take_surface(candidate, surface, tree)
    if refused is not None:
        refused.extend(not_taken)
    return taken


def evaluate(workspace: Path, task_dir: Path, out: Path) -> EvaluationRecord:
    start = time.monotonic()
    workspace = workspace.resolve()
    if not workspace.is_dir():
        raise InputError(f"workspace {workspace} is not a folder")
    paths, task = load_task(task_dir)
    ep = EvalPaths(out.resolve())
    ep.root.mkdir(parents=True, exist_ok=True)
    if (integrity := intake.check_suite_integrity(paths)) is not None:  # before reading anything hidden
        return _finish(_refused_record(task, workspace, f"refused to evaluate: {integrity}"), ep, start)
    hidden = load_hidden(paths)
    locked = LockedManifest.model_validate_json(paths.locked.read_text())
    violations, ignored = check_locked(workspace, locked, task.edit_surface)
    record = EvaluationRecord(
        task_id=task.task_id, suite_version=task.suite_version, design=task.design, kind=task.kind,
        budget_tier=task.budget_tier, evaluated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        workspace=str(workspace), accepted=not violations, locked_violations=violations,
        ignored_files=ignored, scored=False)
    if violations:
        record.verifier_error = ("rejected: locked file(s) " + ", ".join(f"{v.path} ({v.problem})" for v in violations))
        record.reward, record.gate = 0.0, 0
        return _finish(record, ep, start)
    record.surface_files = build_tree(paths.workspace, workspace, task.edit_surface, ep.tree, record.refused_files)
    record.rtl_violations = rtl_policy.check_tree(ep.tree, task.rtl, task.edit_surface)
    if record.rtl_violations:
        record.accepted = False
        record.verifier_error = "rejected: RTL policy: " + rtl_policy.violations_text(record.rtl_violations)
        record.reward, record.gate = 0.0, 0
        return _finish(record, ep, start)
    _score(record, task, hidden, paths, ep)
    return _finish(record, ep, start)


def _score(record: EvaluationRecord, task: TaskConfig, hidden: HiddenConfig, paths: TaskPaths, ep: EvalPaths) -> None:
    tree = ep.tree
    sources = [tree / rel for rel in task.rtl]
    oracle = paths.hidden.oracle
    public = checks.run_functional(sources, task.top, oracle, task.test_module, task.public, task.parameters,
                                   task.config, ep.root / "sim" / "public")
    record.public = _summary(public)
    hid = checks.run_functional(sources, task.top, oracle, task.test_module, hidden.hidden, hidden.parameters,
                                task.config, ep.root / "sim" / "hidden")
    record.hidden = _summary(hid)
    if _report_failure(record, public, hid):
        return
    metrics: dict[str, object] = checks.func_metrics(hid)
    if hid.failed:
        # the func gate already fails (reward 0): synthesis and GLS would not change the score
        record.flow_error = "not run: the hidden functional tests failed"
        gls = checks.FuncResult(tests=0, failed=0, errors=["not run: the hidden functional tests failed"])
        record.gls = _summary(gls)
        _reward(record, task, hidden, paths, ep, metrics, public, hid)
        return
    folder = checks.write_design_folder(tree, task, {task.config: task.parameters[task.config]},
                                        ep.design_folder(task.design))
    flow = checks.run_synthesis(folder, task, ep.flow, to=flow_step(task))
    record.flow_error = flow.error
    metrics.update(flow.metrics)
    if "lec" in hidden.gates and flow.netlist is not None:
        metrics.update(run_lec(sources, task, flow.netlist, ep.root / "lec").metrics())
    if flow.netlist is not None:
        gls = checks.run_gate_level(flow.netlist, task.top, oracle, task.test_module, hidden.hidden,
                                    hidden.parameters[task.config], ep.root / "sim" / "gls")
    else:
        gls = checks.FuncResult(tests=1, failed=1, errors=[flow.error or "no synthesized netlist"])
    record.gls = _summary(gls)
    if _report_failure(record, gls):
        return
    metrics.update(checks.gls_metrics(gls))
    _reward(record, task, hidden, paths, ep, metrics, public, hid)


def _refused_record(task: TaskConfig, workspace: Path, why: str) -> EvaluationRecord:
    """Not evaluated (the evaluator's own inputs are not what was generated): a verifier failure."""
    return EvaluationRecord(
        task_id=task.task_id, suite_version=task.suite_version, design=task.design, kind=task.kind,
        budget_tier=task.budget_tier, evaluated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        workspace=str(workspace), accepted=True, scored=False, verifier_error=why)


def _report_failure(record: EvaluationRecord, *results: checks.FuncResult) -> bool:
    """A malformed, missing or extra oracle report is a verifier failure: recorded, not scored."""
    problems = [p for r in results for p in r.report_errors]
    if problems:
        record.scored, record.reward, record.gate = False, None, None
        record.verifier_error = "verifier failure: the oracle's reports are not valid: " + "; ".join(problems[:3])
    return bool(problems)


def flow_step(task: TaskConfig) -> str:
    if task.flow_to not in FLOW_STEP:
        raise InputError(f"task {task.task_id}: flow_to {task.flow_to!r}; known: {sorted(FLOW_STEP)}")
    return FLOW_STEP[task.flow_to]


def run_lec(sources: list[Path], task: TaskConfig, netlist: Path, work: Path) -> lec.LecResult:
    """The candidate's RTL against the netlist the flow synthesized from it (the layout is built
    from that netlist and LVS ties the layout to it)."""
    job = lec.LecJob(rtl=sources, top=task.top, netlist=netlist, liberty=pdk().liberty(LEC_CORNER),
                     work=work, parameters=task.parameters[task.config],
                     reset=lec.find_reset(lec.netlist_inputs(netlist)))
    return lec.run_lec(job)


def _reward(record: EvaluationRecord, task: TaskConfig, hidden: HiddenConfig, paths: TaskPaths, ep: EvalPaths,
            metrics: dict, public: checks.FuncResult, hid: checks.FuncResult) -> None:
    record.metrics = metrics
    if public.tests and hid.tests:
        record.func_pass_gap = round((public.tests - public.failed) / public.tests
                                     - (hid.tests - hid.failed) / hid.tests, 6)
    ep.metrics.write_text(json.dumps(metrics, indent=1, sort_keys=True, default=str) + "\n")
    from importlib.metadata import version

    record.provenance = {k: v for k, v in metrics.items() if k.startswith("run__")}
    record.provenance.update({"task_design_revision": task.design_revision, "suite_version": task.suite_version,
                              "cocotb": version("cocotb"), "simulator": "icarus"})
    targets = load_targets(paths.hidden.targets)
    try:
        result = compute_reward(metrics_from_mapping(metrics, str(ep.metrics)), targets)
    except MetricsFileError as exc:
        try:
            scored = _score_failed_gates_only(record, metrics, hidden.gates, str(ep.metrics), str(exc))
        except MetricsFileError as gate_exc:  # a gate's own key is malformed: nothing to score
            record.verifier_error = f"not scored: {gate_exc}"
            return
        if not scored:
            record.verifier_error = f"not scored: {exc}"
            record.gates = observed_gates(metrics, hidden.gates, str(ep.metrics))
        return
    except (GateUnmeasured, MetricNotFound) as exc:
        cause = f"the flow failed: {record.flow_error}" if record.flow_error else "a required metric was not produced"
        record.verifier_error = f"not scored: {exc} ({cause})"
        record.gates = observed_gates(metrics, hidden.gates, str(ep.metrics))
        record.failing_gates = [g for g, status in record.gates.items() if status == "fail"]
        record.reasons = [f"gate {g}: {status}" for g, status in record.gates.items() if status != "pass"]
        return
    _apply_reward(record, result)
    # the public reward: the same metrics with the public tests as the func gate (cycles stay hidden)
    pub_metrics = dict(metrics) | {mk.FUNC_TESTS_TOTAL: public.tests, mk.FUNC_TESTS_FAILED: public.failed}
    try:
        public_result = compute_reward(metrics_from_mapping(pub_metrics, "public"), targets)
        record.public_reward = public_result.reward
        record.public_private_gap = public_result.reward - result.reward
    except (GateUnmeasured, MetricNotFound, MetricsFileError):
        record.public_reward = None


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


def _score_failed_gates_only(record: EvaluationRecord, metrics: dict, gates: list[str], label: str,
                             problem: str) -> bool:
    """When the targets cannot be evaluated (e.g. no setup slack because nothing is timed) but a
    required gate fails, the reward is 0 regardless of the targets: record that. False if no gate
    fails (then the record stays unscored)."""
    observed = observed_gate_reasons(metrics, gates, label)
    failing = [g for g, (status, _) in observed.items() if status == "fail"]
    if not failing:
        return False
    record.scored, record.reward, record.gate = True, 0.0, 0
    record.gates = {g: status for g, (status, _) in observed.items()}
    record.failing_gates = failing
    record.gate_reasons = {g: reason for g, (_, reason) in observed.items()}
    record.reasons = [f"gate {g}: {status}: {reason}" for g, (status, reason) in observed.items()
                      if status != "pass"] + [f"targets not evaluated: {problem}"]
    return True


def _apply_reward(record: EvaluationRecord, result) -> None:
    record.scored = True
    record.reward = result.reward
    record.gate = result.gate
    record.gates = {k: v.value for k, v in result.gates.items()}
    record.failing_gates = [k for k, v in result.gates.items() if v.value == "fail"]
    record.gate_reasons = {k: d.reason for k, d in result.gate_details.items() if d.required}
    record.reward_result = result.model_dump(mode="json")
    record.reasons = below_one_reasons(record.reward_result)


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


def _summary(result: checks.FuncResult) -> CheckSummary:
    return CheckSummary(tests=result.tests, failed=result.failed, cycles=result.cycles,
                        errors=result.errors, runs=result.runs)


def _finish(record: EvaluationRecord, ep: EvalPaths, start: float) -> EvaluationRecord:
    record.wall_s = round(time.monotonic() - start, 3)
    record.provenance.setdefault("closer_version", __version__)
    if record.reward_result is not None:
        ep.reward.write_text(json.dumps(record.reward_result, indent=2) + "\n")
    if record.reward is not None and not math.isfinite(record.reward):
        raise AssertionError("non-finite reward")
    ep.record.write_text(record.model_dump_json(indent=2) + "\n")
    return record
