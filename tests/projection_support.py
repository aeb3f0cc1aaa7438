"""Shared steps of the public-projection tests (tests/test_tasks_projection_*.py): run a baseline
through `closer task run`, read its calls, run a workspace's public tool as tools.toml writes it.
The tests are split by task kind so the CI's test workers run them side by side."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from closer.tasks.generate import generate_suite
from closer.tasks.paths import SuitePaths


def low_suite(tmp_path_factory, design: str = "gcd") -> SuitePaths:
    """The low-tier suite (A, B, C) of `design` in a new temporary folder."""
    out = tmp_path_factory.mktemp("suite")
    generate_suite(design, out, budgets=["low"])
    return SuitePaths(out)


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> SuitePaths:
    """The gcd low-tier suite (A, B, C), once per test file."""
    return low_suite(tmp_path_factory)


def run_baseline(suite: SuitePaths, tid: str, agent: str, out: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "closer", "task", "run", str(suite.task(tid).root),
                           "--agent", agent, "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((out / tid / agent / "trial-1" / "record.json").read_text())


def rescore_has_hidden_curve(record: dict) -> dict:
    """`closer trajectory rescore` on the trial writes a hidden curve beside the public one."""
    trial = Path(record["paths"]["trial"])
    done = subprocess.run([sys.executable, "-m", "closer", "trajectory", "rescore", str(trial), "--calls", "pnr,verify"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    rescore = json.loads((trial / "rescore.json").read_text())
    assert rescore["curve_hidden"] and rescore["curve_hidden"][-1]["best"] == record["reward"]
    return rescore


def calls(record: dict) -> list[dict]:
    path = Path(record["paths"]["trajectory"])
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def public_tool(workspace: Path, tool: str, results: Path) -> tuple[dict, str]:
    """What `closer-tool TOOL` runs there, as the workspace's tools.toml writes it."""
    from closer.metered.config import expand_argv, placeholder_values
    from closer.pdk import default_pdk_root

    argv = tomllib.loads((workspace / ".closer" / "tools.toml").read_text())["tools"][tool]["commands"][0]
    values = placeholder_values(workspace, results, results / "metrics.json", default_pdk_root())
    results.mkdir(parents=True)
    done = subprocess.run(expand_argv(argv, values, []), cwd=workspace, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((results / "metrics.json").read_text()), done.stdout


def last_verify(record: dict) -> float | None:
    verifies = [c for c in calls(record) if c["tool"] == "verify"]
    assert verifies, "no verify call"
    return verifies[-1]["reward"]


def check_projection(record: dict, tmp_path: Path) -> None:
    evaluation = json.loads(Path(record["paths"]["evaluation"]).read_text())
    if any(c["tool"] == "verify" for c in calls(record)):
        assert last_verify(record) == evaluation["public_reward"]
    else:  # null made no call and changed nothing: verify the task's starting workspace now
        metrics, _ = public_tool(Path(record["paths"]["task"]) / "workspace", "verify", tmp_path / "verify")
        assert metrics["closer__estimate__reward"] == evaluation["public_reward"]


