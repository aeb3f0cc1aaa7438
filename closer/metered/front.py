"""The metered front end: every tool call an agent makes goes through `metered_call`.

One call: take the run's lock, snapshot the edit surface (regular files only), check the budget
(refusing an over-budget or over-time call), build the call's tree (the pristine workspace with the
snapshot's surface files: locked files such as the public tests always come from the pristine
copy, and edits the agent makes while the tool runs do not reach it), run the tool class's
commands there through `closer.procs.run`, collect the public metrics and reward estimate,
deliver the results into the workspace, and append one trajectory record, for refused and failed
calls too. The trajectory is the ledger: used counts and the best reward are read back from it.
Under `closer task run` the caller is the broker (closer.metered.broker), outside the agent's
sandbox; the run directory it writes is out of the agent's reach.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from closer.budgetcheck import check_call
from closer.errors import CloserError, InputError
from closer.flow import cachedir as flow_cache
from closer.metered.argv import ARGS_PLACEHOLDER
from closer.metered.estimator import NO_ESTIMATE, RewardEstimate, load_estimator
from closer.metered.execute import ToolRun, estimate_reward, execute_tool
from closer.metered.layers import infer_layers
from closer.metered.ledger import (Ledger, load_inflight, read_ledger, refresh_status_cache, remaining,
                                   workspace_lock)
from closer.metered.paths import CONTROL_DIR, WorkspacePaths
from closer.metered.run import file_sha256, utc_now
from closer.metered.snapshot import diff, load_snapshot, materialize, take_snapshot
from closer.metered.views import BudgetView, RunView, ToolConfigView, load_run_view, load_tool_view
from closer.toolclass import ToolClass
from closer.trajectory.fastrecord import RecordView, new_record, record_json
from closer.trajectory.outcome import Outcome
from closer.trajectory.reader import TrajectoryReader
from closer.trajectory.writer import TrajectoryWriter

if TYPE_CHECKING:  # the sandbox module is for brokered calls: a standalone call does not import it
    from closer.sandbox.tools import ToolSandbox
    from closer.trajectory.record import TrajectoryRecord

# The call reads its files as views and writes its record from the view (closer.metered.views,
# closer.trajectory.fastrecord): a standalone call imports no pydantic unless a file needs the
# models' verdict or wording, or a record holds what only the model takes (nested metric values).

EXIT_CODES: dict[Outcome, int] = {
    Outcome.OK: 0,
    Outcome.TOOL_ERROR: 1,
    Outcome.REFUSED_BUDGET: 10,
    Outcome.REFUSED_TIME: 11,
    Outcome.TIMEOUT: 12,
    Outcome.INFRA_ERROR: 13,
}
LOG_TAIL_LINES = 40


@dataclass
class CallResult:
    record: RecordView | TrajectoryRecord
    logs: list[Path]
    feedback: str = ""  # what the agent is shown (built while the logs are still readable)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.record.outcome]


# Moves a brokered call's staged results (first argument) into the workspace (second argument).
Deliver = Callable[[Path, Path], None]
# The sandbox a call's tools run in, given the call's folder (closer.sandbox.tools.for_call).
Isolate = Callable[[Path], "ToolSandbox"]


def metered_call(ws: WorkspacePaths, tool: ToolClass, args: list[str] | None = None,
                 deliver: Deliver | None = None, isolate: Isolate | None = None,
                 shared_flow_cache: bool = True) -> CallResult:
    """One metered call. `shared_flow_cache=False`: the call's flows reuse only the run's own
    earlier flows, never a shared $CLOSER_FLOW_CACHE (closer.flow.cachedir.cache_dir)."""
    args = list(args or [])
    ws.check_layout()
    config = load_tool_view(ws.tools_config)
    run_info = load_run_view(ws.run_info)
    if file_sha256(ws.tools_config) != run_info.tools_config_sha256:
        raise InputError(f"{ws.tools_config} changed since the run started; the tool configuration "
                         "is fixed for a run")
    cmds = config.tools.get(tool)
    if args and cmds is not None and not any(ARGS_PLACEHOLDER in argv for argv in cmds.commands):
        raise InputError(f"`{tool.value}` takes no arguments in this task (got {' '.join(args)}); "
                         "nothing was run or recorded")
    with workspace_lock(ws):
        _record_interrupted_call(ws)
        started = utc_now()
        ledger = read_ledger(ws, run_info)
        seq = ledger.next_seq
        budget = run_info.budget
        elapsed = (started - run_info.started_at).total_seconds()
        snapshot = take_snapshot(ws, config.surface)
        previous = load_snapshot(ws, ledger.last_snapshot).files if ledger.last_snapshot else {}
        changes = diff(previous, snapshot.files)
        layers, unclassified = infer_layers(changes.all, config.layer_patterns())

        refusal = check_call(budget, tool, ledger.used[tool], elapsed)
        results_dir: Path | None = None
        estimate: RewardEstimate | None = None
        feedback_logs: list[Path] = []
        if refusal is not None:
            tool_run = ToolRun(Outcome(refusal.kind), refusal.message)
        else:
            results_dir = ws.call_results(seq, tool)
            if not ws.brokered and (results_dir.exists() or results_dir.is_symlink()):
                raise InputError(f"{results_dir} exists but is call {seq}'s results folder; move it "
                                 "away (nothing was run or recorded)")
            _write_inflight(ws, _interrupted_record(
                run_info, seq, started, tool, args, snapshot.digest, changes, layers, unclassified,
                budget, ledger, results_dir.relative_to(ws.root).as_posix()))
            staging = ws.call_staging(seq, tool) if ws.brokered else results_dir
            tree = ws.call_tree(seq, tool)
            try:
                materialize(ws, snapshot, config.surface, tree)
                _copy_control_files(ws, config.tree.control_files, tree)
                tool_run, estimate = _run_counted(ws, config, tool, args, tree, staging,
                                                  budget.wall_s - elapsed,
                                                  isolate(ws.call_dir(seq, tool)) if isolate else None,
                                                  shared_flow_cache)
            finally:
                shutil.rmtree(tree, ignore_errors=True)
            feedback_logs = list(tool_run.logs)
            tool_run.message = _workspace_relative(tool_run.message, staging, results_dir, ws.root)

        counted = _is_counted(tool, tool_run.outcome)
        used_after = dict(ledger.used)
        if counted:
            used_after[tool] += 1
        ended = utc_now()
        elapsed_end = (ended - run_info.started_at).total_seconds()
        scored = estimate.record_fields() if estimate else NO_ESTIMATE
        reward = scored["reward"]
        best = ledger.best_reward
        if reward is not None and (best is None or reward > best):
            best = reward
        record = new_record(
            seq=seq, run_id=run_info.run_id, started_at=started, ended_at=ended,
            elapsed_s=max(elapsed_end, 0.0), tool=tool, args=args,
            surface_digest=snapshot.digest, changes=changes, layers=layers, unclassified=unclassified,
            refused=list(snapshot.refused),
            cost=dict(counted=counted, units=budget.weights.of(tool) if counted else 0.0,
                      tool_wall_s=tool_run.wall_s, peak_rss_mb=tool_run.peak_rss_mb,
                      reused=tool_run.metrics.get(flow_cache.FLOW_REUSED) == 1),
            outcome=tool_run.outcome, message=tool_run.message, exit_codes=tool_run.exit_codes,
            metrics=tool_run.metrics, **scored,
            best_reward=best, remaining=remaining(budget, used_after, elapsed_end),
            results_dir=results_dir.relative_to(ws.root).as_posix() if results_dir else None,
        )
        text = format_feedback(record, feedback_logs, staging if results_dir else None, ws.root)
        if results_dir is not None and ws.brokered:
            _deliver(deliver, staging, results_dir, record)
        with TrajectoryWriter(ws.trajectory) as writer:
            writer.append(record)
        ws.inflight.unlink(missing_ok=True)
        refresh_status_cache(ws)
        if results_dir is not None and ws.brokered:
            shutil.rmtree(ws.call_dir(seq, tool), ignore_errors=True)
    logs = [results_dir / log.relative_to(staging) for log in feedback_logs] if results_dir else []
    return CallResult(record, logs, text)


def _copy_control_files(ws: WorkspacePaths, names: list[str], tree: Path) -> None:
    for name in names:
        source = ws.control / name
        if source.is_file():
            (tree / CONTROL_DIR).mkdir(exist_ok=True)
            shutil.copyfile(source, tree / CONTROL_DIR / name)


def _deliver(deliver: Deliver | None, staging: Path, results_dir: Path, record: RecordView | TrajectoryRecord) -> None:
    """Copy the staged results into the workspace; the record keeps the call even if that fails
    (the agent may have put something in the way)."""
    if not staging.is_dir():
        return
    try:
        (deliver or _copy_results)(staging, results_dir)
    except (OSError, CloserError) as exc:
        record.message = (record.message + "; " if record.message else "") + \
            f"results could not be delivered to {results_dir.name}: {exc}"


def _copy_results(staging: Path, results_dir: Path) -> None:
    shutil.copytree(staging, results_dir, symlinks=True)


def _workspace_relative(text: str, staging: Path, results_dir: Path, root: Path) -> str:
    """Messages name logs as the agent sees them: relative to its workspace."""
    return text.replace(str(staging), results_dir.relative_to(root).as_posix()).replace(str(root) + "/", "")


def _interrupted_record(run_info: RunView, seq: int, started: datetime, tool: ToolClass,
                        args: list[str], digest: str, changes, layers, unclassified,
                        budget: BudgetView, ledger: Ledger, results_dir: str) -> RecordView | TrajectoryRecord:
    """The record a call gets if its process dies before writing its own: the tool may have run,
    so it is counted and charged; its end time becomes known only when the next call finds it."""
    used = dict(ledger.used)
    used[tool] += 1
    elapsed = (started - run_info.started_at).total_seconds()
    return new_record(
        seq=seq, run_id=run_info.run_id, started_at=started, ended_at=started, elapsed_s=max(elapsed, 0.0),
        tool=tool, args=args, surface_digest=digest, changes=changes, layers=layers,
        unclassified=unclassified,
        cost=dict(counted=True, units=budget.weights.of(tool), tool_wall_s=0.0),
        outcome=Outcome.INFRA_ERROR,
        message=f"call {seq} was interrupted: its closer-tool process died before recording a result",
        best_reward=ledger.best_reward, remaining=remaining(budget, used, elapsed), results_dir=results_dir)


def _write_inflight(ws: WorkspacePaths, record: RecordView | TrajectoryRecord) -> None:
    tmp = ws.inflight.with_suffix(".tmp")
    tmp.write_text(record_json(record))
    tmp.replace(ws.inflight)


def record_interrupted_call(ws: WorkspacePaths) -> None:
    """Record a killed call now (under the run's lock) instead of at the next call: the harness
    calls this when the run is over, so the trajectory it summarizes has every call."""
    if ws.inflight.exists():
        with workspace_lock(ws):
            _record_interrupted_call(ws)


def _record_interrupted_call(ws: WorkspacePaths) -> None:
    """Under the lock, an inflight file means its call's process was killed: record that call."""
    if not ws.inflight.exists():
        return
    record = load_inflight(ws)
    ledger_seqs = {rec.seq for rec in TrajectoryReader(ws.trajectory, views=True)} if ws.trajectory.exists() else set()
    if record.seq not in ledger_seqs:
        with TrajectoryWriter(ws.trajectory) as writer:
            writer.append(record)
    ws.inflight.unlink()


def _run_counted(ws: WorkspacePaths, config: ToolConfigView, tool: ToolClass, args: list[str], tree: Path,
                 results_dir: Path, wall_left_s: float,
                 sandbox: ToolSandbox | None = None,
                 shared_flow_cache: bool = True) -> tuple[ToolRun, RewardEstimate | None]:
    try:
        cmds = config.commands_for(tool, ws.tools_config)
        estimator = load_estimator(config.reward, ws.control)
    except CloserError as exc:
        return ToolRun(Outcome.INFRA_ERROR, str(exc)), None
    cache = flow_cache.cache_dir(ws.control, shared_ok=shared_flow_cache)
    if cache is not None:  # the run's flow cache: its tools reuse unchanged flow runs (closer.flow.reuse)
        cmds = cmds.with_env({flow_cache.CACHE_ENV: str(cache)})
        sandbox = sandbox.with_writable(cache) if sandbox else None
    tool_run = execute_tool(tree, cmds, args, results_dir, min(cmds.timeout_s, wall_left_s), sandbox)
    if tool_run.outcome is not Outcome.OK or estimator is None:
        return tool_run, None
    return tool_run, estimate_reward(estimator, tool, tool_run, results_dir)


def _is_counted(tool: ToolClass, outcome: Outcome) -> bool:
    """Refused calls never count; infra errors count only for verify, which always counts."""
    if outcome.refused:
        return False
    if tool is ToolClass.VERIFY:
        return True
    return outcome in (Outcome.OK, Outcome.TOOL_ERROR, Outcome.TIMEOUT)


def format_feedback(rec: RecordView | TrajectoryRecord, logs: list[Path], staging: Path | None, root: Path) -> str:
    """What the agent sees after a call: outcome, refused files, log tails, public metrics,
    reward, budget left. Log paths are shown relative to the agent's workspace."""
    lines = [f"[closer-tool] {rec.tool.value} call {rec.seq}: {rec.outcome.value}"
             f" ({rec.cost.tool_wall_s:.1f} s, cost {rec.cost.units:g})"]
    if rec.message:
        lines.append(rec.message)
    lines += [f"not taken from the workspace: {item}" for item in rec.refused]
    for log in logs:
        if log.exists():
            tail = log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
            shown = f"{rec.results_dir}/{log.relative_to(staging).as_posix()}" if staging and rec.results_dir else log
            lines += [f"--- {shown} (last {len(tail)} lines)", *tail]
    if rec.results_dir:
        lines.append(f"results: {rec.results_dir}/")
    if rec.metrics:
        lines.append("metrics: " + json.dumps(rec.metrics, sort_keys=True))
    if rec.reward is not None or rec.best_reward is not None:
        lines.append(f"reward estimate: {rec.reward}  best so far: {rec.best_reward}  feasible: {rec.feasible}")
    if rec.partial_reward is not None:
        lines.append(f"partial estimate: {rec.partial_reward} (this call does not evaluate every gate: "
                     "never feasible, not a best so far)")
    left = ", ".join(f"{k} {'uncapped' if v is None else format(v, 'g')}" for k, v in rec.remaining.items())
    lines.append(f"budget left: {left}")
    return "\n".join(lines)
