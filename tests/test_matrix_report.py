"""The RQ computations on made-up trials (no flow): RQ1 compares the A+B compositions with C
(and only those), RQ2 finds the layer edited first after a failed pnr call and whether the next
full-gate call improved, RQ3 has the run-to-run spread; invalid runs never enter a mean."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pandas as pd

from closer.budget import ToolClass
from closer.matrix.report import (NO_EDIT, OUTCOMES, bootstrap_diff_ci, edits_after_failures, rq1_table, rq2_table,
                                  rq3_table)
from closer.trajectory.record import CallCost, EditLayer, Outcome, TrajectoryRecord

T0 = datetime(2026, 12, 1, tzinfo=timezone.utc)


def row(kind: str, trial: int, reward: float | None, agent: str = "sweep", invalid: bool = False,
        pnr: int = 1, auc: float = 0.5, cost: float | None = None, checkpoint: float | None = None,
        checkpoint_cost: float | None = None, start: float | None = None, first_feasible: float | None = None,
        cost_after: float | None = None) -> dict:
    return {"key": f"{kind}/{agent}/{trial}", "design": "gcd", "kind": kind, "budget": "low", "agent": agent,
            "machinery": True, "trial": trial, "run_state": "infrastructure_failure" if invalid else "success",
            "invalid": invalid, "reward": reward, "feasible": bool(reward), "auc_cost_public": auc,
            "auc_wall_public": auc, "pnr_calls": pnr, "suite_version": "v", "note": "", "trajectory": None,
            "cost_to_first_feasible": cost, "checkpoint_a_reward": checkpoint,
            "checkpoint_cost": checkpoint_cost, "start_reward": start,
            "gain_after_start": None if start is None or reward is None else reward - start,
            "first_feasible_reward": first_feasible,
            "gain_after_first_feasible": None if first_feasible is None or reward is None else reward - first_feasible,
            "cost_after_first_feasible": cost_after}


def test_rq1_compares_the_composition_with_c_and_skips_invalid_runs():
    df = pd.DataFrame([row("AB", 1, 0.9, pnr=2), row("AB", 2, 0.7, pnr=4), row("C", 1, 0.5), row("C", 2, 0.3),
                       row("C", 3, 1.0, invalid=True), row("A", 1, 1.0), row("B", 1, 0.1)])
    [r] = rq1_table(df).to_dict("records")
    assert r["AB_trials"] == 2 and r["C_trials"] == 2  # the invalid C trial is not counted
    assert np.isclose(r["AB_reward"], 0.8) and np.isclose(r["C_reward"], 0.4) and np.isclose(r["reward_diff"], 0.4)
    assert r["AB_reward_ci_low"] <= 0.8 <= r["AB_reward_ci_high"] and r["reward_diff_ci_low"] > 0
    assert np.isclose(r["AB_pnr_calls"], 3.0) and np.isclose(r["C_pnr_calls"], 1.0)


def test_rq1_has_a_versus_c_at_the_checkpoint_and_b_versus_c_from_the_first_feasible_layout():
    df = pd.DataFrame([row("AB", 1, 1.0), row("A", 1, 1.0, cost=10.0), row("A", 2, 0.8, cost=20.0),
                       row("B", 1, 0.6, cost=50.0, start=0.5),
                       row("C", 1, 0.9, cost=80.0, checkpoint=1.0, checkpoint_cost=30.0, first_feasible=0.7, cost_after=20.0),
                       row("C", 2, 0.0, checkpoint=0.0, first_feasible=0.0)])  # C trial 2: never passed A's oracle
    [r] = rq1_table(df).to_dict("records")
    assert np.isclose(r["A_reward"], 0.9) and np.isclose(r["C_checkpoint_A_reward"], 0.5)
    assert np.isclose(r["A_cost_to_first_feasible"], 15.0) and np.isclose(r["C_checkpoint_cost"], 30.0)
    assert np.isclose(r["B_cost_to_first_feasible"], 50.0) and np.isclose(r["C_cost_to_first_feasible"], 80.0)
    assert np.isclose(r["B_reward"], 0.6)
    # after the first feasible layout: B gained 0.1 over its weak start; C 0.2 over its first feasible layout
    assert np.isclose(r["B_start_reward"], 0.5) and np.isclose(r["B_gain_after_start"], 0.1)
    assert np.isclose(r["C_first_feasible_reward"], 0.35) and np.isclose(r["C_gain_after_first_feasible"], 0.1)
    assert np.isclose(r["C_cost_after_first_feasible"], 20.0)


def test_layout_columns_come_from_the_store_entry():
    from closer.matrix.report import _layout_columns
    from closer.matrix.store import LayoutPoint, StoreEntry

    def entry(**kw) -> StoreEntry:
        return StoreEntry(key="k", role="trial", design="gcd", kind="C", budget_tier="low", agent="a",
                          machinery_baseline=False, trial=1, suite_version="v", run_state="success", reward=0.9,
                          feasible=True, record=None, finished_at="2026-12-01T00:00:00+00:00", **kw)

    point = LayoutPoint(seq=3, elapsed_s=10.0, cost_units=30.0, cost_after_units=12.0, reward=0.6, evaluations=1)
    searched = _layout_columns(entry(layout_searched=True, first_feasible=point))
    assert np.isclose(searched["gain_after_first_feasible"], 0.3) and searched["cost_after_first_feasible"] == 12.0
    never = _layout_columns(entry(layout_searched=True))  # no call was feasible: no gain claimed
    assert never["first_feasible_reward"] == 0.0 and never["gain_after_first_feasible"] == 0.0
    assert all(v is None for v in _layout_columns(entry()).values())  # not searched (no composition)


def test_rq1_needs_both_arms():
    assert rq1_table(pd.DataFrame([row("A", 1, 1.0), row("B", 1, 1.0), row("C", 1, 1.0)])).empty


def test_the_difference_ci_excludes_zero_only_for_a_real_difference():
    low, high = bootstrap_diff_ci([1.0, 0.9, 0.95], [0.1, 0.2, 0.15])
    assert low > 0.6 and high < 0.95
    low, high = bootstrap_diff_ci([0.5, 0.6, 0.4], [0.6, 0.4, 0.5])
    assert low < 0 < high


def call(seq: int, tool: ToolClass, layers=(), reward=None, feasible=None, outcome=Outcome.OK) -> TrajectoryRecord:
    return TrajectoryRecord(seq=seq, run_id="r", started_at=T0, ended_at=T0, elapsed_s=float(seq), tool=tool,
                            surface_digest=None, layers=list(layers), cost=CallCost(counted=True, units=25.0, tool_wall_s=1.0),
                            outcome=outcome, reward=reward, feasible=feasible)


def test_rq2_finds_the_first_edit_after_a_failed_pnr_and_whether_it_paid_off():
    calls = [call(1, ToolClass.PNR, reward=0.0, feasible=False),            # failed
             call(2, ToolClass.SIM),                                         # no edit
             call(3, ToolClass.SYNTH, layers=[EditLayer.FLOW, EditLayer.CONSTRAINT]),
             call(4, ToolClass.PNR, reward=0.6, feasible=True),              # improved
             call(5, ToolClass.PNR, reward=0.6, feasible=False, outcome=Outcome.REFUSED_BUDGET)]  # ran nothing
    assert edits_after_failures(calls) == [("constraint", "improved")]  # stage order: constraint before flow


def test_rq2_counts_a_failure_that_did_not_pay_off_or_was_never_followed():
    not_improved = [call(1, ToolClass.PNR, reward=0.4, feasible=False),
                    call(2, ToolClass.PNR, layers=[EditLayer.RTL], reward=0.3, feasible=False)]
    assert edits_after_failures(not_improved) == [("rtl", "not improved"), (NO_EDIT, OUTCOMES[2])]
    assert edits_after_failures([call(1, ToolClass.PNR, reward=1.0, feasible=True)]) == []
    table = rq2_table([("sweep", "rtl", "not improved"), ("sweep", "rtl", "improved"), ("null", NO_EDIT, OUTCOMES[2])])
    rtl = table[(table.agent == "sweep") & (table.layer_edited_first == "rtl")].iloc[0]
    assert rtl["improved"] == 1 and rtl["not improved"] == 1 and rtl["improved_rate"] == 0.5
    assert set(table.layer_edited_first) == {"rtl", "constraint", "floorplan", "flow", NO_EDIT}


def test_rq3_has_mean_ci_and_run_to_run_spread_per_kind():
    df = pd.DataFrame([row("B", 1, 0.2), row("B", 2, 0.6), row("B", 3, 0.0, invalid=True), row("C", 1, 1.0)])
    table = rq3_table(df).set_index("kind")
    assert table.loc["B", "trials"] == 3 and table.loc["B", "invalid"] == 1
    assert np.isclose(table.loc["B", "reward_mean"], 0.4) and np.isclose(table.loc["B", "reward_std"], np.std([0.2, 0.6], ddof=1))
    assert np.isnan(table.loc["C", "reward_std"])  # one trial has no spread
