"""Attacks of a dishonest agent on `closer task run` (issue #16), each next to its honest
equivalent: the agent runs in its sandbox and reaches the metering only through the broker.

Agents here are command lines (`python -c CODE {workspace}`) so each attack is exactly what a
real agent could run. gcd-A's null scores 0 and its oracle 1.
"""

from __future__ import annotations

import base64
import json
import shlex
import socket
import threading
from pathlib import Path

import psutil
import pytest
import tomli_w
import tomllib

from closer.agents import resolve_agent
from closer.tasks.generate import generate_suite
from closer.tasks.models import SuiteManifest, TaskKind
from closer.tasks.paths import SuitePaths, tree_checksum
from closer.tasks.runner import run_trials

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> SuitePaths:
    out = tmp_path_factory.mktemp("suite")
    generate_suite("gcd", out, kinds=[TaskKind.A], budgets=["low"])
    suite = SuitePaths(out)
    # the harness's configuration (not the agent's): a sim cap of 2 for the race below
    tools = suite.task("gcd-A-low").workspace / ".closer" / "tools.toml"
    config = tomllib.loads(tools.read_text())
    config["budget"]["sim"] = 2
    tools.write_text(tomli_w.dumps(config))
    manifest = SuiteManifest.model_validate_json(suite.manifest.read_text())
    for entry in manifest.tasks:
        entry.checksum = tree_checksum(suite.task(entry.task_id).root)
    suite.manifest.write_text(manifest.model_dump_json(indent=2) + "\n")
    return suite


def python_agent(code: str, label: str, network: list[str] | None = None):
    """An agent whose whole program is `code` (argv[1] is the workspace)."""
    packed = base64.b64encode(code.encode()).decode()
    program = f"import base64; exec(base64.b64decode({packed!r}))"
    return resolve_agent(f"python -c {shlex.quote(program)} {{workspace}}", label=label, network=network)


def trajectory(record) -> list[dict]:
    path = Path(record.paths["trajectory"])
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def report(record, name: str) -> str:
    return (Path(record.paths["workspace"]) / name).read_text()


def test_the_hidden_part_is_out_of_reach(suite: SuitePaths, tmp_path: Path) -> None:
    """Attack: find the hidden folder (via /proc of the parent, or its known path) and copy the
    reference solution; overwrite the hidden oracle. Inside the sandbox neither path exists and
    /proc shows only the sandbox's own processes."""
    hidden = suite.hidden("gcd-A-low")
    code = f"""
import os, shutil, sys
ws = sys.argv[1]
seen = []
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try: seen.append(open(f'/proc/{{pid}}/cmdline','rb').read().replace(b'\\0', b' ').decode())
        except OSError: pass
out = ['procs:' + repr(len(seen)), 'hidden-visible:' + str(any({str(hidden.root)!r} in c for c in seen))]
try:
    shutil.copyfile({str(hidden.solution / 'rtl' / 'gcd.v')!r}, ws + '/rtl/gcd.v'); out.append('copied')
except OSError as exc: out.append('copy-failed:' + type(exc).__name__)
try:
    open({str(hidden.oracle / 'test_gcd.py')!r}, 'w').write('# nothing to check'); out.append('overwrote')
except OSError as exc: out.append('overwrite-failed:' + type(exc).__name__)
open(ws + '/attack.txt', 'w').write(chr(10).join(out))
"""
    [record] = run_trials(suite.task("gcd-A-low").root, python_agent(code, "hidden-thief"), 1, tmp_path / "runs")
    lines = report(record, "attack.txt").splitlines()
    assert "hidden-visible:False" in lines
    assert "copy-failed:FileNotFoundError" in lines and "overwrite-failed:FileNotFoundError" in lines
    assert int(lines[0].split(":")[1]) <= 4  # bwrap's init, the agent, maybe its children
    assert record.reward == 0.0  # the skeleton: the honest equivalent of copying nothing
    assert "nothing to check" not in (hidden.oracle / "test_gcd.py").read_text()


def test_tools_repository_and_run_directory_are_out_of_reach(suite: SuitePaths, tmp_path: Path) -> None:
    """Attack: run the EDA tools unmetered, import the EDA libraries, write the venv or the
    evaluator's source, reach the ledger or the run header."""
    import closer

    package = Path(closer.__file__).parent
    code = f"""
import os, subprocess, sys
ws = sys.argv[1]
out = []
for argv in (['iverilog', '-V'], ['vvp', '-V'], ['yosys', '-V'], ['sta', '-version'], ['qrouter', '-v'],
             ['klayout', '-v'], ['verilator', '--version']):
    try:
        subprocess.run(argv, capture_output=True, timeout=20); out.append(argv[0] + ':ran')
    except OSError as exc: out.append(argv[0] + ':' + type(exc).__name__)
for module in ('pyosys.libyosys', 'klayout.db', 'cocotb.runner', 'siliconcompiler.tools'):
    try:
        __import__(module); out.append(module + ':imported')
    except ImportError: out.append(module + ':ImportError')
for target in ({str(package / 'tasks' / 'evaluate.py')!r}, sys.prefix + '/pwned'):
    try:
        open(target, 'a').write('# pwned'); out.append('wrote:' + target)
    except OSError as exc: out.append('write-failed:' + type(exc).__name__)
out.append('control-in-workspace:' + str(os.path.exists(ws + '/.closer')))
open(ws + '/attack.txt', 'w').write(chr(10).join(out))
"""
    [record] = run_trials(suite.task("gcd-A-low").root, python_agent(code, "tool-thief"), 1, tmp_path / "runs")
    lines = set(report(record, "attack.txt").splitlines())
    assert not [line for line in lines if line.endswith((":ran", ":imported")) or line.startswith("wrote:")], lines
    assert "control-in-workspace:False" in lines
    assert "# pwned" not in (package / "tasks" / "evaluate.py").read_text()


