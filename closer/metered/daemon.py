"""The standalone workspace's own broker: plain `closer-tool` calls served by a process kept warm.

Under `closer task run` every call goes to the run's broker (closer.metered.broker). A standalone
workspace (a Harbor container, a user's own folder) has none, so each call would be a new Python
process that imports the metering and runs it (about 100 ms here before the tools start). Instead
the first plain tool call on a started run runs in its own process as before and then starts this
daemon: a Broker on `.closer/broker-<key>.sock`, the same code under the same run lock, so what is
charged and recorded is the same. Later calls are its thin clients (closer.metered.client).

The key hashes what the call's behaviour depends on besides the workspace: Closer's version and
package folder, the interpreter, and the environment (without the shell's bookkeeping variables).
A call with another environment has another key: it runs in-process and starts its own daemon.

The daemon leaves when it has been idle for $CLOSER_TOOL_DAEMON_IDLE_S (default 300 s), when its
socket is removed or replaced, or when the run's header is gone; it finishes the calls it accepted
first. One daemon per key (a lock file holds its pid). $CLOSER_TOOL_DAEMON=0 turns it off.
A request the daemon never acknowledged (it was leaving) is run in-process by the caller; one it
acknowledged is never run twice: if the daemon dies in it, the caller reports an infrastructure
error and the next call records the interrupted one (closer.metered.front).

This module's top level imports only os, sys and the C hash: the launcher (`python -SI`) imports it.
"""

from __future__ import annotations

import os
import sys

try:
    from _sha256 import sha256  # Python 3.11
except ImportError:  # pragma: no cover - 3.12 and later
    from hashlib import sha256

import closer
from closer.metered import client

ENABLE_ENV = "CLOSER_TOOL_DAEMON"
IDLE_ENV = "CLOSER_TOOL_DAEMON_IDLE_S"
DEFAULT_IDLE_S = 300.0
CHECK_EVERY_S = 0.5
# The shell's bookkeeping changes with every command; the call does not depend on it.
VOLATILE_ENV = frozenset({"PWD", "OLDPWD", "SHLVL", "_", "CLOSER_WORKSPACE"})
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes: a longer path is reached from its folder


def enabled() -> bool:
    return os.environ.get(ENABLE_ENV, "1") != "0"


def daemon_key() -> str:
    digest = sha256(f"{closer.__version__}\0{os.path.dirname(closer.__file__)}\0{sys.executable}\0".encode())
    for name in sorted(os.environ):
        if name not in VOLATILE_ENV:
            digest.update(f"{name}={os.environ[name]}\0".encode(errors="surrogateescape"))
    return digest.hexdigest()[:16]


def socket_path(control: str) -> str | None:
    """The daemon's socket for this process's key in a standalone control dir, None when turned off."""
    return os.path.join(control, f"broker-{daemon_key()}.sock") if enabled() else None


def lock_path(sock: str) -> str:
    return sock[: -len(".sock")] + ".lock"


def running_pids(control: str) -> list[int]:
    """The pids the daemons of a control dir wrote into their lock files (a leaving daemon empties its own)."""
    pids = []
    for name in sorted(os.listdir(control)):
        if name.startswith("broker-") and name.endswith(".lock"):
            with open(os.path.join(control, name)) as handle:
                text = handle.read().strip()
            if text:
                pids.append(int(text))
    return pids


def call(sock: str, tool: str, args: list[str]) -> int | None:
    """The exit code of the call served by the daemon at `sock`; None when no daemon took it
    (none listening, or it closed the connection before acknowledging the request)."""
    request = {"op": "call", "tool": tool, "args": args}
    if len(sock.encode()) <= MAX_SOCKET_PATH:
        answer = client.ask(request, sock, fallback=True)
    else:  # too long for sun_path: connect by its name from its folder, then come back
        try:
            here = os.getcwd()
            os.chdir(os.path.dirname(sock))
        except OSError:
            return None
        try:
            answer = client.ask(request, os.path.basename(sock), fallback=True)
        finally:
            os.chdir(here)
    if answer is None:
        return None
    print(answer.get("output", ""))
    return int(answer.get("exit_code", client.EXIT_INFRA))


def spawn(root: str, sock: str) -> None:
    """Start the daemon for `sock` in the background, detached from the caller's session and
    output (a caller that waits for its output's end must not wait for the daemon)."""
    import subprocess

    code = ("import sys; sys.path.insert(0, sys.argv[1]); from closer.metered.daemon import main; "
            "sys.exit(main(sys.argv[2:]))")
    package_parent = os.path.dirname(os.path.dirname(closer.__file__))
    try:
        subprocess.Popen([sys.executable, "-c", code, package_parent, root, sock], cwd=os.path.dirname(sock),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         close_fds=True, start_new_session=True)
    except OSError:
        pass  # no daemon: the next call runs in its own process, as this one did


def serve(root: str, sock: str, idle_s: float) -> int:
    """Run the daemon until it is idle, its socket is replaced, or the run is gone. Returns 0, or 1
    when another daemon holds the key's lock. It binds its socket by name from the control dir
    (its working folder, never changed), so a deep workspace's long path does not matter."""
    import fcntl
    import time
    from pathlib import Path

    from closer.metered.broker import Broker
    from closer.metered.paths import WorkspacePaths

    os.chdir(os.path.dirname(sock))
    lock = os.open(lock_path(sock), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 1
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    ws = WorkspacePaths(Path(root))
    name = Path(os.path.basename(sock))
    broker = Broker(ws, name, log=Path(sock).with_suffix(".log"), socket_mode=0o600).start()
    own = os.stat(sock).st_ino
    try:
        while broker.idle_for() < idle_s and _still_ours(sock, own) and ws.run_info.is_file():
            time.sleep(CHECK_EVERY_S)
    finally:
        broker.stop(unlink=_still_ours(sock, own))
        os.ftruncate(lock, 0)
    return 0


def _still_ours(sock: str, inode: int) -> bool:
    try:
        return os.stat(sock).st_ino == inode
    except OSError:
        return False


def main(argv: list[str]) -> int:
    root, sock = argv
    try:
        idle_s = float(os.environ.get(IDLE_ENV, DEFAULT_IDLE_S))
    except ValueError:
        idle_s = DEFAULT_IDLE_S
    return serve(root, sock, idle_s)
