"""Run-state classification: exactly one state per run, decided by the first matching rule."""

from __future__ import annotations

import pytest

from closer.metered.runstate import AgentExit, RunEvidence, RunState, classify_run, count_infra_errors
from tests.metered_helpers import make_record, write_trajectory


def ev(**kw) -> RunEvidence:
    base = dict(agent_exit=AgentExit.FINISHED, workspace_scoreable=True, score_produced=True)
    return RunEvidence(**(base | kw))


@pytest.mark.parametrize("evidence, state, rule", [
    (ev(), RunState.SUCCESS, 6),
    (ev(agent_exit=AgentExit.TIMED_OUT), RunState.AGENT_TIMEOUT_WITH_PATCH, 5),
    (ev(agent_exit=AgentExit.TIMED_OUT, workspace_scoreable=False, score_produced=False), RunState.AGENT_FAILURE, 3),
    (ev(agent_exit=AgentExit.CRASHED), RunState.AGENT_FAILURE, 2),
    (ev(workspace_scoreable=False, score_produced=False), RunState.AGENT_FAILURE, 3),
    (ev(score_produced=False, verifier_error="gate route__drc_errors unmeasured"), RunState.VERIFIER_FAILURE, 4),
    (ev(agent_exit=AgentExit.TIMED_OUT, score_produced=False), RunState.VERIFIER_FAILURE, 4),
    (ev(harness_errors=["disk full writing results"]), RunState.INFRASTRUCTURE_FAILURE, 1),
    (ev(agent_exit=AgentExit.CRASHED, trajectory_infra_errors=2), RunState.INFRASTRUCTURE_FAILURE, 1),
])
def test_rules(evidence, state, rule):
    decision = classify_run(evidence)
    assert (decision.state, decision.rule) == (state, rule)
    assert decision.reason


def test_verifier_reason_is_kept():
    d = classify_run(ev(score_produced=False, verifier_error="gate timing__setup__ws unmeasured"))
    assert "timing__setup__ws" in d.reason


def test_infra_errors_counted_from_the_trajectory(tmp_path):
    path = write_trajectory(tmp_path / "t.jsonl", [make_record(1), make_record(2, outcome="infra_error"),
                                                     make_record(3, outcome="tool_error")])
    assert count_infra_errors(path) == 1
    assert count_infra_errors(tmp_path / "missing.jsonl") == 0
