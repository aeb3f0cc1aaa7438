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


def test_bootstrap_ci() -> None:
    assert bootstrap_ci([0.5]) == (0.5, 0.5)
    low, high = bootstrap_ci([0.0, 1.0] * 10)
    assert 0.25 < low < 0.5 < high < 0.75


def test_empty_runs_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no record.json"):
        build_report(tmp_path, tmp_path / "out")
