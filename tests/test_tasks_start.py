"""`closer task run --start-rtl DIR --budget FILE`: a trial that starts from given RTL under a given
budget (the matrix's A+B composition). The null agent changes nothing, so on A it scores what it
was started from: the golden RTL passes A's gates, the task's own start (the skeleton) does not
(tests/test_matrix_* run it from the matrix)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from closer.agents import resolve_agent
from closer.budget import BudgetOverride
from closer.errors import InputError
from closer.metered.paths import WorkspacePaths
from closer.tasks.runner import TrialStart, load_budget_override, replace_rtl, run_trials


@pytest.fixture
def task(gcd_a_low_task: Path) -> Path:
    return gcd_a_low_task


def test_start_rtl_takes_regular_files_only(tmp_path: Path):
    ws = WorkspacePaths(tmp_path / "ws")
    (ws.root / "rtl").mkdir(parents=True)
    (ws.root / "rtl" / "old.v").write_text("module old; endmodule\n")
    source = tmp_path / "src"
    source.mkdir()
    (source / "gcd.v").write_text("module gcd; endmodule\n")
    replace_rtl(ws, source)
    assert sorted(p.name for p in (ws.root / "rtl").iterdir()) == ["gcd.v"]
    os.symlink("/etc/passwd", source / "leak.v")
    with pytest.raises(InputError, match="refused leak.v"):
        replace_rtl(ws, source)
    with pytest.raises(InputError, match="not a folder"):
        replace_rtl(ws, source / "gcd.v")


def test_a_budget_file_is_one_validated_budget_table(tmp_path: Path):
    good = tmp_path / "b.toml"
    good.write_text('[budget]\ntier = "low"\npnr = 1\nwall_s = 60.0\n')
    assert load_budget_override(good) == BudgetOverride(tier="low", pnr=1, wall_s=60.0)
    bad = tmp_path / "bad.toml"
    bad.write_text('[budget]\npnr = -1\n')
    with pytest.raises(InputError, match=r"bad.toml: .*budget.pnr"):
        load_budget_override(bad)


@pytest.mark.slow
def test_a_trial_started_from_the_golden_rtl_scores_it(task: Path, tmp_path: Path, repo):
    golden = repo.root / "designs" / "gcd" / "rtl"
    budget = BudgetOverride(tier="low", sim=7, synth=2, verify=1, wall_s=3000.0, cost_units=50.0)
    start = TrialStart(rtl=golden, budget=budget)
    [record] = run_trials(task, resolve_agent("null"), 1, tmp_path / "runs", only=2, start=start)
    assert record.trial == 2 and record.is_feasible and record.reward == pytest.approx(1.0)
    assert record.start["rtl"] == str(golden)
    assert record.start["budget"]["sim"] == 7 and record.start["rtl_checksum"]
    run_info = json.loads(Path(record.paths["run"], "run.json").read_text())
    assert run_info["budget"]["caps"]["sim"] == 7 and run_info["budget"]["wall_s"] == 3000.0
    assert (Path(record.paths["workspace"]) / "rtl" / "gcd.v").read_bytes() == (golden / "gcd.v").read_bytes()
    assert not (tmp_path / "runs" / "gcd-A-low" / "null" / "trial-1").exists()
