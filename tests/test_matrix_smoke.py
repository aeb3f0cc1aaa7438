"""The matrix's done-when (issue 23, docs/matrix.md): the shipped smoke spec on a 2-worker
LocalCluster, SIGTERMed once its first trials are stored, leaves no process behind; the re-run
completes only the missing trials (earlier store lines and records kept byte for byte) and the
report has the three RQ tables with the A+B compositions.

Its trials inherit $CLOSER_FLOW_CACHE (tests.conftest sets one for the session), which serves the
machinery baselines' repeated flows; its suite has the same content as the suites other tests
generate for gcd (generation is deterministic on one machine), so in one session with them their
gcd-B/C flows have the same keys."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from closer.matrix.store import ResultStore

TRIALS = 3 * 3 * 2  # kinds x agents x trials
COMPOSITIONS = 3 * 2  # one per A trial


def _matrix(spec: Path, out: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "closer", "matrix", "run", str(spec), "--out", str(out)],
                            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def _processes_of(out: Path) -> list[str]:
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if any(str(out) in part for part in proc.info["cmdline"] or []):
            found.append(f"{proc.info['pid']}: {' '.join(proc.info['cmdline'])[:120]}")
    return found


def _wait_for_entries(store: ResultStore, proc: subprocess.Popen, count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if len(store.entries()) >= count:
            return
        time.sleep(2)
    pytest.fail(f"{count} store entries did not appear (exit {proc.poll()})")


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_smoke_matrix_killed_and_resumed_runs_only_the_missing_trials(repo, tmp_path: Path):
    spec, out = repo.root / "examples" / "matrix" / "gcd-smoke.toml", tmp_path / "matrix"
    store = ResultStore(out / "store.jsonl")
    first = _matrix(spec, out, tmp_path / "first.log")
    _wait_for_entries(store, first, 2, timeout_s=1800)
    os.killpg(first.pid, signal.SIGTERM)
    first.wait(timeout=120)
    time.sleep(5)
    assert _processes_of(out) == [], "a process of the killed matrix outlived it"
    before = store.path.read_bytes()
    kept = {e.key: Path(e.record).read_bytes() for e in store.entries() if e.record}
    assert 2 <= len(store.entries()) < TRIALS + COMPOSITIONS

    second = subprocess.run([sys.executable, "-m", "closer", "matrix", "run", str(spec), "--out", str(out)],
                            capture_output=True, text=True, timeout=3600)
    assert second.returncode == 0, second.stderr[-2000:]
    assert store.path.read_bytes().startswith(before)  # append-only
    entries = store.entries()
    keys = [e.key for e in entries]
    assert len(keys) == len(set(keys)) == TRIALS + COMPOSITIONS  # every trial once: none ran twice
    assert all(Path(e.key).name.startswith("trial-") for e in entries)
    assert {key: Path(r).read_bytes() for key, r in ((e.key, e.record) for e in entries if e.key in kept)} == kept
    ran_again = [line.split(": ")[0] for line in second.stderr.splitlines() if ", reward " in line]
    assert not set(ran_again) & set(kept)  # the second run ran only the missing trials
    assert all(e.suite_version.startswith("0.1.0+") and e.tool_versions for e in entries if e.record)

    report = out / "report"
    # the agent labels as written: pandas would read the null baseline's label as a missing value
    rq1, rq3 = (pd.read_csv(report / name, keep_default_na=False, na_values=[""]) for name in ("rq1.csv", "rq3.csv"))
    assert set(rq1["agent"]) == {"oracle", "null", "sweep"} and (rq1["AB_trials"] == 2).all()
    oracle = rq1.set_index("agent").loc["oracle"]
    assert oracle["AB_reward"] == pytest.approx(1.0) and oracle["C_reward"] == pytest.approx(1.0)
    assert rq1.set_index("agent").loc["null", "AB_reward"] == 0.0  # null's A fails its gates: reward 0
    # A vs C at C's verified-RTL checkpoint: the oracle's C has the golden RTL, null's never gets there
    assert oracle["C_checkpoint_A_reward"] == pytest.approx(1.0)
    assert rq1.set_index("agent").loc["null", "C_checkpoint_A_reward"] == 0.0
    c_entries = [e for e in entries if e.kind == "C" and e.run_state == "success"]
    assert c_entries and all(e.checkpoint_searched for e in c_entries)
    assert set(rq3["kind"]) == {"A", "B", "C", "AB"}
    assert (report / "rq2.csv").is_file() and "## RQ2" in (report / "report.md").read_text()
    # B versus C after the first feasible layout: each point scored on the trial's own task
    by_key = {e.key: e for e in entries}
    c_oracle = by_key["gcd-C-low/oracle/trial-1"]
    assert c_oracle.layout_searched and c_oracle.first_feasible.reward == pytest.approx(1.0)
    b_null, b_oracle = by_key["gcd-B-low/null/trial-1"], by_key["gcd-B-low/oracle/trial-1"]
    assert b_null.start.reward == pytest.approx(b_null.reward) and b_null.start.reward < 1.0  # weak but correct
    assert b_oracle.start.reward == pytest.approx(b_null.reward) and b_oracle.reward == pytest.approx(1.0)
    assert rq1.set_index("agent").loc["oracle", "B_gain_after_start"] == pytest.approx(1.0 - b_null.reward)
    assert "B versus C after C's first feasible layout" in (report / "report.md").read_text()
    composed = [e for e in entries if e.kind == "AB" and e.record]
    assert composed and all(json.loads(Path(e.record).read_text())["start"]["rtl"] for e in composed)
    # the oracle's two B trials are one run twice: (at least) the later one's verify call and hidden
    # scoring are flow-cache hits, recorded as such (cost.reused; the key it was reused from)
    oracle_b = [json.loads(Path(e.record).read_text()) for e in entries if e.key.startswith("gcd-B-low/oracle/")]
    assert len(oracle_b) == 2 and any(_calls_reused(r) and all(_calls_reused(r)) for r in oracle_b)
    assert any(_evaluation(r)["provenance"]["flow_reused"]["hidden"] for r in oracle_b)


def _calls_reused(record: dict) -> list[bool]:
    lines = Path(record["paths"]["trajectory"]).read_text().splitlines()
    return [json.loads(line)["cost"]["reused"] for line in lines]


def _evaluation(record: dict) -> dict:
    return json.loads(Path(record["paths"]["evaluation"]).read_text())
