"""closer trajectory rescore on a real gcd-A-low trial: a scripted agent calls sim twice on the
skeleton (one snapshot), copies the reference RTL and calls verify (a second snapshot). The
hidden curve, the content-addressed cache, --last, the report, and bad input."""

from __future__ import annotations

import base64
import json
import shlex
from pathlib import Path

import subprocess
import sys

import jsonschema
import pandas as pd
import pytest
from click.testing import CliRunner

from closer.agents import resolve_agent
from closer.cli import cli
from closer.paths import schema_path
from closer.tasks.generate import generate_suite
from closer.tasks.paths import SuitePaths
from closer.tasks.runner import run_trials

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trial(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rescore")
    suite = SuitePaths(root / "suite")
    generate_suite("gcd", suite.root, budgets=["low"])
    solution = (suite.hidden("gcd-A-low").solution / "rtl" / "gcd.v").read_bytes()
    # the agent runs in its sandbox: it carries the solution's text, not its (hidden) path
    code = (f"import subprocess, sys; t = lambda c: subprocess.run(['closer-tool', c]); t('sim'); t('sim'); "
            f"open(sys.argv[1] + '/rtl/gcd.v', 'wb').write(base64.b64decode({base64.b64encode(solution)!r})); "
            f"t('verify')")
    agent = resolve_agent(f"python -c {shlex.quote('import base64; ' + code)} {{workspace}}", label="scripted")
    [record] = run_trials(suite.task("gcd-A-low").root, agent, 1, root / "runs")
    assert record.reward == 1.0 and record.calls_by_tool == {"sim": 2, "synth": 0, "pnr": 0, "verify": 1}
    return Path(record.paths["trial"])


def _rescore(*args: str) -> tuple[dict, str]:
    result = CliRunner().invoke(cli, ["trajectory", "rescore", *args])
    assert result.exit_code == 0, result.output
    trial = Path(args[0])
    return json.loads((trial / "rescore.json").read_text()), result.output


def test_hidden_curve_cache_and_last(trial: Path, tmp_path: Path) -> None:
    record_before = (trial / "record.json").read_bytes()
    first, output = _rescore(str(trial), "--jobs", "2")
    jsonschema.validate(first, json.loads(schema_path("trajectory-rescore").read_text()))
    # two distinct snapshots for three calls: the skeleton evaluated once, the final one is the
    # trial's own evaluation (the same surface)
    assert first["counts"] == {"distinct_snapshots": 2, "selected_snapshots": 2, "evaluated": 1,
                                    "cache_hits": 0, "reused_trial_evaluation": 1}
    assert "evaluating" in output and "hidden reward 0.0, failing func" in output
    assert [(c["seq"], c["hidden"]["reward"]) for c in first["calls"]] == [(1, 0.0), (2, 0.0), (3, 1.0)]
    assert [(p["seq"], p["best"]) for p in first["curve_hidden"]] == [(1, 0.0), (3, 1.0)]
    assert [(p["seq"], p["best"]) for p in first["curve_public"]] == [(3, 1.0)]  # the sim calls are partial
    assert first["complete"] and first["first_feasible_hidden"]["seq"] == 3
    assert first["auc_wall_hidden"] == first["auc_wall_public"] > 0.99
    assert (trial / "record.json").read_bytes() == record_before

    again, output = _rescore(str(trial))
    assert again["counts"]["evaluated"] == 0 and again["counts"]["cache_hits"] == 2
    assert "evaluating" not in output and again["curve_hidden"] == first["curve_hidden"]

    last, _ = _rescore(str(trial), "--last", "1", "--calls", "verify,pnr", "--cache", str(tmp_path / "cache"))
    assert last["counts"]["selected_snapshots"] == 1 and last["counts"]["evaluated"] == 0
    assert [c["hidden"] is not None for c in last["calls"]] == [False, False, True] and not last["complete"]


def test_report_shows_both_curves(trial: Path, tmp_path: Path) -> None:
    _rescore(str(trial))
    runs = trial.parent.parent.parent
    result = CliRunner().invoke(cli, ["report", str(runs), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "AUC wall public / hidden" in page and "rescore.json" in page and "trajectory.jsonl" in page
    row = pd.read_csv(tmp_path / "rep" / "results.csv").iloc[0]
    assert row.auc_wall_hidden > 0.99 and row.best_hidden_reward == 1.0 and bool(row.feasible)
    assert (tmp_path / "rep" / "curves" / "gcd-A-low.png").stat().st_size > 10_000


def test_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "closer", "trajectory", "rescore", *args],
                              capture_output=True, text=True)

    empty = run(str(tmp_path))
    assert empty.returncode == 2 and "no record.json" in empty.stderr and "Traceback" not in empty.stderr
    bad = tmp_path / "t" / "record.json"
    bad.parent.mkdir()
    bad.write_text('{"task_id": "x"}')
    broken = run(str(bad.parent))
    assert broken.returncode == 2 and str(bad) in broken.stderr and "Traceback" not in broken.stderr
    assert len(broken.stderr.strip().splitlines()) == 1
