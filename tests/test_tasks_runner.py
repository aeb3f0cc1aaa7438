"""closer task run on gcd A: the null floor and the oracle ceiling through the metered tools."""

from __future__ import annotations

import dataclasses
import json

import jsonschema
from pathlib import Path

import pytest

from closer.agents import resolve_agent
from closer.errors import InputError
from closer.paths import schema_path
from closer.tasks.paths import SuitePaths
from closer.tasks.runner import run_trials
from tests.projection_support import low_suite


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> SuitePaths:
    return low_suite(tmp_path_factory)


def _validate(record) -> dict:
    data = json.loads(record.model_dump_json())
    jsonschema.validate(data, json.loads(schema_path("run-record").read_text()))
    return data


def test_null_is_the_floor(suite: SuitePaths, tmp_path) -> None:
    [record] = run_trials(suite.task("gcd-A-low").root, resolve_agent("null"), 1, tmp_path / "runs")
    _validate(record)
    assert record.machinery_baseline and record.agent == "null"
    assert record.run_state == "success" and record.scored
    assert record.reward == 0.0 and record.failing_gates == ["func"] and record.feasible is False
    assert record.suite_version and record.calls_by_tool == {}
    summary = (tmp_path / "runs" / "summary.md").read_text()
    assert summary.count("null (machinery)") == 1 and "| success | NO |" in summary and "Feasible" in summary
    with pytest.raises(InputError, match="never overwritten"):
        run_trials(suite.task("gcd-A-low").root, resolve_agent("null"), 1, tmp_path / "runs")


def test_oracle_reaches_the_ceiling_through_metered_tools(suite: SuitePaths, tmp_path) -> None:
    [record] = run_trials(suite.task("gcd-A-low").root, resolve_agent("oracle"), 1, tmp_path / "runs")
    data = _validate(record)
    assert record.reward == 1.0 and record.gates["func"] == "pass" and record.gates["gls"] == "pass"
    assert record.calls_by_tool.get("verify") == 1 and record.auc_wall_public > 0
    assert record.best_public_reward == 1.0 and record.time_to_first_feasible_s is not None
    assert record.public_private_gap == 0.0 and record.feasible is True
    assert data["raw_metrics"]["synth__design__instance__area__stdcell"] > 0
    assert any(k.startswith("run__flow__tool__") for k in record.tool_versions)
    trajectory = Path(record.paths["trajectory"])
    assert len(trajectory.read_text().splitlines()) == 1
    # the ledger is outside the workspace the agent had
    assert not trajectory.is_relative_to(record.paths["workspace"])
    assert not (Path(record.paths["workspace"]) / ".closer").exists()


def test_crashing_command_agent_is_an_agent_failure(suite: SuitePaths, tmp_path) -> None:
    agent = resolve_agent("sh -c 'test -d {workspace} && exit 3'", label="crasher")
    [record] = run_trials(suite.task("gcd-C-low").root, agent, 1, tmp_path / "runs")
    assert not record.machinery_baseline and record.agent == "crasher"
    assert record.agent_exit == "crashed" and record.agent_returncode == 3
    assert record.run_state == "agent_failure"



def _reused(record) -> list[bool]:
    lines = Path(record.paths["trajectory"]).read_text().splitlines()
    return [json.loads(line)["cost"]["reused"] for line in lines]


@pytest.mark.slow
def test_a_shared_flow_cache_serves_the_machinery_baselines_never_an_agent_under_test(
        suite: SuitePaths, tmp_path, monkeypatch) -> None:
    """Real Yosys: with $CLOSER_FLOW_CACHE set, an agent under test's second trial runs its synth
    call again (its trials are independent: each has its own cache, the shared one gets nothing);
    the same command run as a machinery baseline takes its second trial's call from the shared
    cache."""
    shared = tmp_path / "shared"
    monkeypatch.setenv("CLOSER_FLOW_CACHE", str(shared))
    task = suite.task("gcd-A-low").root
    model = resolve_agent("sh -c 'cd {workspace} && closer-tool synth'", label="model")
    trials = run_trials(task, model, 2, tmp_path / "model")
    assert [_reused(r) for r in trials] == [[False], [False]]
    assert not shared.exists() or not any(shared.rglob("entry.json"))
    assert not any((Path(r.paths["run"]) / "flowcache").exists() for r in trials)  # dropped after evaluation
    baseline = dataclasses.replace(model, label="as-baseline", machinery_baseline=True)
    trials = run_trials(task, baseline, 2, tmp_path / "baseline")
    assert [_reused(r) for r in trials] == [[False], [True]]
    assert any(shared.rglob("entry.json"))