def test_eight_parallel_calls_with_two_left_run_exactly_two_and_the_ledger_cannot_be_reset(
        suite: SuitePaths, tmp_path: Path) -> None:
    """Attack: delete the ledger (and the lock, and run.json's caps) between calls, and race 8
    calls against a cap of 2. The ledger is in the run directory; the broker checks and charges
    under one lock."""
    code = """
import os, shutil, subprocess, sys
ws = sys.argv[1]
for junk in ('.closer', '.closer/trajectory.jsonl', '.closer/run.json', '.closer/lock'):
    shutil.rmtree(os.path.join(ws, junk), ignore_errors=True)
procs = [subprocess.Popen(['closer-tool', 'sim'], stdout=subprocess.DEVNULL) for _ in range(8)]
codes = [p.wait() for p in procs]
open(ws + '/codes.txt', 'w').write(' '.join(map(str, sorted(codes))))
"""
    [record] = run_trials(suite.task("gcd-A-low").root, python_agent(code, "racer"), 1, tmp_path / "runs")
    records = trajectory(record)
    ran = [r for r in records if r["outcome"] == "ok"]
    refused = [r for r in records if r["outcome"] == "refused_budget"]
    assert len(ran) == 2 and len(refused) == 6
    assert report(record, "codes.txt") == "0 0 10 10 10 10 10 10"
    assert record.run_state != "infrastructure_failure"


def test_a_killed_client_is_charged_and_never_an_infrastructure_failure(suite: SuitePaths, tmp_path: Path) -> None:
    """Attack: kill its own closer-tool mid-call (once that made the run an infrastructure failure,
    blamed on the harness). The broker finishes, records and charges the call."""
    code = """
import subprocess, sys, time
p = subprocess.Popen(['closer-tool', 'sim'])
time.sleep(1.5)
p.kill()
"""
    [record] = run_trials(suite.task("gcd-A-low").root, python_agent(code, "self-killer"), 1, tmp_path / "runs")
    [call] = trajectory(record)
    assert call["tool"] == "sim" and call["cost"]["counted"] and call["outcome"] == "ok"
    assert record.run_state != "infrastructure_failure" and record.outcomes.get("infra_error", 0) == 0


def test_a_sandbox_that_cannot_start_is_the_harness_failure_not_the_agents(
        suite: SuitePaths, tmp_path: Path, monkeypatch) -> None:
    """A mount source missing on the host (once: a checkout without its .venv) made bubblewrap exit
    1 before the agent ran, recorded as "the agent crashed". It is the harness's failure."""
    import closer.tasks.runner as runner
    from closer.sandbox.spec import Bind

    real = runner.agent_sandbox

    def missing_mount(*args, **kwargs):
        spec = real(*args, **kwargs)
        gone = Bind(source=tmp_path / "gone-venv", target=Path("/opt/gone-venv"))
        return spec.model_copy(update={"binds": [*spec.binds, gone]})

    monkeypatch.setattr(runner, "agent_sandbox", missing_mount)
    [record] = run_trials(suite.task("gcd-A-low").root, resolve_agent("null"), 1, tmp_path / "runs")
    assert record.run_state == "infrastructure_failure", record.run_state_reason
    assert "gone-venv" in record.run_state_reason and record.agent_exit == "crashed"


def test_nothing_of_the_agent_outlives_its_run(suite: SuitePaths, tmp_path: Path) -> None:
    """Attack: leave background processes (double-forked, new session, nohup) that would rewrite
    record.json and summary.md after the run. The pid namespace ends them with the agent; the
    run folder is not in the sandbox anyway."""
    out = tmp_path / "runs"
    record_path = out / "gcd-A-low" / "lingerer" / "trial-1" / "record.json"
    code = f"""
import os, subprocess, sys
for _ in range(3):
    subprocess.Popen(['setsid', 'sh', '-c', 'sleep 4; echo forged > {record_path}; sleep 600'],
                     start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import time; time.sleep(600)
    os._exit(0)
"""
    [record] = run_trials(suite.task("gcd-A-low").root, python_agent(code, "lingerer"), 1, out)
    uid = record.sandbox["uid"]
    assert not [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid]
    assert record.sandbox["leftover_processes"] == []
    import time

    time.sleep(5)
    assert json.loads(record_path.read_text())["agent"] == "lingerer"


