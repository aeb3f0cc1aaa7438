"""The standalone workspace's daemon (closer.metered.daemon): later plain tool calls are served by it,
charged and recorded as the in-process call would be; no daemon when it is turned off; a socket
nobody serves falls back to the call in-process; the daemon leaves when idle."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from closer.metered import client, daemon
from closer.metered.paths import WorkspacePaths
from tests.metered_helpers import break_counter, make_workspace, tool_config

ROOT = Path(__file__).resolve().parents[1]
# The launcher's path in a child: a plain tool call through quickstatus, then which way it went
# (the thin client imports none of the metering: closer.metered.front appears only in-process).
DRIVER = """
import json, sys
sys.path.insert(0, sys.argv[1])
from closer.metered import daemon
from closer.metered.quickstatus import standalone_tool_call
if sys.argv[2] == "stale":  # a socket file nobody listens on, where the daemon's would be
    import socket
    s = socket.socket(socket.AF_UNIX); s.bind(daemon.socket_path(".closer")); s.close()
code = standalone_tool_call(sys.argv[3:])
print(json.dumps({"code": code, "in_process": "closer.metered.front" in sys.modules}), file=sys.stderr)
"""


def _env(enabled: bool, idle_s: float = 30) -> dict[str, str]:
    return {**os.environ, daemon.ENABLE_ENV: "1" if enabled else "0", daemon.IDLE_ENV: str(idle_s)}


def _call(ws: WorkspacePaths, env: dict[str, str], *argv: str, stale: bool = False) -> dict:
    done = subprocess.run([sys.executable, "-c", DRIVER, str(ROOT), "stale" if stale else "-", *argv],
                          cwd=ws.root, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stderr.strip().splitlines()[-1]) | {"stdout": done.stdout}


def _sockets(ws: WorkspacePaths) -> list[Path]:
    return sorted(ws.control.glob("broker-*.sock"))


def _daemon_pid(ws: WorkspacePaths) -> int | None:
    pids = daemon.running_pids(str(ws.control))
    return pids[0] if pids else None


def _wait(predicate, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _records(ws: WorkspacePaths) -> list[dict]:
    return [json.loads(line) for line in ws.trajectory.read_text().splitlines()]


@pytest.fixture(params=["short", "deep"])
def ws(request, tmp_path: Path):
    """A workspace whose daemon socket path fits a Unix socket's 108 bytes, and one whose does not."""
    if request.param == "short":
        base = Path(tempfile.mkdtemp(dir="/tmp"))
        request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    else:
        base = tmp_path / ("deep-" * 12)
    workspace = make_workspace(base / "ws", tool_config(None, budget={"sim": 4, "wall_s": 3600.0}))
    assert (len(str(workspace.control)) + 30 > daemon.MAX_SOCKET_PATH) == (request.param == "deep")
    yield workspace
    for pid in _daemons_of(workspace):  # nothing of the test outlives it
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


