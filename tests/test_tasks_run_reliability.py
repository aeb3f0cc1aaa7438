"""`closer task run` never loses or overwrites a record, and leaves no process behind: two runs
into one --out (in parallel) give one record and one clear refusal; SIGKILL of a run mid-way
leaves no process of it, a progress marker saying where it stopped, a rerun refuses instead
of deleting it, and `--resume` finishes it (marked infrastructure_failure)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from closer.tasks.generate import generate_suite
from closer.tasks.models import TaskKind
from closer.tasks.paths import SuitePaths

from tests.process_support import alive, kill_quietly, name_of

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def task(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("suite")
    generate_suite("gcd", out, kinds=[TaskKind.A], budgets=["low"])
    return SuitePaths(out).task("gcd-A-low").root


def _closer(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "closer", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_parallel_runs_into_one_out_never_lose_a_record(task: Path, tmp_path: Path):
    runs = tmp_path / "runs"
    agent = ["--agent", "sh -c 'test -d {workspace} && sleep 2'", "--label", "idle"]  # a command agent: stops on its own, edits nothing
    procs = [_closer("task", "run", str(task), *agent, "--out", str(runs)) for _ in range(2)]
    results = [(p.wait(timeout=900), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, _, err in results if code == 2)
    assert "never overwritten" in refused and "Traceback" not in refused and len(refused.strip().splitlines()) == 1
    records = list(runs.rglob("record.json"))
    assert len(records) == 1 and json.loads(records[0].read_text())["run_state"] == "success"
    assert json.loads((records[0].parent / "progress.json").read_text())["phase"] == "recorded"


def _tree(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _progress(runs: Path) -> str:
    found = list(runs.rglob("progress.json"))
    return found[0].read_text() if found else ""


@pytest.mark.slow
def test_sigkill_of_task_run_leaves_no_process_and_a_marker(task: Path, tmp_path: Path):
    runs = tmp_path / "runs"
    agent = "sh -c 'cd {workspace} && while true; do closer-tool sim; done'"  # metered calls running when the kill lands
    run = _closer("task", "run", str(task), "--agent", agent, "--label", "looper", "--out", str(runs))
    deadline = time.monotonic() + 300
    seen: dict[int, psutil.Process] = {}
    while time.monotonic() < deadline:
        for p in _tree(run.pid):
            seen.setdefault(p.pid, p)
        names = {name_of(p) for p in _tree(run.pid)}
        if ("vvp" in names or "iverilog" in names) and '"agent_running"' in _progress(runs):
            break
        assert run.poll() is None, run.communicate()
        time.sleep(0.1)
    else:
        pytest.fail("no simulation started within 300 s")
    for p in _tree(run.pid):
        seen.setdefault(p.pid, p)
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    end = time.monotonic() + 15
    running = list(seen.values())
    while running and time.monotonic() < end:
        running = [p for p in running if alive(p)]
        time.sleep(0.1)
    left = [f"{p.pid} {name_of(p)}" for p in running]
    for p in running:
        kill_quietly(p)
    assert not left, f"left running after SIGKILL of closer task run: {left}"

    trial = runs / "gcd-A-low" / "looper" / "trial-1"
    progress = json.loads((trial / "progress.json").read_text())
    assert progress["phase"] == "agent_running" and not (trial / "record.json").exists()
    again = _closer("task", "run", str(task), "--agent", agent, "--label", "looper", "--out", str(runs))
    _, err = again.communicate(timeout=120)
    assert again.returncode == 2 and "agent_running" in err and "Traceback" not in err
    assert (trial / "progress.json").exists() and (trial / "run").is_dir()  # nothing deleted

    resumed = _closer("task", "run", str(task), "--agent", agent, "--label", "looper", "--out", str(runs), "--resume")
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err
    record = json.loads((trial / "record.json").read_text())
    assert record["resumed_from"] == "agent_running" and record["agent_exit"] == "interrupted"
    assert record["run_state"] == "infrastructure_failure" and "killed while the agent ran" in record["run_state_reason"]
    assert record["calls_by_tool"].get("sim", 0) >= 1  # the calls made before the kill are in it
    assert json.loads((trial / "progress.json").read_text())["phase"] == "recorded"


@pytest.mark.slow
def test_call_cut_off_by_the_wall_clock_is_in_the_record(task: Path, tmp_path: Path):
    runs = tmp_path / "runs"
    # a simulation that never ends is running when time is up (the agent puts its RTL back meanwhile,
    # so the evaluation after it is quick)
    agent = ("sh -c 'cd {workspace} && cp rtl/gcd.v keep.v && "
             "sed -i \"s/^endmodule/initial forever #0;\\nendmodule/\" rtl/gcd.v && "
             "(closer-tool sim &) && sleep 4 && cp keep.v rtl/gcd.v && sleep 600'")
    run = _closer("task", "run", str(task), "--agent", agent, "--label", "looper", "--wall-s", "45",
                  "--out", str(runs))
    _, err = run.communicate(timeout=900)
    assert run.returncode == 0, err
    trial = runs / "gcd-A-low" / "looper" / "trial-1"
    record = json.loads((trial / "record.json").read_text())
    calls = [json.loads(line) for line in (trial / "run" / "trajectory.jsonl").read_text().splitlines()]
    assert record["agent_exit"] == "timed_out" and calls
    assert [c["outcome"] for c in calls] == ["timeout"] and calls[0]["cost"]["counted"]  # cut off, counted
    assert sum(record["calls_by_tool"].values()) == len(calls) == sum(record["outcomes"].values())
    assert not (trial / "run" / "inflight.json").exists()
