"""No process outlives its starter: a command's process group is killed on timeout and when the
process that ran it dies by SIGKILL (a bare `closer.procs.run`, and `closer-tool sim` with a
simulation that never ends)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from closer.errors import ToolTimeout
from closer.procs import Command, run
from tests.conftest import require_tool
from tests.metered_helpers import make_workspace, tool_config

ROOT = Path(__file__).resolve().parents[1]


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _wait_for(predicate, timeout_s: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def _assert_all_gone(procs: list[psutil.Process], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    alive = procs
    while time.monotonic() < deadline:
        alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive:
            return
        time.sleep(0.05)
    names = [f"{p.pid} {p.name()}" for p in alive]
    for p in alive:
        p.kill()
    pytest.fail(f"processes left behind: {names}")


@pytest.fixture(params=["pidfd", "thread"])
def wait_path(request, monkeypatch):
    """Both ways `run` waits for a child: on a pidfd, and in a thread where the kernel has none."""
    if request.param == "thread":
        def no_pidfd(pid: int) -> int:
            raise OSError(38, "pidfd_open not implemented")

        monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    return request.param


def test_exit_status_and_rusage_either_way(tmp_path: Path, wait_path: str):
    done = run(Command(["sh", "-c", "sleep 0.2; exit 3"]), tmp_path / "log", check=False)
    assert done.returncode == 3
    assert 0.2 <= done.wall_s < 5
    assert done.peak_rss_mb > 0
    assert done.cpu_s < 0.2  # sleeping costs no CPU


def test_cpu_time_is_the_child_s_own(tmp_path: Path, wait_path: str):
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass"
    done = run(Command([sys.executable, "-c", spin]), tmp_path / "log")
    assert 0.4 <= done.cpu_s <= done.wall_s + 0.05


def test_timeout_kills_the_whole_group(tmp_path: Path, wait_path: str):
    start = time.monotonic()
    with pytest.raises(ToolTimeout):
        run(Command(["sh", "-c", "sleep 60 & sleep 60 & wait"], timeout_s=0.5), tmp_path / "log")
    assert time.monotonic() - start < 10
    left = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "60"]
            and p.ppid() in (1, os.getpid())]
    _assert_all_gone(left)


RUNNER = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from closer.procs import Command, run
    run(Command(["sh", "-c", "sleep 120 & sleep 120 & wait"]), Path({log!r}))
""")


def test_sigkill_of_the_starter_kills_its_commands(tmp_path: Path):
    parent = subprocess.Popen([sys.executable, "-c", RUNNER.format(root=str(ROOT), log=str(tmp_path / "log"))])
    tools = _wait_for(lambda: [p for p in _descendants(parent.pid) if p.name() == "sleep"][:2] or None,
                      what="the command's processes")
    everything = _descendants(parent.pid)
    _wait_for(lambda: len([p for p in _descendants(parent.pid) if p.name() == "sleep"]) == 2, what="both sleeps")
    everything = _descendants(parent.pid)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    assert tools
    _assert_all_gone(everything)


def test_sigkill_of_closer_tool_sim_leaves_no_process(tmp_path: Path):
    require_tool("iverilog")
    ws = make_workspace(tmp_path / "ws", tool_config(None, sim_timeout_s=600))
    tb = ws.root / "tb" / "counter_tb.v"
    tb.write_text(tb.read_text().replace("$finish;", "forever #10;"))  # a simulation that never ends
    tool = subprocess.Popen([sys.executable, "-m", "closer.metered", "sim"], cwd=ws.root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(lambda: any(p.name() == "vvp" for p in _descendants(tool.pid)), what="vvp to start")
    everything = _descendants(tool.pid)
    os.kill(tool.pid, signal.SIGKILL)
    tool.wait()
    _assert_all_gone(everything)
    # the killed call is charged and recorded by the next one, not lost
    status = subprocess.run([sys.executable, "-m", "closer.metered", "status", "--json"], cwd=ws.root,
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    assert '"interrupted_call": 1' in status.stdout


POOL_RUNNER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from closer.procs import Command, run, worker_pool
    pool = worker_pool(2)
    for n in range(2):
        pool.submit(run, Command(["sleep", "120"]), Path({log!r} + str(n)))
    time.sleep(600)
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_worker_pool_dies_with_its_starter(tmp_path: Path, signum: int):
    parent = subprocess.Popen([sys.executable, "-c", POOL_RUNNER.format(root=str(ROOT), log=str(tmp_path / "log"))])
    _wait_for(lambda: len([p for p in _descendants(parent.pid) if p.name() == "sleep"]) == 2,
              what="both workers' commands")
    everything = _descendants(parent.pid)
    os.kill(parent.pid, signum)
    parent.wait()
    _assert_all_gone(everything)
