"""`closer task run --resume`: a killed trial is finished from where its progress marker says it
stopped, a recorded trial is kept byte for byte, and a trial whose run still lives is refused.
The SIGKILL-while-the-agent-runs case is in tests/test_tasks_run_reliability.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from closer.agents import resolve_agent
from closer.errors import InputError
from closer.tasks.runner import run_trials
from closer.tasks.trialstate import Phase, claim_trial, mark, reclaim_trial, read_progress


@pytest.fixture
def task(gcd_a_low_task: Path) -> Path:
    return gcd_a_low_task


def test_reclaim_is_refused_while_the_claimant_lives(tmp_path: Path):
    trial = tmp_path / "trial-1"
    with claim_trial(trial):
        with pytest.raises(InputError, match="still going"):
            reclaim_trial(trial)
    with reclaim_trial(trial) as claim:  # the claimant is gone (its lock released): taken back
        assert claim.progress.phase is Phase.CLAIMED
        with pytest.raises(InputError, match="still going"):
            reclaim_trial(trial)  # and only by one resumer at a time


def test_reclaim_refuses_a_recorded_or_unmarked_trial(tmp_path: Path):
    with claim_trial(tmp_path / "a"):
        pass
    (tmp_path / "a" / "record.json").write_text("{}")
    with pytest.raises(InputError, match="never rewritten"):
        reclaim_trial(tmp_path / "a")
    (tmp_path / "a" / "record.json").unlink()
    mark(tmp_path / "a", Phase.RECORDED)
    with pytest.raises(InputError, match="not written again"):
        reclaim_trial(tmp_path / "a")  # a record that was there and is gone is not made again
    (tmp_path / "b").mkdir()
    with pytest.raises(InputError, match="progress.json"):
        reclaim_trial(tmp_path / "b")
    with pytest.raises(InputError, match="no trial folder"):
        reclaim_trial(tmp_path / "c")


@pytest.mark.slow
def test_resume_finishes_killed_trials_and_keeps_recorded_ones(task: Path, tmp_path: Path):
    runs, null = tmp_path / "runs", resolve_agent("null")
    trial1, trial2 = (runs / "gcd-A-low" / "null" / f"trial-{n}" for n in (1, 2))
    with claim_trial(trial1):  # trial 1 killed before its agent started: a claim and a marker only
        pass
    [first] = run_trials(task, null, 1, runs, resume=True)
    assert first.resumed_from is None and first.run_state == "success"  # started afresh in its folder
    recorded = (trial1 / "record.json").read_bytes()

    # trial 2 killed while evaluating: the agent's outcome is in its marker, the evaluation partial
    shutil.copytree(trial1, trial2, symlinks=True)
    (trial2 / "record.json").unlink()
    mark(trial2, Phase.EVALUATING)
    (trial2 / "evaluation" / "evaluation.json").write_text("{torn")

    records = run_trials(task, null, 2, runs, resume=True)
    assert (trial1 / "record.json").read_bytes() == recorded and records[0] == first
    assert records[1].resumed_from == "evaluating" and records[1].run_state == "success"
    assert records[1].agent_exit == first.agent_exit and records[1].reward == first.reward
    assert (trial2 / "evaluation.interrupted-1" / "evaluation.json").read_text() == "{torn"
    assert read_progress(trial2).phase is Phase.RECORDED
    assert "without a record" not in (runs / "summary.md").read_text()
    again = run_trials(task, null, 2, runs, resume=True)  # nothing left to do: every record kept
    assert [r.model_dump() for r in again] == [r.model_dump() for r in records]
