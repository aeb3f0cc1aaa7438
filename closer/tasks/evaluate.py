"""`closer evaluate WORKSPACE --task TASK`: the pristine evaluator.

Only the edit surface is taken from the candidate workspace and copied onto a pristine copy of
the task's starting workspace; a changed or deleted locked file rejects the submission (recorded,
never scored). The rebuild uses the task's own scripts and the hidden conditions: the functional
oracle on the hidden workloads and widths, `closer flow` to STA (kinds that stop at synthesis) or
through the physical flow (`pnr`: place, route, DRC, LVS, STA with parasitics; kinds whose
`flow_to` is `finish`), logic equivalence of the RTL and the synthesized netlist (kinds whose gates
include `lec`), gate-level simulation of the synthesized netlist; then `closer.reward` on the
hidden targets. The same scoring (closer.tasks.score.score_tree) runs on the public conditions
(public workload, physical conditions and targets, the tree's own tests/): its reward is the
record's `public_reward`, which is what the metered `verify` reports for the same tree. On two
CPUs or more the two scorings run side by side (`$CLOSER_EVAL_JOBS`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from closer.tomlio import load_toml
from closer import __version__
from closer.errors import InputError
from closer.tasks import checks, intake, rtl_policy
from closer.tasks.models import HiddenConfig, LockedManifest, TaskConfig, TaskKind
from closer.inputs import load_json_model
from closer.tasks.paths import PUBLIC_TARGETS, EvalPaths, TaskPaths, in_surface, sha256_file, workspace_files
from closer.tasks.score import (FLOW_STEP, LEC_CORNER, ScoringConditions, Verdict, below_one_reasons,  # noqa: F401
                                flow_step, observed_gates, run_lec, score_tree)

EVAL_JOBS_ENV = "CLOSER_EVAL_JOBS"  # 1: the public scoring after the hidden one; 2: side by side


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
    public_reward: float | None = Field(None, description=(
        "the reward of the same tree scored on the public conditions (what `closer-tool verify` reports)"))
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
    return paths, load_json_model(paths.config, TaskConfig, "task file")


def load_hidden(paths: TaskPaths) -> HiddenConfig:
    if not paths.hidden.config.is_file():
        raise InputError(f"{paths.hidden.config} does not exist: the task's hidden part is missing "
                         "(it is written next to tasks/ by `closer task generate`)")
    return load_json_model(paths.hidden.config, HiddenConfig, "hidden task file")


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
    scoring_jobs()  # a malformed setting is refused before any work
    workspace = workspace.resolve()
    if not workspace.is_dir():
        raise InputError(f"workspace {workspace} is not a folder")
    paths, task = load_task(task_dir)
    ep = EvalPaths(out.resolve())
    ep.root.mkdir(parents=True, exist_ok=True)
    if (integrity := intake.check_suite_integrity(paths)) is not None:  # before reading anything hidden
        return _finish(_refused_record(task, workspace, f"refused to evaluate: {integrity}"), ep, start)
    hidden = load_hidden(paths)
    locked = load_json_model(paths.locked, LockedManifest, "locked-file manifest")
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


def hidden_conditions(task: TaskConfig, hidden: HiddenConfig, paths: TaskPaths) -> ScoringConditions:
    return ScoringConditions("hidden", hidden.hidden, hidden.parameters, paths.hidden.oracle, hidden.gates,
                             paths.hidden.targets, sim_timeout_s=checks.sim_timeout_s(hidden.golden_func_s))


def public_conditions(task: TaskConfig, tree: Path) -> ScoringConditions:
    """The public projection: the task's public conditions, the tree's own tests/ and the public
    targets in its control dir. `closer-tool verify` scores with exactly these."""
    targets = tree / PUBLIC_TARGETS
    if not targets.is_file():
        raise InputError(f"{targets} does not exist: the task was generated by an older closer; generate it again")
    gates = load_toml(targets, "{path} does not exist", "public targets").get("gates", {}).get("required", [])
    if not isinstance(gates, list) or not all(isinstance(g, str) for g in gates):
        raise InputError(f"{targets}: key gates.required: expected a list of gate names")
    return ScoringConditions("public", task.public, task.parameters, tree / "tests", gates, targets)


def scoring_jobs() -> int:
    """How many of the two scorings run at once: `$CLOSER_EVAL_JOBS` (1 or 2), else 2 on a
    machine that gives this process two CPUs or more."""
    value = os.environ.get(EVAL_JOBS_ENV, "").strip()
    if not value:
        return 2 if len(os.sched_getaffinity(0)) >= 2 else 1
    if value not in ("1", "2"):
        raise InputError(f"environment variable {EVAL_JOBS_ENV}: {value!r} is not 1 or 2")
    return int(value)


def _score_both(task: TaskConfig, hidden: HiddenConfig, paths: TaskPaths, ep: EvalPaths):
    """(hidden, public) scorings of the tree. They share nothing but the tree they read and the
    caches, which lock per entry; with two jobs they run side by side (each mostly waits on its
    own tool processes), so an evaluation of a physical task takes its longer flow, not both. Two
    scorings of one flow (the same design folder and settings) get one run: the second waits for
    the first and is served its layout (checks.run_synthesis `shared`), even one a time budget cut."""
    runs = [(hidden_conditions(task, hidden, paths), ep.scoring("hidden")),
            (public_conditions(task, ep.tree), ep.scoring("public"))]
    try:
        if scoring_jobs() == 1:
            return [score_tree(ep.tree, task, sc, out, shared=ep.shared_runs) for sc, out in runs]
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="scoring") as pool:
            futures = [pool.submit(score_tree, ep.tree, task, sc, out, shared=ep.shared_runs) for sc, out in runs]
            return [future.result() for future in futures]
    finally:
        shutil.rmtree(ep.shared_runs, ignore_errors=True)


def _score(record: EvaluationRecord, task: TaskConfig, hidden: HiddenConfig, paths: TaskPaths, ep: EvalPaths) -> None:
    hid, pub = _score_both(task, hidden, paths, ep)
    record.public, record.hidden, record.gls = _summary(pub.func), _summary(hid.func), _summary(hid.gls)
    if _report_failure(record, pub.func, hid.func, hid.gls):
        return
    record.flow_error = hid.flow_error
    record.metrics = hid.metrics
    ep.metrics.write_text(json.dumps(hid.metrics, indent=1, sort_keys=True, default=str) + "\n")
    if pub.func.tests and hid.func.tests:
        record.func_pass_gap = round((pub.func.tests - pub.func.failed) / pub.func.tests
                                     - (hid.func.tests - hid.func.failed) / hid.func.tests, 6)
    from importlib.metadata import version

    record.provenance = {k: v for k, v in hid.metrics.items() if k.startswith("run__")}
    record.provenance.update({"task_design_revision": task.design_revision, "suite_version": task.suite_version,
                              "cocotb": version("cocotb"), "simulator": "icarus",
                              "scoring_wall_s": {"hidden": hid.timings_s, "public": pub.timings_s},
                              # the flow cache key a scoring's flow run was reused from (closer.flow.reuse)
                              "flow_reused": {s.label: s.flow.reused if s.flow else None for s in (hid, pub)}})
    record_verdict(record, hid.verdict)
    record.public_reward = pub.verdict.reward if pub.verdict.scored else None
    if record.public_reward is not None and record.reward is not None and record.scored:
        record.public_private_gap = record.public_reward - record.reward


def record_verdict(record: EvaluationRecord, v: Verdict) -> None:
    record.scored, record.reward, record.gate = v.scored, v.reward, v.gate
    record.verifier_error = v.verifier_error
    record.gates, record.failing_gates, record.gate_reasons = v.gates, v.failing_gates, v.gate_reasons
    record.reasons, record.reward_result = v.reasons, v.reward_result


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
