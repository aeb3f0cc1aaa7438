"""verify is the public projection of the pristine evaluator: on gcd A, B and C the last
`closer-tool verify` estimate of a run equals its evaluation's public_reward, for the oracle, null
and sweep baselines; `closer-tool pnr` in a B workspace shows its gates. Through the public
commands (`closer task generate/run`, `closer evaluate`, the tool the workspace's tools.toml runs).

Measured on 2 shared cores (see docs/tasks.md): gcd A runs ~1-2 min each, B/C oracle ~3 min, the
weak gcd-B start (null) ~4.5 min per physical flow (its repair step), so the B null and sweep
tests are the long ones."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from closer.tasks.generate import generate_suite
from closer.tasks.paths import SuitePaths

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> SuitePaths:
    out = tmp_path_factory.mktemp("suite")
    generate_suite("gcd", out, budgets=["low"])
    return SuitePaths(out)


def _run(suite: SuitePaths, tid: str, agent: str, out: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "closer", "task", "run", str(suite.task(tid).root),
                           "--agent", agent, "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((out / tid / agent / "trial-1" / "record.json").read_text())


def _calls(record: dict) -> list[dict]:
    path = Path(record["paths"]["trajectory"])
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def _public_tool(workspace: Path, tool: str, results: Path) -> tuple[dict, str]:
    """What `closer-tool TOOL` runs there, as the workspace's tools.toml writes it."""
    argv = tomllib.loads((workspace / ".closer" / "tools.toml").read_text())["tools"][tool]["commands"][0]
    values = {"{python}": sys.executable, "{workspace}": str(workspace), "{results}": str(results),
              "{metrics}": str(results / "metrics.json")}
    results.mkdir(parents=True)
    done = subprocess.run([values.get(a, a) for a in argv], cwd=workspace, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((results / "metrics.json").read_text()), done.stdout


def _last_verify(record: dict) -> float | None:
    verifies = [c for c in _calls(record) if c["tool"] == "verify"]
    assert verifies, "no verify call"
    return verifies[-1]["reward"]


def _check_projection(record: dict, tmp_path: Path) -> None:
    evaluation = json.loads(Path(record["paths"]["evaluation"]).read_text())
    if any(c["tool"] == "verify" for c in _calls(record)):
        assert _last_verify(record) == evaluation["public_reward"]
    else:  # null made no call and changed nothing: verify the task's starting workspace now
        metrics, _ = _public_tool(Path(record["paths"]["task"]) / "workspace", "verify", tmp_path / "verify")
        assert metrics["closer__estimate__reward"] == evaluation["public_reward"]


@pytest.mark.parametrize("agent", ["oracle", "null", "sweep"])
def test_verify_equals_public_reward_on_a(suite: SuitePaths, tmp_path: Path, agent: str) -> None:
    record = _run(suite, "gcd-A-low", agent, tmp_path / "runs")
    _check_projection(record, tmp_path)
    assert record["reward"] == (1.0 if agent == "oracle" else record["reward"])


@pytest.mark.parametrize("agent", ["oracle", "null", "sweep"])
def test_verify_equals_public_reward_on_c(suite: SuitePaths, tmp_path: Path, agent: str) -> None:
    record = _run(suite, "gcd-C-low", agent, tmp_path / "runs")
    _check_projection(record, tmp_path)
    if agent == "oracle":
        assert record["reward"] == 1.0 and record["public_reward"] == 1.0
    if agent == "sweep":  # the skeleton fails the public tests: the closure loop stops after one pnr call
        assert record["calls_by_tool"].get("pnr") == 1 and record["reward"] == 0.0


def test_oracle_on_b_verify_equals_public_reward(suite: SuitePaths, tmp_path: Path) -> None:
    record = _run(suite, "gcd-B-low", "oracle", tmp_path / "runs")
    _check_projection(record, tmp_path)
    assert record["reward"] == 1.0
    assert all(not v.startswith("unknown") for k, v in record["tool_versions"].items() if k.startswith("metered__"))
    evaluation = json.loads(Path(record["paths"]["evaluation"]).read_text())
    # the hidden scoring timed the hidden corners too; the public one did not
    hidden = json.loads((Path(record["paths"]["evaluation"]).parent / "hidden" / "metrics.json").read_text())
    public = json.loads((Path(record["paths"]["evaluation"]).parent / "public" / "metrics.json").read_text())
    assert "finish__timing__hold__ws__corner__tt_100C_1v80" in hidden
    assert "finish__timing__hold__ws__corner__tt_100C_1v80" not in public
    assert hidden["closer__place__hpwl"] != public["closer__place__hpwl"]  # another placer seed
    assert evaluation["gates"]["sta"] == "pass"


def test_null_b_pnr_shows_its_failing_gates(suite: SuitePaths, tmp_path: Path) -> None:
    """The weak start with synthesis buffering and sizing off (flow/settings.toml), which leaves
    it where the generated settings left it before the flow had them: max-slew/max-cap at ss.
    (At the generated settings the weak start now signs off: test_sweep_on_b_closes_with_pnr_calls
    reaches a feasible result on its first pnr call.)"""
    import shutil

    ws = tmp_path / "ws"
    shutil.copytree(suite.task("gcd-B-low").workspace, ws, symlinks=True)
    settings = ws / "flow" / "settings.toml"
    settings.write_text(settings.read_text().replace("synth_buffering = true", "synth_buffering = false")
                        .replace("synth_sizing = true", "synth_sizing = false"))
    metrics, out = _public_tool(ws, "pnr", tmp_path / "pnr")
    assert not metrics["closer__estimate__feasible"] and metrics["closer__estimate__reward"] == 0.0
    assert "gates: func pass, lec pass, gls pass" in out and "reward estimate (public conditions): 0" in out
    failing = [g for g in ("sta", "route", "drc", "lvs") if f"{g} fail" in out]
    assert failing and all(f"gate {g}: fail:" in out for g in failing)
    for line in ("unrouted nets:", "DRC errors:", "LVS:", "corner ss_100C_1v60: setup WS", "area:"):
        assert line in out
    assert "stage pnr started" in out and "physical Route done" in out  # progress
    png = tmp_path / "pnr" / "pnr" / "gcd.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "pnr" / "pnr" / "gcd.def").is_file() and (tmp_path / "pnr" / "pnr" / "gcd.gds").is_file()
    assert "2400" not in out and "40000" not in out  # no target value reaches the agent


def test_sweep_on_b_closes_with_pnr_calls(suite: SuitePaths, tmp_path: Path) -> None:
    record = _run(suite, "gcd-B-low", "sweep", tmp_path / "runs")
    _check_projection(record, tmp_path)
    assert record["calls_by_tool"].get("pnr", 0) >= 1
    # the weak start's max-slew/max-cap at ss (one nor4_1 on 8 pins) is fixed by the synthesis
    # buffering and sizing the generated flow/settings.toml turns on (issue 17)
    assert record["reward"] > 0, record["failing_gates"]
