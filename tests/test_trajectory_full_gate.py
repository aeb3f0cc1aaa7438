"""Which calls count: only a call that evaluated the stage's full gate set is feasible and moves
best-so-far, AUC and first-feasible; the others' estimates are informational (partial_reward).
And the public-private gap of the issue's demo (verify said 1.0, the evaluator 0.0)."""

from __future__ import annotations

from closer import metrics as mk
from closer.budget import ToolClass
from closer.metered.estimator import RewardEstimate
from closer.tasks.estimator import ESTIMATE_FEASIBLE, ESTIMATE_REWARD, estimate, evaluates_full_gates, full_gate_tools
from closer.tasks.runner import RunRecord
from closer.trajectory.measures import SummaryParams, summarize_records
from tests.metered_helpers import make_record

PHYSICAL = {mk.ROUTE_DRC_ERRORS: 0, mk.SIGNOFF_DRC_ERRORS: 0, mk.SIGNOFF_LVS_ERRORS: 0, mk.ANTENNA_VIOLATING_NETS: 0}


def params(kind: str | None) -> SummaryParams:
    return SummaryParams(wall_s=100.0, cost_units=100.0, window_calls=10, window_cost_units=50.0,
                         full_gate_tools=full_gate_tools(kind) if kind else None)


def rec(seq: int, tool: str, reward: float, feasible: bool, elapsed_s: float, metrics: dict | None = None,
        partial: bool = False):
    r = make_record(seq, tool, reward=None if partial else reward, feasible=None if partial else feasible,
                    elapsed_s=elapsed_s, units=5.0)
    return r.model_copy(update={"metrics": metrics or {}, "partial_reward": reward if partial else None})


def test_synth_and_sim_never_raise_best_so_far_on_b():
    # as an estimator that scored every call would have recorded them: synth and sim say 1.0, feasible
    calls = [rec(1, "synth", 1.0, True, 10), rec(2, "sim", 1.0, True, 20)]
    s = summarize_records(calls, params("B"))
    assert s.best_reward is None and s.curve == [] and s.first_feasible is None
    assert s.auc_wall == 0.0 and s.auc_cost == 0.0 and s.full_gate_calls == 0
    assert s.best_partial_reward == 1.0
    # without the kind's rule, the same records would count: the rule is what stops them
    assert summarize_records(calls, params(None)).best_reward == 1.0


def test_verify_raises_best_so_far_and_is_the_first_feasible():
    calls = [rec(1, "synth", 1.0, True, 10), rec(2, "verify", 0.5, False, 50), rec(3, "verify", 1.0, True, 60)]
    s = summarize_records(calls, params("B"))
    assert [(p.seq, p.best) for p in s.curve] == [(2, 0.5), (3, 1.0)]
    assert s.best_reward == 1.0 and s.first_feasible.seq == 3 and s.full_gate_calls == 2
    # wall: 0.5 on [50, 60), 1.0 on [60, 100] -> (5 + 40) / 100
    assert s.auc_wall == 0.45


def test_pnr_counts_only_with_the_physical_gate_keys():
    no_keys = rec(1, "pnr", 0.9, True, 10, metrics={"finish__design__instance__area": 1.0})
    with_keys = rec(2, "pnr", 0.8, True, 20, metrics=PHYSICAL)
    s = summarize_records([no_keys, with_keys], params("B"))
    assert [(p.seq, p.best) for p in s.curve] == [(2, 0.8)] and s.first_feasible.seq == 2
    # task A has no physical stage: verify alone evaluates its gates
    assert summarize_records([with_keys], params("A")).best_reward is None


def test_partial_reward_never_counts_even_without_a_rule():
    s = summarize_records([rec(1, "sim", 1.0, True, 10, partial=True)], params(None))
    assert s.best_reward is None and s.first_feasible is None and s.best_partial_reward == 1.0


def test_task_estimator_marks_sim_partial_and_verify_full():
    metrics = {mk.FUNC_TESTS_TOTAL: 2, mk.FUNC_TESTS_FAILED: 0}
    assert estimate(ToolClass.SIM, metrics, None) is None  # a sim call scores part of the gates: no estimate
    scored = {ESTIMATE_REWARD: 1.0, ESTIMATE_FEASIBLE: True}
    verify = estimate(ToolClass.VERIFY, metrics | scored, None)
    assert verify.full_gate and verify.record_fields() == {"reward": 1.0, "feasible": True, "partial_reward": None}
    assert evaluates_full_gates(ToolClass.PNR, PHYSICAL, kind=None)
    assert not evaluates_full_gates(ToolClass.PNR, PHYSICAL, kind="A")
    assert not evaluates_full_gates(ToolClass.SYNTH, PHYSICAL)
    assert RewardEstimate(0.3, False).full_gate  # a targets estimator's result stays full-gate


def demo_record(**update) -> dict:
    """The record `make demo` wrote for sweep on gcd-B-low (issue 15), schema 1."""
    base = {
        "schema_version": "1", "task_id": "gcd-B-low", "kind": "B", "design": "gcd", "budget_tier": "low",
        "trial": 1, "agent": "sweep", "machinery_baseline": True, "agent_backend": "machinery",
        "agent_model": None, "agent_quantization": None, "run_id": "r", "started_at": "2026-11-30T03:00:00+00:00",
        "agent_exit": "finished", "agent_returncode": 0, "agent_wall_s": 60.0, "run_state": "success",
        "run_state_rule": 6, "run_state_reason": "the agent finished and the run was scored", "reward": 0.0,
        "scored": True, "accepted": True, "gates": {"func": "pass", "sta": "fail"}, "failing_gates": ["sta"],
        "verifier_error": None, "raw_metrics": {}, "auc_wall": 0.998, "auc_cost": 0.9,
        "best_public_reward": 1.0, "time_to_first_feasible_s": 32.7, "cost_to_first_feasible": 25.0,
        "calls_by_tool": {"synth": 4, "verify": 1}, "outcomes": {"ok": 5},
        "curve": [{"seq": 5, "elapsed_s": 32.7, "cost_units": 25.0, "best": 1.0}], "public_reward": 0.0,
        "public_private_gap": 0.0, "func_pass_gap": 0.0, "locked_violations": [], "suite_version": "0.1.0",
        "tool_versions": {}, "closer_version": "0.1.0", "paths": {},
    }
    return base | update


def test_demo_case_gap_is_best_public_minus_hidden():
    # the trajectory: four synth calls (no estimate), then verify printed 1.0, feasible
    calls = [rec(i, "synth", 0.0, False, 5.0 * i, partial=True) for i in range(1, 5)]
    calls.append(rec(5, "verify", 1.0, True, 32.7))
    s = summarize_records(calls, params("B"))
    assert s.best_reward == 1.0
    from closer.tasks.runner import _gap

    assert _gap(s.best_reward, 0.0) == 1.0
    # the schema-1 record the demo wrote reads with the gap as defined now, the old number kept apart
    record = RunRecord.model_validate(demo_record())
    assert record.public_private_gap == 1.0 and record.evaluator_public_gap == 0.0
    assert record.auc_wall_public == 0.998 and record.curve_public[0]["best"] == 1.0
    assert record.is_feasible is False
