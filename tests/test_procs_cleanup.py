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

from closer import procs
from closer.errors import ToolMissing, ToolTimeout
from closer.procs import Command, run
from tests.conftest import require_tool
from tests.metered_helpers import make_workspace, tool_config
from tests.process_support import alive, kill_quietly, name_of

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
    left = procs
    while time.monotonic() < deadline:
        left = [p for p in left if alive(p)]
        if not left:
            return
        time.sleep(0.05)
    names = [f"{p.pid} {name_of(p)}" for p in left]
    for p in left:
        kill_quietly(p)
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
    from closer import procs
    from closer.procs import Command, run
    if {kill_watchdog!r}:  # a watchdog that died is replaced by the next command's
        run(Command(["true"]), Path({log!r}))
        procs.WATCHDOG._proc.kill()
        procs.WATCHDOG._proc.wait()  # gone before the next command tells it (as a dead one would be)
    run(Command(["sh", "-c", "sleep 120 & sleep 120 & wait"]), Path({log!r}))
""")


@pytest.mark.parametrize("kill_watchdog", [False, True])
def test_sigkill_of_the_starter_kills_its_commands(tmp_path: Path, kill_watchdog: bool):
    runner = RUNNER.format(root=str(ROOT), log=str(tmp_path / "log"), kill_watchdog=kill_watchdog)
    parent = subprocess.Popen([sys.executable, "-c", runner])
    tools = _wait_for(lambda: [p for p in _descendants(parent.pid) if name_of(p) == "sleep"][:2] or None,
                      what="the command's processes")
    everything = _descendants(parent.pid)
    _wait_for(lambda: len([p for p in _descendants(parent.pid) if name_of(p) == "sleep"]) == 2, what="both sleeps")
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
    _wait_for(lambda: any(name_of(p) == "vvp" for p in _descendants(tool.pid)), what="vvp to start")
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
    pool = worker_pool(2, {start!r})
    for n in range(2):
        pool.submit(run, Command(["sleep", "120"]), Path({log!r} + str(n)))
    time.sleep(600)
""")


