"""`closer task run`: copy the workspace, start the agent with the metered tools on PATH, enforce
the wall clock, keep the trajectory, evaluate on the pristine tree and classify the run state.
One RunRecord (run-record.schema.json) per trial; records are written once and never edited.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, model_validator

from closer import __version__
from closer.agents import AgentSpec
from closer.errors import CloserError, InputError, ToolMissing, ToolTimeout
from closer.budget import BudgetOverride, resolve_budget
from closer.flow import reuse as flow_reuse
from closer.metered.broker import Broker
from closer.metered.config import load_tool_config
from closer.metered.front import record_interrupted_call
from closer.metered.run import load_run_info, start_run
from closer.metered.paths import CONTROL_DIR, WorkspacePaths
from closer.metered.runstate import AgentExit, RunEvidence, classify_run, count_infra_errors
from closer.procs import Command, run
from closer.sandbox.agent import INSTRUCTION, SOLUTION, WORKSPACE, agent_command, agent_sandbox
from closer.sandbox.bwrap import require_programs, sandbox_argv
from closer.sandbox.netproxy import start_proxy
from closer.sandbox import tools as tools_sandbox
from closer.sandbox.reap import processes_of, reap
from closer.sandbox.spec import trial_uid
from closer.tasks.estimator import full_gate_tools
from closer.tasks.evaluate import EvaluationRecord, load_task
from closer.tasks.trialstate import (BEFORE_AGENT, AgentOutcome, Phase, Progress, claim_trial, mark, read_progress,
                                     reclaim_trial, unfinished_trials)
from closer.trajectory.reader import TrajectoryReader
from closer.tasks.paths import tree_checksum
from closer.trajectory.summary import resolve_params, summarize_trajectory
from closer.inputs import load_json_model



# schema 2 renamed the public anytime fields so they cannot be read as the hidden ones
RENAMED_V1 = {"auc_wall": "auc_wall_public", "auc_cost": "auc_cost_public", "curve": "curve_public"}


class RunRecord(BaseModel):
    """One trial of one agent on one task (schema: closer/schemas/run-record.schema.json)."""

    model_config = ConfigDict(extra="forbid")
    schema_version: str = "2"
    task_id: str
    kind: str
    design: str
    budget_tier: str
    trial: int
    agent: str
    machinery_baseline: bool = Field(description="a harness baseline (null/oracle/sweep), not an agent under test")
    agent_backend: str | None
    agent_model: str | None
    agent_quantization: str | None
    run_id: str | None
    started_at: str
    agent_exit: str
    agent_returncode: int | None
    agent_wall_s: float
    resumed_from: str | None = Field(None, description=(
        "the phase a killed run had reached when `closer task run --resume` finished this trial"))
    run_state: str
    run_state_rule: int
    run_state_reason: str
    reward: float | None
    scored: bool
    accepted: bool
    gates: dict[str, str]
    failing_gates: list[str]
    verifier_error: str | None
    raw_metrics: dict[str, object]
    auc_wall_public: float | None = Field(description="AUC over wall clock of the public best-so-far")
    auc_cost_public: float | None = Field(description="AUC over weighted cost of the public best-so-far")
    best_public_reward: float | None = Field(description="best public estimate of the full-gate calls")
    time_to_first_feasible_s: float | None = Field(description="first full-gate call with every public gate passed")
    cost_to_first_feasible: float | None
    calls_by_tool: dict[str, int]
    outcomes: dict[str, int]
    curve_public: list[dict] = Field(default_factory=list, description="best-so-far steps of the public estimate")
    public_reward: float | None = Field(description="evaluator: the final tree's reward with the public tests")
    public_private_gap: float | None = Field(description="best_public_reward - reward (the hidden reward)")
    func_pass_gap: float | None
    # --- schema 2 additions (docs/trajectory.md "Measures" defines each) ---
    feasible: bool | None = Field(None, description="every required gate passed on the hidden conditions")
    evaluator_public_gap: float | None = Field(None, description="evaluator: public_reward - reward")
    best_partial_reward: float | None = Field(
        None, description="best estimate of calls that did not evaluate the full gate set (informational)")
    gate_reasons: dict[str, str] = Field(default_factory=dict, description="gate -> the evaluator's reason")
    reasons: list[str] = Field(default_factory=list, description="why the reward is below 1")
    target_terms: dict[str, dict] = Field(
        default_factory=dict, description="target -> metric, value, target, met, penalty (hidden objective)")
    locked_violations: list[dict]
    sandbox: dict[str, object] = Field(default_factory=dict, description=(
        "the agent's sandbox: uid, network endpoints open, processes that outlived it"))
    suite_version: str
    task_checksum: str | None = Field(None, description=(
        "SHA-256 over the task folder when the trial ran (suite.json's checksum of the task): "
        "trials of different task revisions are never mixed unnoticed (closer report)"))
    tool_versions: dict[str, object]
    closer_version: str
    start: dict[str, object] | None = Field(None, description=(
        "a trial started from a given state (`--start-rtl`, `--budget`): the starting RTL folder, its "
        "files' digest and the budget override the run ran under (the matrix's A+B composition)"))
    paths: dict[str, str]

    @model_validator(mode="before")
    @classmethod
    def _schema_1_names(cls, data: object) -> object:
        """Schema-1 records (auc_wall, auc_cost, curve; gap = evaluator's public - hidden) stay readable."""
        if isinstance(data, dict) and any(k in data for k in RENAMED_V1):
            data = {RENAMED_V1.get(k, k): v for k, v in data.items()}
            data["evaluator_public_gap"] = data.get("public_private_gap")
            best, reward = data.get("best_public_reward"), data.get("reward")
            data["public_private_gap"] = None if best is None or reward is None else best - reward
        return data

    @property
    def is_feasible(self) -> bool:
        """feasible, or for a schema-1 record: scored with every gate passed."""
        if self.feasible is not None:
            return self.feasible
        required = [v for v in self.gates.values() if v != "not_required"]
        return self.scored and bool(required) and all(v == "pass" for v in required)


@dataclass(frozen=True)
class TrialStart:
    """Where a trial starts instead of the task's own start: its RTL (the files of `rtl`, a
    folder, replace the workspace's rtl/ before the run's baseline snapshot) and its budget (an
    override of the task's [budget] table). The matrix starts B from A's final RTL this way."""

    rtl: Path | None = None
    budget: BudgetOverride | None = None

    def describe(self) -> dict[str, object] | None:
        if self.rtl is None and self.budget is None:
            return None
        return {"rtl": str(self.rtl) if self.rtl else None,
                "rtl_checksum": tree_checksum(self.rtl) if self.rtl else None,
                "budget": self.budget.model_dump(exclude_defaults=True) if self.budget else None}


NO_START = TrialStart()


def run_trials(task_dir: Path, agent: AgentSpec, trials: int, out: Path, wall_s: float | None = None,
               resume: bool = False, only: int | None = None, start: TrialStart = NO_START) -> list[RunRecord]:
    """Run trials 1..N (or trial `only`) into OUT. With `resume`, a trial already recorded is kept
    as it is and one killed mid-way is finished (`resume_trial`); without it, an existing trial
    folder is refused."""
    paths, task = load_task(task_dir)
    out = out.resolve()
    records = []
    for trial in [only] if only else range(1, trials + 1):
        trial_dir = out / task.task_id / agent.label / f"trial-{trial}"
        record = TrialPaths(trial_dir).record
        if resume and record.exists():
            records.append(load_json_model(record, RunRecord, "run record"))
        elif resume and trial_dir.exists():
            records.append(resume_trial(paths.root, agent, trial, trial_dir, wall_s, start))
        else:
            records.append(run_trial(paths.root, agent, trial, trial_dir, wall_s, start))
    write_summary(out)
    return records


def run_trial(task_dir: Path, agent: AgentSpec, trial: int, trial_dir: Path, wall_s: float | None,
              start: TrialStart = NO_START) -> RunRecord:
    paths, task = load_task(task_dir)
    with claim_trial(trial_dir):  # atomic: a trial folder is never reused (records are never overwritten)
        return _run_from_start(paths, task, agent, trial, trial_dir, wall_s, start)


def resume_trial(task_dir: Path, agent: AgentSpec, trial: int, trial_dir: Path, wall_s: float | None,
                 start: TrialStart = NO_START) -> RunRecord:
    """Finish a trial whose run was killed, from where its progress marker says it stopped:
    before the agent started, the trial starts afresh in its folder (nothing was made yet); while
    the agent ran, its leftovers are killed and the workspace as left is evaluated, the run an
    `infrastructure_failure` (never counted); while evaluating, the evaluation is redone with the
    agent's recorded exit. A partial evaluation is set aside, never overwritten."""
    paths, task = load_task(task_dir)
    with reclaim_trial(trial_dir) as claim:
        stopped = claim.progress
        tp = TrialPaths(trial_dir)
        ws = WorkspacePaths(tp.workspace, control_dir=tp.run)
        if stopped.phase in BEFORE_AGENT and not ws.trajectory.exists():
            return _run_from_start(paths, task, agent, trial, trial_dir, wall_s, start)
        info = load_run_info(ws)  # refuses (exit 2) a trial whose run header is missing or damaged
        outcome = stopped.agent or _interrupted_agent(stopped, ws, info.started_at)
        mark(trial_dir, Phase.EVALUATING, agent=outcome)
        for partial in (tp.evaluation, tp.evaluate_log):
            _set_aside(partial)
        return _evaluate_and_record(paths, task, agent, trial, tp, ws, outcome, resumed_from=stopped.phase.value,
                                    start=start)


def _interrupted_agent(stopped: Progress, ws: WorkspacePaths, started_at: datetime) -> AgentOutcome:
    """The harness died while the agent ran: end what is left of it and say so."""
    leftovers = reap(stopped.uid) if stopped.uid is not None else []
    record_interrupted_call(ws)
    records = list(TrajectoryReader(ws.trajectory)) if ws.trajectory.exists() else []
    errors = [f"the harness (pid {stopped.pid}) was killed while the agent ran (last mark {stopped.updated_at}); "
              "resumed: the workspace as left was evaluated"]
    return AgentOutcome(exit=AgentExit.INTERRUPTED.value, returncode=None,
                        wall_s=max((r.elapsed_s for r in records), default=0.0),  # a lower bound: its last call's end
                        started_at=started_at.isoformat(timespec="seconds"),
                        harness_errors=errors, leftover_processes=leftovers)


def _sandbox_uid(trial_dir: Path) -> int | None:
    progress = read_progress(trial_dir)
    return progress.uid if progress else None


def _set_aside(folder: Path) -> None:
    if folder.exists() or folder.is_symlink():
        n = 1
        while (aside := folder.with_name(f"{folder.name}.interrupted-{n}")).exists() or aside.is_symlink():
            n += 1
        folder.rename(aside)


def _run_from_start(paths, task, agent: AgentSpec, trial: int, trial_dir: Path, wall_s: float | None,
                    start: TrialStart = NO_START) -> RunRecord:
    tp = TrialPaths(trial_dir)
    ws = prepare_workspace(paths.workspace, tp)
    shutil.copyfile(paths.instruction, tp.instruction)
    if start.rtl is not None:
        replace_rtl(ws, start.rtl)
    if start.budget is not None:
        override_budget(ws, start.budget)
    if wall_s:
        shorten_wall_clock(ws, wall_s)
    info = start_run(ws)
    mark(trial_dir, Phase.WORKSPACE, run_id=info.run_id)
    limit = info.budget.wall_s
    uid = trial_uid(info.run_id, in_use=lambda u: bool(processes_of(u)))
    mark(trial_dir, Phase.AGENT, uid=uid)
    outcome = _run_agent(paths, task.kind, agent, tp, ws, uid, limit)
    mark(trial_dir, Phase.EVALUATING, agent=outcome)
    return _evaluate_and_record(paths, task, agent, trial, tp, ws, outcome, start=start)


def _run_agent(paths, kind: str, agent: AgentSpec, tp: TrialPaths, ws: WorkspacePaths, uid: int,
               limit: float) -> AgentOutcome:
    """The agent in its sandbox with the broker and proxy, up to `limit` seconds."""
    harness_errors: list[str] = []
    solution = paths.hidden.solution if agent.reads_solution(kind) else None
    sandbox = agent_sandbox(ws.root, tp.broker_socket, tp.instruction, uid, solution=solution,
                            env=agent.env, network=agent.endpoints(), proxy_socket=tp.proxy_socket)
    argv = agent_command(agent.argv(WORKSPACE, INSTRUCTION, SOLUTION if solution else None), agent.endpoints())
    give_to(ws.root, uid)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    t0 = time.monotonic()
    returncode: int | None = None
    hidden_root = (paths.hidden.root.parent,)  # the suite's hidden part: no metered tool reads it
    broker = Broker(ws, tp.broker_socket, deliver=deliver_as(uid), log=tp.broker_log,
                    isolate=lambda call_dir: tools_sandbox.for_call(call_dir, masked=hidden_root),
                    shared_flow_cache=agent.machinery_baseline).start()
    proxy = start_proxy(agent.endpoints(), tp.proxy_socket, tp.proxy_log)
    try:
        done = run(Command(sandbox_argv(sandbox, argv), timeout_s=limit), tp.agent_log, check=False)
        returncode = done.returncode
        exit_kind = AgentExit.FINISHED if done.returncode == 0 else AgentExit.CRASHED
    except ToolTimeout:
        exit_kind = AgentExit.TIMED_OUT
    except ToolMissing as exc:
        exit_kind = AgentExit.CRASHED
        harness_errors.append(f"sandbox not started: {exc}")
    finally:
        leftovers = reap(uid)  # the pid namespace ends them; this is the check that it did
        still_running = broker.stop(wait_s=limit)
        if proxy is not None:
            proxy.stop()
        shutil.rmtree(tp.socket_dir, ignore_errors=True)
    if leftovers:
        harness_errors.append(f"processes of the agent outlived its sandbox and were killed: {', '.join(leftovers)}")
    if still_running:
        harness_errors.append(f"{still_running} metered call(s) still running after the wall clock")
    else:
        record_interrupted_call(ws)  # a call cut off mid-way is in the trajectory before it is summarized
    return AgentOutcome(exit=exit_kind.value, returncode=returncode, wall_s=round(time.monotonic() - t0, 3),
                        started_at=started, harness_errors=harness_errors, leftover_processes=leftovers,
                        broker_calls_running_at_end=still_running)


def _evaluate_and_record(paths, task, agent: AgentSpec, trial: int, tp: TrialPaths, ws: WorkspacePaths,
                         outcome: AgentOutcome, resumed_from: str | None = None,
                         start: TrialStart = NO_START) -> RunRecord:
    evaluation: EvaluationRecord | None = None
    verifier_error = None
    try:
        evaluation = evaluate_sandboxed(ws.root, paths, tp, shared_cache=agent.machinery_baseline)
    except CloserError as exc:
        verifier_error = f"evaluator error: {exc}"
    finally:
        _drop_trial_flow_cache(tp, shared_cache=agent.machinery_baseline)
    scoreable = evaluation is not None and evaluation.accepted
    score_produced = evaluation is not None and evaluation.scored
    if evaluation is not None and not evaluation.accepted:
        verifier_error = evaluation.verifier_error
    elif evaluation is not None and not evaluation.scored:
        verifier_error = evaluation.verifier_error
    decision = classify_run(RunEvidence(
        agent_exit=AgentExit(outcome.exit), workspace_scoreable=scoreable, score_produced=score_produced,
        verifier_error=verifier_error, harness_errors=outcome.harness_errors,
        trajectory_infra_errors=count_infra_errors(ws.trajectory)))
    params = resolve_params(ws.run_info, full_gate_tools=full_gate_tools(task.kind))
    summary = summarize_trajectory(ws.trajectory, params) if ws.trajectory.exists() else None
    ev = evaluation
    run_info = load_run_info(ws)
    record = RunRecord(
        task_id=task.task_id, kind=task.kind.value, design=task.design, budget_tier=task.budget_tier, trial=trial,
        agent=agent.label, machinery_baseline=agent.machinery_baseline, agent_backend=agent.backend,
        agent_model=agent.model, agent_quantization=agent.quantization, run_id=run_info.run_id,
        started_at=outcome.started_at, agent_exit=outcome.exit, agent_returncode=outcome.returncode,
        agent_wall_s=outcome.wall_s, resumed_from=resumed_from,
        run_state=decision.state.value, run_state_rule=decision.rule, run_state_reason=decision.reason,
        reward=ev.reward if ev else None, scored=bool(ev and ev.scored), accepted=bool(ev and ev.accepted),
        gates=ev.gates if ev else {}, failing_gates=ev.failing_gates if ev else [],
        verifier_error=verifier_error,
        raw_metrics={k: v for k, v in (ev.metrics if ev else {}).items() if not k.startswith("run__")},
        # no trajectory: the agent made no metered call, so its best-so-far curve is empty (area 0)
        auc_wall_public=summary.auc_wall if summary else 0.0, auc_cost_public=summary.auc_cost if summary else 0.0,
        best_public_reward=summary.best_reward if summary else None,
        time_to_first_feasible_s=summary.first_feasible.elapsed_s if summary and summary.first_feasible else None,
        cost_to_first_feasible=summary.first_feasible.cost_units if summary and summary.first_feasible else None,
        calls_by_tool=summary.calls_by_tool if summary else {}, outcomes=summary.outcomes if summary else {},
        curve_public=[p.model_dump() for p in summary.curve] if summary else [],
        public_reward=ev.public_reward if ev else None,
        public_private_gap=_gap(summary.best_reward if summary else None, ev.reward if ev else None),
        func_pass_gap=ev.func_pass_gap if ev else None,
        **_evaluation_fields(ev, summary),
        locked_violations=[v.model_dump() for v in ev.locked_violations] if ev else [],
        suite_version=task.suite_version, task_checksum=tree_checksum(paths.root),
        tool_versions={**(ev.provenance if ev else {}), **{f"metered__{k}": v for k, v in
                                                            run_info.provenance.tool_versions.items()}},
        closer_version=__version__, start=start.describe(),
        paths={"trial": str(tp.root), "workspace": str(ws.root), "run": str(ws.control),
               "trajectory": str(ws.trajectory), "task": str(paths.root),
               "evaluation": str(tp.evaluation / "evaluation.json"), "agent_log": str(tp.agent_log)},
        sandbox={"uid": _sandbox_uid(tp.root),
                 "network": [str(e) for e in agent.endpoints()],
                 "leftover_processes": outcome.leftover_processes,
                 "broker_calls_running_at_end": outcome.broker_calls_running_at_end},
    )
    write_once(tp.record, record.model_dump_json(indent=2) + "\n")
    mark(tp.root, Phase.RECORDED)
    return record


@dataclass(frozen=True)
class TrialPaths:
    """One trial's folder. The agent's sandbox sees only `workspace/` (and the broker's socket)::

        <trial>/
          workspace/        the agent's workspace (owned by the trial's sandbox uid)
          run/              the metered run's control dir: tools.toml, run.json, trajectory,
                            snapshots, pristine copy, lock (written only by the broker)
          broker/           the broker's socket and log (and the network proxy's, if any)
          instruction.md    agent.log    evaluation/    record.json (written once, last)
    """

    root: Path

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def broker_dir(self) -> Path:
        return self.root / "broker"

    @property
    def broker_socket(self) -> Path:
        """A Unix socket path must be short (108 bytes): the sockets live in a short folder of
        their own, linked from broker/sockets."""
        return self.socket_dir / "broker.sock"

    @property
    def socket_dir(self) -> Path:
        link = self.broker_dir / "sockets"
        if not link.is_symlink():
            self.broker_dir.mkdir(parents=True, exist_ok=True)
            link.symlink_to(tempfile.mkdtemp(prefix="closer-"))
        return Path(os.readlink(link))

    @property
    def broker_log(self) -> Path:
        return self.broker_dir / "broker.log"

    @property
    def proxy_socket(self) -> Path:
        return self.socket_dir / "proxy.sock"

    @property
    def proxy_log(self) -> Path:
        return self.broker_dir / "proxy.log"

    @property
    def instruction(self) -> Path:
        return self.root / "instruction.md"

    @property
    def agent_log(self) -> Path:
        return self.root / "agent.log"

    @property
    def evaluation(self) -> Path:
        return self.root / "evaluation"

    @property
    def evaluate_log(self) -> Path:
        return self.root / "evaluate.log"

    @property
    def record(self) -> Path:
        return self.root / "record.json"


def evaluate_sandboxed(workspace: Path, paths, tp: TrialPaths, shared_cache: bool = True) -> EvaluationRecord:
    """`closer evaluate` from the pristine tree, in its own sandbox (read-only host, writes only
    its output folder, no network), after the agent's namespace is gone; the flow runs of the
    trial's calls are reused. `shared_cache` (machinery baselines only): the calls and this
    evaluation used the shared $CLOSER_FLOW_CACHE; else the trial's own cache, which its calls
    filled (`flow_reuse.cache_dir`)."""
    return evaluate_in_sandbox(workspace, paths, tp.evaluation, tp.evaluate_log,
                               flow_reuse.cache_dir(tp.run, shared_ok=shared_cache))


def evaluate_in_sandbox(workspace: Path, paths, out: Path, log: Path, cache: Path | None) -> EvaluationRecord:
    """`closer evaluate WORKSPACE --task <paths> --out OUT` in the evaluator's tool sandbox
    (closer.sandbox.tools.for_evaluation), with `cache` (closer.flow.reuse) its one other
    writable folder; every evaluation of agent files runs this way."""
    sandbox = tools_sandbox.for_evaluation(out, inputs=(paths.suite.root, workspace))
    env = {}
    if cache is not None:
        sandbox, env = sandbox.with_writable(cache), {flow_reuse.CACHE_ENV: str(cache)}
    argv = [sys.executable, "-m", "closer", "evaluate", str(workspace), "--task", str(paths.root), "--out", str(out)]
    done = run(Command(sandbox.wrap(argv), env=env), log, check=False)
    record = out / "evaluation.json"
    if not record.is_file():
        raise CloserError(f"the evaluator wrote no record (exit {done.returncode}): {done.log_tail(3)}")
    return load_json_model(record, EvaluationRecord, "evaluation record")  # InputError: a verifier failure


def _drop_trial_flow_cache(tp: TrialPaths, shared_cache: bool) -> None:
    """The trial's own flow cache serves only its calls and its evaluation (a shared
    $CLOSER_FLOW_CACHE is kept)."""
    if flow_reuse.cache_dir(tp.run, shared_ok=shared_cache) == tp.run / flow_reuse.RUN_CACHE:
        shutil.rmtree(tp.run / flow_reuse.RUN_CACHE, ignore_errors=True)


def prepare_workspace(task_workspace: Path, tp: TrialPaths) -> WorkspacePaths:
    """The task's workspace copied for the trial, its control dir moved out of the agent's reach."""
    for folder in (tp.workspace, tp.run, tp.broker_dir):
        shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(task_workspace, tp.workspace, symlinks=True)
    control = tp.workspace / CONTROL_DIR
    if not (control / "tools.toml").is_file():
        raise InputError(f"{task_workspace}: no {CONTROL_DIR}/tools.toml: not a task workspace")
    shutil.move(control, tp.run)
    return WorkspacePaths(tp.workspace, control_dir=tp.run)


def replace_rtl(ws: WorkspacePaths, rtl: Path) -> None:
    """The workspace's rtl/ becomes the regular files of `rtl` (a folder, one level; nothing else
    is taken), as if the agent had written them before its first call."""
    if not rtl.is_dir() or rtl.is_symlink():
        raise InputError(f"--start-rtl {rtl}: not a folder")
    sources = sorted(rtl.iterdir())
    refused = [p.name for p in sources if p.is_symlink() or not p.is_file()]
    if refused:
        raise InputError(f"--start-rtl {rtl}: only regular files are taken; refused {', '.join(refused)}")
    if not sources:
        raise InputError(f"--start-rtl {rtl}: no files")
    target = ws.root / "rtl"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    for source in sources:
        shutil.copyfile(source, target / source.name)


class BudgetFile(BaseModel):
    """`--budget FILE`: one [budget] table."""

    model_config = ConfigDict(extra="forbid")
    budget: BudgetOverride


def load_budget_override(path: Path) -> BudgetOverride:
    from closer.tomlio import load_toml_model

    return load_toml_model(path, BudgetFile, "budget file {path} does not exist").budget


def override_budget(ws: WorkspacePaths, budget: BudgetOverride) -> None:
    """`--budget` replaces the trial copy's [budget] table before the run starts (the run records
    the numbers it ran under in run.json)."""
    data = tomllib.loads(ws.tools_config.read_text())
    data["budget"] = budget.model_dump(exclude_none=True, exclude_defaults=False, mode="json")
    for key in ("weights", "stagnation"):
        if not data["budget"][key]:
            del data["budget"][key]
    ws.tools_config.write_text(tomli_w.dumps(data))
    resolve_budget(load_tool_config(ws.tools_config).budget)  # fails now, naming the key, not mid-run


def shorten_wall_clock(ws: WorkspacePaths, wall_s: float) -> None:
    """`--wall-s` becomes the metered run's own wall clock (trial copy of tools.toml, before the
    run starts), so a call still running when the agent's time is up times out with it and is
    recorded, instead of outliving the run."""
    config = load_tool_config(ws.tools_config)
    tier_wall_s = resolve_budget(config.budget).wall_s
    data = tomllib.loads(ws.tools_config.read_text())
    data.setdefault("budget", {})["wall_s"] = min(tier_wall_s, wall_s)
    ws.tools_config.write_text(tomli_w.dumps(data))


def give_to(root: Path, uid: int) -> None:
    """The sandbox's uid owns its workspace (and nothing else on the host)."""
    for dirpath, dirnames, filenames in os.walk(root):
        os.chown(dirpath, uid, uid, follow_symlinks=False)
        for name in filenames + dirnames:
            os.chown(os.path.join(dirpath, name), uid, uid, follow_symlinks=False)


def deliver_as(uid: int):
    """Results are copied into the workspace by the sandbox's own uid: whatever the agent put in
    the way (a symlink, a file) can only redirect the copy to where that uid may write anyway."""
    def deliver(staging: Path, dest: Path) -> None:
        if dest.is_symlink() or dest.parent.is_symlink() or dest.exists():
            raise InputError(f"{dest.parent.name}/{dest.name} already exists or is a symlink")
        programs = require_programs()
        done = run(Command([programs["setpriv"], f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                            "mkdir", "-p", "--", str(dest.parent)]), staging.parent / "deliver.log", check=False)
        done = run(Command([programs["setpriv"], f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                            "cp", "-R", "--no-dereference", "--no-preserve=all", "--", str(staging), str(dest)]),
                   staging.parent / "deliver.log", check=False)
        if not done.ok:
            raise InputError(f"copy into {dest.parent.name}/{dest.name} failed: {done.log_tail(2)}")
    return deliver


def write_once(path: Path, text: str) -> None:
    """Records are never overwritten: a second writer fails instead of replacing the first."""
    with open(path, "x") as handle:
        handle.write(text)


def _gap(best_public: float | None, hidden: float | None) -> float | None:
    return None if best_public is None or hidden is None else round(best_public - hidden, 6)


def _evaluation_fields(ev: EvaluationRecord | None, summary) -> dict:
    """The schema-2 fields of a RunRecord that come from the evaluation and the summary."""
    terms = ((ev.reward_result or {}).get("terms") or {}) if ev else {}
    return {
        "feasible": bool(ev.scored and ev.gate == 1) if ev else None,
        "evaluator_public_gap": ev.public_private_gap if ev else None,
        "best_partial_reward": summary.best_partial_reward if summary else None,
        "gate_reasons": dict(ev.gate_reasons) if ev else {},
        "reasons": list(ev.reasons) if ev else [],
        "target_terms": {name: {k: term.get(k) for k in ("metric", "value", "target", "met", "penalty", "weight")}
                         for name, term in terms.items()},
    }


def load_records(runs: Path) -> list[RunRecord]:
    files = sorted(runs.rglob("record.json"))
    out = []
    for path in files:
        out.append(load_json_model(path, RunRecord, "run record"))
    return out


def write_summary(runs: Path) -> Path:
    records = load_records(runs)
    feasible = sum(1 for r in records if r.is_feasible)
    lines = ["# Run summary", "",
             f"Feasible (every gate passed on the hidden conditions): {feasible} of {len(records)} trials. "
             "A run state of `success` means the run completed and was scored, not that it passed.", "",
             "| task | agent | trial | state | feasible | reward | failing gates | AUC wall (public) | "
             "AUC cost (public) | calls |",
             "|---|---|---:|---|---|---:|---|---:|---:|---|"]
    for r in records:
        label = f"{r.agent} (machinery)" if r.machinery_baseline else r.agent
        calls = ", ".join(f"{k} {v}" for k, v in r.calls_by_tool.items() if v)
        lines.append(f"| {r.task_id} | {label} | {r.trial} | {r.run_state} | {feasible_label(r)} | {_fmt(r.reward)} | "
                     f"{', '.join(r.failing_gates) or '-'} | {_fmt(r.auc_wall_public)} | {_fmt(r.auc_cost_public)} | "
                     f"{calls or '-'} |")
    reasons = [f"- {r.task_id} {r.agent} trial {r.trial}: {r.run_state_reason}" + (f" ({r.verifier_error})" if r.verifier_error and r.verifier_error != r.run_state_reason else "")
               for r in records if r.run_state != "success"]
    if reasons:
        lines += ["", "## Runs that did not end in success", "", *reasons]
    unfinished = [f"- {folder.relative_to(runs)}: {where}" for folder, where in unfinished_trials(runs)]
    if unfinished:
        lines += ["", "## Trials without a record (killed, or still running)", "", *unfinished]
    path = runs / "summary.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def feasible_label(record: RunRecord) -> str:
    """yes / NO / not scored: what a reader needs beside the run state."""
    if not record.scored:
        return "not scored"
    return "yes" if record.is_feasible else "NO"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"