def test_surface_symlinks_are_refused_and_the_public_tests_are_the_pristine_ones(
        suite: SuitePaths, tmp_path: Path) -> None:
    """Attacks: an edit-surface file that is a symlink (to a file of the host) read by the metered
    tool outside the sandbox; a workspace testbench edited to pass everything, so that the public
    estimate (and the AUC) scores the agent's own tests. The call's tree takes regular surface
    files only and every locked file from the pristine copy: the skeleton still fails."""
    code = """
import os, subprocess, sys
ws = sys.argv[1]
os.symlink('/etc/hostname', ws + '/rtl/host.v')
open(ws + '/tests/test_gcd.py', 'w').write('import cocotb' + chr(10) + '@cocotb.test()' + chr(10) + 'async def ok(dut): pass' + chr(10))
subprocess.run(['closer-tool', 'sim'], stdout=open(ws + '/sim.txt', 'w'))
"""
    [record] = run_trials(suite.task("gcd-A-low").root, python_agent(code, "linker"), 1, tmp_path / "runs")
    [call] = trajectory(record)
    assert call["refused"] == ["rtl/host.v: a symlink (only regular files are taken)"]
    assert "not taken from the workspace: rtl/host.v" in report(record, "sim.txt")
    assert call["metrics"]["closer__func__tests_failed"] > 0  # the pristine tests, not the agent's
    assert not record.accepted  # and the evaluator rejects the edited locked file


class _EchoServer:
    """A TCP server on the host's loopback (outside the sandbox's network namespace)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"pong:" + conn.recv(64))


def test_network_is_none_by_default_and_only_the_allowed_endpoints(suite: SuitePaths, tmp_path: Path) -> None:
    allowed, other = _EchoServer(), _EchoServer()
    code = f"""
import socket, sys
ws = sys.argv[1]
out = []
def direct(port):
    try:
        socket.create_connection(('127.0.0.1', port), timeout=3); return 'connected'
    except OSError as exc: return type(exc).__name__
def via_proxy(port):
    try:
        s = socket.create_connection(('127.0.0.1', 3128), timeout=5)
    except OSError as exc: return 'no-proxy:' + type(exc).__name__
    s.sendall(f'CONNECT 127.0.0.1:{{port}} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'.encode())
    head = s.recv(200).decode()
    if ' 200 ' not in head: return head.split(chr(13))[0]
    s.sendall(b'ping'); return s.recv(64).decode()
out += ['direct:' + direct({allowed.port}), 'allowed:' + via_proxy({allowed.port}), 'other:' + via_proxy({other.port})]
open(ws + '/net.txt', 'w').write(chr(10).join(out))
"""
    [closed] = run_trials(suite.task("gcd-A-low").root, python_agent(code, "net-none"), 1, tmp_path / "none")
    lines = report(closed, "net.txt").splitlines()
    assert lines[0] == "direct:ConnectionRefusedError" and lines[1].startswith("allowed:no-proxy")
    assert closed.sandbox["network"] == []
    endpoint = f"127.0.0.1:{allowed.port}"
    [opened] = run_trials(suite.task("gcd-A-low").root, python_agent(code, "net-one", network=[endpoint]), 1,
                          tmp_path / "one")
    lines = report(opened, "net.txt").splitlines()
    assert lines == ["direct:ConnectionRefusedError", "allowed:pong:ping",
                     "other:HTTP/1.1 403 Forbidden by the run's network allow-list"]
    assert opened.sandbox["network"] == [endpoint]


def test_tool_sandbox_writes_only_its_folder_and_sees_no_hidden_part(tmp_path: Path) -> None:
    """What a metered tool (running the agent's files) can do: write its call folder, nothing
    else; the masked hidden part is empty; no network."""
    import subprocess
    import sys

    from closer.sandbox.tools import for_call

    call_dir, hidden, elsewhere = tmp_path / "call", tmp_path / "hidden", tmp_path / "elsewhere"
    hidden.mkdir()
    (hidden / "solution.v").write_text("module golden; endmodule\n")
    elsewhere.mkdir()
    code = f"""
import os, socket
out = []
for target in ({str(call_dir / 'ok.txt')!r}, {str(elsewhere / 'x.txt')!r}, '/usr/x.txt'):
    try:
        open(target, 'w').write('x'); out.append('wrote')
    except OSError as exc: out.append(type(exc).__name__)
out.append(str(os.listdir({str(hidden)!r})))
try:
    socket.create_connection(('127.0.0.1', 22), timeout=2); out.append('net')
except OSError as exc: out.append(type(exc).__name__)
print(' '.join(out))
"""
    argv = for_call(call_dir, masked=(hidden,)).wrap([sys.executable, "-c", code])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    words = done.stdout.split()
    assert words[0] == "wrote" and words[1] != "wrote" and words[2] == "OSError", done.stderr  # /usr: read-only
    assert words[3:] == ["[]", "ConnectionRefusedError"]
    assert (call_dir / "ok.txt").is_file() and not (elsewhere / "x.txt").exists()
    # the honest side: the same tool writes its results where it is told
    assert (hidden / "solution.v").is_file()
