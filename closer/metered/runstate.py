"""Run states: the one place that decides how a run ended (rules documented in docs/run-states.md).

A run ends in exactly one state. `classify_run` applies the rules in order; the first that
matches wins, and the decision names the rule and the evidence, so a failure is recorded as a
failure with its reason rather than as a low score.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from closer.trajectory.reader import TrajectoryReader
from closer.trajectory.record import Outcome


class RunState(StrEnum):
    SUCCESS = "success"
    AGENT_FAILURE = "agent_failure"
    AGENT_TIMEOUT_WITH_PATCH = "agent_timeout_with_patch"
    VERIFIER_FAILURE = "verifier_failure"
    INFRASTRUCTURE_FAILURE = "infrastructure_failure"


class AgentExit(StrEnum):
    FINISHED = "finished"    # the agent stopped on its own
    CRASHED = "crashed"      # the agent process died or reported an error
    TIMED_OUT = "timed_out"  # the harness stopped it at the wall-clock limit
    INTERRUPTED = "interrupted"  # the harness itself was killed while the agent ran (a resumed trial)


class RunEvidence(BaseModel):
    """What the harness knows when a run is over."""

    model_config = ConfigDict(extra="forbid")

    agent_exit: AgentExit
    workspace_scoreable: bool = Field(description="the evaluator found a workspace it can score")
    score_produced: bool = Field(description="the evaluator produced a score (every required gate measured)")
    verifier_error: str | None = Field(None, description="why no score was produced")
    harness_errors: list[str] = Field(default_factory=list,
                                      description="harness-side failures: tool missing, disk full, crash")
    trajectory_infra_errors: int = Field(0, ge=0, description="records with outcome infra_error")


class RunStateDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: RunState
    rule: int = Field(description="number of the rule that decided (docs/run-states.md)")
    reason: str


def classify_run(ev: RunEvidence) -> RunStateDecision:
    if ev.harness_errors or ev.trajectory_infra_errors:
        what = "; ".join(ev.harness_errors) or f"{ev.trajectory_infra_errors} tool call(s) hit infra_error"
        return RunStateDecision(state=RunState.INFRASTRUCTURE_FAILURE, rule=1, reason=what)
    if ev.agent_exit is AgentExit.CRASHED:
        return RunStateDecision(state=RunState.AGENT_FAILURE, rule=2, reason="the agent crashed")
    if not ev.workspace_scoreable:
        return RunStateDecision(state=RunState.AGENT_FAILURE, rule=3,
                                reason=f"the agent ({ev.agent_exit.value}) left nothing scoreable")
    if not ev.score_produced:
        return RunStateDecision(state=RunState.VERIFIER_FAILURE, rule=4,
                                reason=ev.verifier_error or "the evaluator produced no score")
    if ev.agent_exit is AgentExit.TIMED_OUT:
        return RunStateDecision(state=RunState.AGENT_TIMEOUT_WITH_PATCH, rule=5,
                                reason="time ran out; the workspace left behind was scored")
    return RunStateDecision(state=RunState.SUCCESS, rule=6, reason="the agent finished and the run was scored")


def count_infra_errors(trajectory: Path) -> int:
    if not trajectory.exists():
        return 0
    return sum(1 for rec in TrajectoryReader(trajectory) if rec.outcome is Outcome.INFRA_ERROR)
