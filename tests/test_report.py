"""closer report over saved run records: tables, CIs, A+B vs C, invalid runs, curves, HTML."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from closer.errors import InputError
from closer.report.build import bootstrap_ci, build_report
from closer.tasks.runner import RunRecord


def _record(task: str, kind: str, tier: str, agent: str, trial: int, reward: float | None, state: str = "success",
            curve: list[dict] | None = None) -> RunRecord:
    return RunRecord(
        task_id=task, kind=kind, design="gcd", budget_tier=tier, trial=trial, agent=agent,
        machinery_baseline=agent in ("null", "oracle", "sweep"), agent_backend=None, agent_model=None,
        agent_quantization=None, run_id=f"r{trial}", started_at="2026-11-30T03:00:00+00:00", agent_exit="finished",
        agent_returncode=0, agent_wall_s=100.0, run_state=state, run_state_rule=6, run_state_reason="why " + state,
        reward=reward, scored=reward is not None, accepted=True, gates={}, failing_gates=[],
        verifier_error=None if reward is not None else "not scored", raw_metrics={}, auc_wall=0.5, auc_cost=0.4,
        best_public_reward=1.0, time_to_first_feasible_s=10.0, cost_to_first_feasible=5.0, calls_by_tool={"sim": 1},
        outcomes={"ok": 1}, curve=curve or [{"seq": 1, "elapsed_s": 10.0, "cost_units": 1.0, "best": 1.0}],
        public_reward=reward, public_private_gap=0.0, func_pass_gap=0.0, locked_violations=[], suite_version="0.1.0",
        tool_versions={}, closer_version="0.1.0", paths={"trial": f"/runs/{task}/{agent}/trial-{trial}"})


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    records = [_record("gcd-A-low", "A", "low", "sweep", 1, 0.8), _record("gcd-A-low", "A", "low", "sweep", 2, 0.6),
               _record("gcd-B-low", "B", "low", "sweep", 1, 0.5),
               _record("gcd-C-medium", "C", "medium", "sweep", 1, 0.3),
               _record("gcd-C-low", "C", "low", "sweep", 1, None, state="verifier_failure")]
    for r in records:
        path = tmp_path / "runs" / r.task_id / r.agent / f"trial-{r.trial}" / "record.json"
        path.parent.mkdir(parents=True)
        path.write_text(r.model_dump_json())
    return tmp_path / "runs"


def test_report_files_and_numbers(runs: Path, tmp_path: Path) -> None:
    from closer.cli import cli

    result = CliRunner().invoke(cli, ["report", str(runs), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    out = tmp_path / "rep"
    table = pd.read_csv(out / "table.csv")
    row = table[(table.kind == "A")].iloc[0]
    assert row.trials == 2 and abs(row.reward_mean - 0.7) < 1e-9 and row.reward_ci_low >= 0.6 and row.reward_ci_high <= 0.8
    versus = pd.read_csv(out / "a_plus_b_vs_c.csv").iloc[0]
    # low + low = 380 cost units: medium (450) is the closest C tier
    assert versus.ab_cost_units == 380 and versus.C_tier == "medium" and abs(versus.C_reward - 0.3) < 1e-9
    invalid = json.loads((out / "invalid_runs.json").read_text())
    assert [(i["task"], i["invalid"]) for i in invalid] == [("gcd-C-low", True)]
    assert (out / "curves" / "gcd-A-low.png").stat().st_size > 1000
    assert "sweep (machinery)" in (out / "report.md").read_text() and "<table" in (out / "index.html").read_text()
    # the run state and feasibility side by side: success is not feasibility
    assert row.state_success_rate == 1.0 and row.feasible_rate == 0.0


def _rescore(trial_dir: Path, hidden_best: float) -> None:
    from closer.tasks.rescore import RescoreCounts, RescoreFile, Selection
    from closer.trajectory.measures import CurvePoint, SummaryParams

    point = CurvePoint(seq=1, elapsed_s=10.0, cost_units=1.0, best=1.0)
    hidden = point.model_copy(update={"best": hidden_best})
    rescore = RescoreFile(
        task_id="gcd-B-low", agent="sweep", trial=1, run_id="r1", rescored_at="2026-12-01T00:00:00+00:00",
        task_dir="/suite/tasks/gcd-B-low", cache="/cache", selection=Selection(calls=None, last=None),
        counts=RescoreCounts(distinct_snapshots=1, selected_snapshots=1, evaluated=1, cache_hits=0,
                             reused_trial_evaluation=0),
        complete=True, params=SummaryParams(wall_s=14400, cost_units=190, window_calls=10, window_cost_units=50),
        calls=[], curve_public=[point], curve_hidden=[hidden], auc_wall_public=0.99, auc_cost_public=0.9,
        auc_wall_hidden=0.0, auc_cost_hidden=0.0, best_public_reward=1.0, best_hidden_reward=hidden_best,
        first_feasible_public=None, first_feasible_hidden=None)
    (trial_dir / "rescore.json").write_text(rescore.model_dump_json())


def test_html_reads_as_what_it_is(tmp_path: Path) -> None:
    """A reward-0 success shows as not feasible, with the failing gate's reason, the metrics against
    the targets, links to its files, the suite version, the machinery label and both curves."""
    record = _record("gcd-B-low", "B", "low", "sweep", 1, 0.0).model_copy(update={
        "failing_gates": ["sta"], "gates": {"func": "pass", "sta": "fail"}, "feasible": False,
        "gate_reasons": {"sta": "9 max-slew violations at ss_100C_1v60"},
        "target_terms": {"area": {"metric": "finish__design__instance__area", "value": 2950.3, "target": 2400.0,
                                  "met": False, "penalty": 0.206, "weight": 1.0}},
        "reasons": ["gate sta: fail: 9 max-slew violations at ss_100C_1v60"]})
    trial_dir = tmp_path / "runs" / "gcd-B-low" / "sweep" / "trial-1"
    trial_dir.mkdir(parents=True)
    (trial_dir / "record.json").write_text(record.model_dump_json())
    _rescore(trial_dir, hidden_best=0.0)
    build_report(tmp_path / "runs", tmp_path / "rep")
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "feasible 0 of 1" in page and ">NO<" in page and "success" in page
    assert "9 max-slew violations at ss_100C_1v60" in page and "finish__design__instance__area" in page
    assert "2950" in page and "2400" in page
    assert 'href="../runs/gcd-B-low/sweep/trial-1/record.json"' in page and "rescore.json" in page
    assert "suite version 0.1.0" in page and "machinery" in page and "AUC wall public / hidden" in page
    assert "0.99 / 0" in page
    results = pd.read_csv(tmp_path / "rep" / "results.csv").iloc[0]
    assert results.auc_wall_hidden == 0.0 and results.auc_wall_public == 0.99 and not results.feasible
    assert "feasible 0 of 1" in (tmp_path / "rep" / "report.md").read_text().replace("**", "")


def test_schema_1_records_stay_readable(tmp_path: Path) -> None:
    data = json.loads(_record("gcd-A-low", "A", "low", "oracle", 1, 1.0).model_dump_json())
    old = {("auc_wall" if k == "auc_wall_public" else "auc_cost" if k == "auc_cost_public"
            else "curve" if k == "curve_public" else k): v for k, v in data.items()}
    for added in ("feasible", "evaluator_public_gap", "best_partial_reward", "gate_reasons", "reasons",
                  "target_terms"):
        old.pop(added)
    old["schema_version"] = "1"
    record = RunRecord.model_validate(old)
    assert record.auc_wall_public == 0.5 and record.curve_public and record.public_private_gap == 0.0


def test_bootstrap_ci() -> None:
    assert bootstrap_ci([0.5]) == (0.5, 0.5)
    low, high = bootstrap_ci([0.0, 1.0] * 10)
    assert 0.25 < low < 0.5 < high < 0.75


def test_empty_runs_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no record.json"):
        build_report(tmp_path, tmp_path / "out")


def test_invalid_runs_never_enter_the_means(tmp_path: Path) -> None:
    from closer.report.build import load_trials, records_frame, summary_table

    records = [_record("gcd-A-low", "A", "low", "sweep", 1, 0.2),
               _record("gcd-A-low", "A", "low", "sweep", 2, 1.0, state="infrastructure_failure"),
               _record("gcd-A-low", "A", "low", "sweep", 3, 0.9, state="verifier_failure")]
    for r in records:
        path = tmp_path / "runs" / r.task_id / r.agent / f"trial-{r.trial}" / "record.json"
        path.parent.mkdir(parents=True)
        path.write_text(r.model_dump_json())
    row = summary_table(records_frame(load_trials(tmp_path / "runs"))).iloc[0]
    assert row.trials == 3 and row.invalid == 2 and row.scored == 1 and row.reward_mean == 0.2