@pytest.mark.parametrize("start", ["fork", "spawn"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_worker_pool_dies_with_its_starter(tmp_path: Path, signum: int, start: str):
    parent = subprocess.Popen([sys.executable, "-c", POOL_RUNNER.format(root=str(ROOT), log=str(tmp_path / "log"),
                                                                      start=start)])
    _wait_for(lambda: len([p for p in _descendants(parent.pid) if name_of(p) == "sleep"]) == 2,
              what="both workers' commands")
    everything = _descendants(parent.pid)
    os.kill(parent.pid, signum)
    parent.wait()
    _assert_all_gone(everything)


LONE_RUNNER = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from closer import procs
    from closer.procs import Command, run
    procs.WATCHDOG.tell = lambda op, pgid: None  # no watchdog: the death signal alone
    if {unarmed!r}:  # the perturbed start: exec without setpriv's death signal
        procs._ARMED_EXEC[:] = [["sh", "-c", 'shift; exec "$@"', "unarmed"]]
    run(Command(["sleep", "120"]), Path({log!r}))
""")


@pytest.mark.parametrize("unarmed", [False, True])
def test_a_command_started_by_vfork_gets_the_death_signal(tmp_path: Path, unarmed: bool):
    runner = LONE_RUNNER.format(root=str(ROOT), log=str(tmp_path / "log"), unarmed=unarmed)
    parent = subprocess.Popen([sys.executable, "-c", runner])
    sleeps = _wait_for(lambda: [p for p in _descendants(parent.pid) if name_of(p) == "sleep"] or None,
                       what="the command")
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    if not unarmed:
        _assert_all_gone(sleeps)
        return
    time.sleep(0.5)
    assert all(p.is_running() for p in sleeps), "the perturbed start should leave its command running"
    for p in sleeps:
        p.kill()


def test_the_armed_exec_runs_nothing_for_a_parent_that_is_gone(tmp_path: Path):
    wrapper = procs._armed_exec()
    assert wrapper is not None, "setpriv (util-linux) is installed by Debian"
    mark = tmp_path / "ran"
    gone = subprocess.run([*wrapper, "1", "touch", str(mark)], timeout=30)
    assert gone.returncode == 137 and not mark.exists()
    alive = subprocess.run([*wrapper, str(os.getpid()), "touch", str(mark)], timeout=30)
    assert alive.returncode == 0 and mark.exists()


def test_one_watchdog_serves_every_command_of_a_process(tmp_path: Path):
    for n in range(3):
        run(Command(["true"]), tmp_path / f"log{n}")
    watchdogs = [p for p in psutil.Process().children() if "closer-watchdog" in " ".join(p.cmdline())]
    assert len(watchdogs) == 1


def test_a_missing_or_unexecutable_program_is_reported_as_exec_would(tmp_path: Path):
    with pytest.raises(ToolMissing, match="no-such-program: not found on PATH"):
        run(Command(["no-such-program"]), tmp_path / "log")
    script = tmp_path / "tool.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(PermissionError):
        run(Command(["./tool.sh"], cwd=tmp_path), tmp_path / "log")
    script.chmod(0o755)
    assert run(Command(["./tool.sh"], cwd=tmp_path), tmp_path / "log").ok


def test_a_setpriv_without_pdeathsig_falls_back_to_the_forked_start(tmp_path: Path, monkeypatch):
    old = tmp_path / "setpriv"
    old.write_text("#!/bin/sh\necho \"setpriv: unrecognized option '$1'\" >&2\nexit 1\n")
    old.chmod(0o755)
    real_which = procs.shutil.which
    monkeypatch.setattr(procs.shutil, "which", lambda name, *a, **k: str(old) if name == "setpriv" else real_which(name, *a, **k))
    monkeypatch.setattr(procs, "_ARMED_EXEC", [])
    assert procs._armed_exec() is None
    done = run(Command(["sh", "-c", "exit 4"]), tmp_path / "log", check=False)
    assert done.returncode == 4


FORKING_RUNNER = textwrap.dedent("""
    import multiprocessing, sys, time
    sys.path.insert(0, {root!r})
    from closer import procs
    if {armed!r}:
        procs.forked_children_die_with_parent()
    child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(120,))
    child.start()
    print(child.pid, flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("armed", [True, False])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_child_forked_by_a_library_dies_with_the_process(tmp_path: Path, armed: bool, signum: int):
    """A process that forks children itself (multiprocessing's fork workers, as SiliconCompiler
    starts its nodes) takes them with it once `forked_children_die_with_parent` is armed; the
    unarmed process leaves its child running (the perturbed case)."""
    parent = subprocess.Popen([sys.executable, "-c", FORKING_RUNNER.format(root=str(ROOT), armed=armed)],
                              stdout=subprocess.PIPE, text=True)
    child = psutil.Process(int(parent.stdout.readline()))
    os.kill(parent.pid, signum)
    parent.wait()
    if armed:
        _assert_all_gone([child])
        return
    time.sleep(0.5)
    assert child.is_running(), "an unarmed process should leave its forked child running"
    child.kill()


@pytest.mark.slow
def test_sigterm_of_closer_flow_run_leaves_no_node_process(tmp_path: Path):
    """Real flow: SIGTERM to `closer flow run` once SiliconCompiler has forked a node process ends
    that node and every tool under it."""
    out = tmp_path / "run"
    env = dict(os.environ, CLOSER_FLOW_CACHE="off")
    top = subprocess.Popen([sys.executable, "-m", "closer", "flow", "run", "gcd", "--out", str(out)],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)

    def forked_nodes() -> list[psutil.Process]:
        return [p for p in _descendants(top.pid) if str(out) in " ".join(_cmdline(p))]

    _wait_for(forked_nodes, timeout_s=120, what="a forked SiliconCompiler node")
    everything = _descendants(top.pid)
    os.kill(top.pid, signal.SIGTERM)
    top.wait()
    _assert_all_gone(everything)


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.NoSuchProcess:
        return []


def _pid_and_shared(item: int, shared) -> tuple[int, int, int]:
    return item, os.getpid(), shared["offset"](item)


def test_fork_map_runs_in_forked_workers_that_inherit_what_is_shared():
    """What the workers share is inherited by the fork, never pickled (a lambda cannot be); the
    results come back in the items' order; one job runs in this process."""
    from closer.procs import fork_map

    shared = {"offset": lambda k: k + 100}
    out = fork_map(_pid_and_shared, list(range(6)), 2, shared)
    assert [(k, v) for k, _, v in out] == [(k, k + 100) for k in range(6)]
    assert all(pid != os.getpid() for _, pid, _ in out)
    assert {pid for _, pid, _ in fork_map(_pid_and_shared, [1, 2], 1, shared)} == {os.getpid()}
