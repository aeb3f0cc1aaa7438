"""The one place that runs external processes.

Commands are data (`Command`); `run` executes one, writes its combined output to a log file, and
measures wall time and the child's peak resident memory (from `wait4`, so it is that process
tree's own figure, not the maximum over every child this Python process ever had).

No process outlives its reason to run. Each command runs in a process group of its own, which is
killed (SIGKILL to the group) when the command runs past its timeout, and also when the process
that started it dies, even by SIGKILL: the child is started with PR_SET_PDEATHSIG, and a
watchdog (`sh`, in a session of its own) waits on a pipe only this process holds open and kills
the group when the pipe closes without being told the command finished.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import select
import shlex
import signal
import subprocess
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from closer.errors import ToolError, ToolMissing, ToolTimeout


@dataclass(frozen=True)
class Command:
    argv: list[str]
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)  # added to os.environ
    timeout_s: float | None = None

    def shell_line(self) -> str:
        return shlex.join(self.argv)


@dataclass(frozen=True)
class Completed:
    command: Command
    returncode: int
    wall_s: float
    peak_rss_mb: float
    log: Path
    cpu_s: float = 0.0  # user + system CPU seconds (wait4's rusage: with the children it waited for)

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def log_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])


def run(command: Command, log: Path, check: bool = True) -> Completed:
    """Run `command`, writing stdout+stderr to `log`.

    Raises ToolMissing when the executable does not exist, ToolTimeout when it runs past
    `command.timeout_s` (the whole process group is killed), and ToolError on a non-zero exit
    when `check` is true (the message names the log and shows its tail).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **command.env}
    start = time.monotonic()
    with open(log, "wb") as out:
        out.write(f"$ {command.shell_line()}\n".encode())
        out.flush()
        try:
            proc = subprocess.Popen(
                command.argv, cwd=command.cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent(),
            )
        except FileNotFoundError as exc:
            raise ToolMissing(f"{command.argv[0]}: not found on PATH ({exc})") from exc
        with GroupWatchdog(proc.pid):
            status, rusage = _wait(proc, start, command.timeout_s)
    wall = time.monotonic() - start
    if status is None:
        raise ToolTimeout(
            f"{command.argv[0]} ran past its {command.timeout_s:.0f} s limit and was stopped; log: {log}"
        )
    result = Completed(command, status, wall, rusage.ru_maxrss / 1024.0, log, rusage.ru_utime + rusage.ru_stime)
    if check and not result.ok:
        raise ToolError(
            f"{command.argv[0]} exited with {status}; log: {log}\n{result.log_tail()}"
        )
    return result


def _wait(proc: subprocess.Popen, start: float, timeout_s: float | None):
    """Wait for `proc` without polling: block until it exits or its time is up (on a pidfd, or in
    a thread where the kernel has none), then reap it with `wait4` for its rusage. On timeout kill
    its process group and return (None, rusage)."""
    left = None if timeout_s is None else max(timeout_s - (time.monotonic() - start), 0.0)
    timed_out = not _exits_within(proc.pid, left)
    if timed_out:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _, status, rusage = os.wait4(proc.pid, 0)
    if timed_out:
        proc.returncode = -signal.SIGKILL
        return None, rusage
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, rusage


def _exits_within(pid: int, timeout_s: float | None) -> bool:
    """True once child `pid` has exited (not reaped), False if `timeout_s` passed first."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd (kernel < 5.3): a thread waits instead
        return _exits_within_thread(pid, timeout_s)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            wait_ms = None if deadline is None else max(int((deadline - time.monotonic()) * 1000) + 1, 0)
            if poller.poll(wait_ms):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
    finally:
        os.close(pidfd)


def _exits_within_thread(pid: int, timeout_s: float | None) -> bool:
    exited = threading.Event()

    def wait_exit() -> None:
        try:
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # leaves the child for wait4 to reap
        except ChildProcessError:
            pass  # reaped after a time-out
        exited.set()

    threading.Thread(target=wait_exit, name=f"wait-{pid}", daemon=True).start()
    return exited.wait(timeout_s)


PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


def _die_with_parent():
    """A preexec function: the child gets SIGKILL when the thread that started it exits (the
    parent is checked once more afterwards, in case it died before the prctl)."""
    parent = os.getpid()

    def preexec() -> None:
        die_with(parent)

    return preexec


def die_with(parent: int) -> None:
    """Make this process get SIGKILL when `parent` (the pid that forked it) exits; exit now if
    it already has."""
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(137)


def worker_pool(jobs: int) -> ProcessPoolExecutor:
    """A pool of `jobs` forked workers that die with this process (by SIGTERM or SIGKILL too), and
    with them the commands they run: a pool's workers otherwise outlive a killed parent. The
    workers are forked by the first submit, so the thread that calls it must outlive them
    (PR_SET_PDEATHSIG follows the forking thread)."""
    return ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"),
                               initializer=die_with, initargs=(os.getpid(),))


# reads until EOF (this process closed or died), then kills the group unless told "done"
_WATCHDOG = 'read -r word; [ "$word" = done ] || kill -s KILL -- "-$1" 2>/dev/null; exit 0'


class GroupWatchdog:
    """Kills process group `pgid` if this process dies while the group runs."""

    def __init__(self, pgid: int):
        self.pgid = pgid
        self._proc: subprocess.Popen | None = None
        self._write = -1

    def __enter__(self) -> GroupWatchdog:
        read, self._write = os.pipe()
        try:
            self._proc = subprocess.Popen(["sh", "-c", _WATCHDOG, "closer-watchdog", str(self.pgid)],
                                          stdin=read, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True)
        except OSError:
            self._proc = None  # no sh: PR_SET_PDEATHSIG still ends the command itself
        finally:
            os.close(read)
        return self

    def __exit__(self, *exc) -> None:
        try:
            os.write(self._write, b"done\n")
        except OSError:
            pass
        os.close(self._write)
        if self._proc is not None:
            self._proc.wait()