def _daemons_of(ws: WorkspacePaths) -> list[int]:
    """The daemons serving `ws` (a spawned one exists once its starter returned: Popen waits for exec)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"from closer.metered.daemon import main" in b" ".join(argv) and str(ws.root).encode() in argv:
            found.append(int(entry.name))
    return found


def test_later_calls_are_served_by_the_daemon_and_charged_alike(ws: WorkspacePaths) -> None:
    env = _env(True)
    first = _call(ws, env, "sim")
    assert first == first | {"code": 0, "in_process": True}
    assert _wait(lambda: _daemon_pid(ws) is not None and _sockets(ws)), "the first call started no daemon"
    assert oct(_sockets(ws)[0].stat().st_mode & 0o777) == oct(0o600)  # only the workspace's owner
    served = [_call(ws, env, "sim") for _ in range(2)]
    assert [(c["code"], c["in_process"]) for c in served] == [(0, False), (0, False)]
    assert "reward estimate: 1.0" in served[0]["stdout"]
    break_counter(ws)
    failing = _call(ws, env, "sim")
    assert (failing["code"], failing["in_process"]) == (0, False)
    refused = _call(ws, env, "sim")  # the fifth sim of a cap of 4: refused by the daemon as in-process
    assert (refused["code"], refused["in_process"]) == (10, False)
    records = _records(ws)
    assert [r["seq"] for r in records] == [1, 2, 3, 4, 5]
    assert [r["outcome"] for r in records] == ["ok"] * 4 + ["refused_budget"]
    assert records[3]["changes"]["modified"] == ["rtl/counter.v"] and records[3]["reward"] < 1.0


def test_no_daemon_when_turned_off(ws: WorkspacePaths) -> None:
    env = _env(False)
    calls = [_call(ws, env, "sim") for _ in range(2)]
    assert [(c["code"], c["in_process"]) for c in calls] == [(0, True), (0, True)]
    assert _daemons_of(ws) == [] and _sockets(ws) == [] and _daemon_pid(ws) is None


def test_a_socket_nobody_serves_falls_back_to_the_call_in_process(ws: WorkspacePaths) -> None:
    env = _env(True)
    call = _call(ws, env, "sim", stale=True)
    assert (call["code"], call["in_process"]) == (0, True)
    assert [r["seq"] for r in _records(ws)] == [1]


def test_the_daemon_leaves_when_idle(ws: WorkspacePaths) -> None:
    _call(ws, _env(True, idle_s=1), "sim")
    assert _wait(lambda: _daemon_pid(ws) is not None), "no daemon started"
    pid = _daemon_pid(ws)
    assert _wait(lambda: not Path(f"/proc/{pid}").exists() or _proc_state(pid) == "Z", timeout_s=20)
    assert _sockets(ws) == [] and _daemon_pid(ws) is None


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_the_key_follows_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("PDK_ROOT", "/a")
    key = daemon.daemon_key()
    monkeypatch.setenv("PWD", "/somewhere/else")  # the shell's bookkeeping: the same daemon
    assert daemon.daemon_key() == key
    monkeypatch.setenv("PDK_ROOT", "/b")
    assert daemon.daemon_key() != key
    monkeypatch.setenv(daemon.ENABLE_ENV, "0")
    assert daemon.socket_path("/tmp") is None
    monkeypatch.setenv(daemon.ENABLE_ENV, "1")
    assert daemon.socket_path("/tmp") == f"/tmp/broker-{daemon.daemon_key()}.sock"


def test_an_unacknowledged_request_is_the_callers_and_an_acknowledged_one_is_not() -> None:
    lines = [b'{"type": "progress", "elapsed_s": 1}']
    assert client._read_answer(iter(lines), fallback=True) is None
    answer = client._read_answer(iter([b'{"type": "accepted"}', *lines]), fallback=True)
    assert answer is not None and answer["exit_code"] == client.EXIT_INFRA  # never run twice
    assert client._read_answer(iter(lines))["exit_code"] == client.EXIT_INFRA  # the sandbox's client


def test_a_second_daemon_for_the_same_key_leaves_at_once(ws: WorkspacePaths, tmp_path: Path) -> None:
    sock = str(ws.control / "broker-test.sock")
    env = _env(True, idle_s=30)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from closer.metered.daemon import main; "
            "sys.exit(main(sys.argv[2:]))")
    first = subprocess.Popen([sys.executable, "-c", code, str(ROOT), str(ws.root), sock], env=env)
    try:
        assert _wait(lambda: Path(sock).exists())
        second = subprocess.run([sys.executable, "-c", code, str(ROOT), str(ws.root), sock], env=env, timeout=60)
        assert second.returncode == 1
        folder = os.open(ws.control, os.O_RDONLY)
        probe = socket.socket(socket.AF_UNIX)
        try:
            probe.connect(f"/proc/self/fd/{folder}/broker-test.sock")  # the first still serves
        finally:
            probe.close()
            os.close(folder)
    finally:
        first.kill()
        first.wait()
