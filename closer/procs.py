"""The one place that runs external processes.

Commands are data (`Command`); `run` executes one, writes its combined output to a log file, and
measures wall time and the child's peak resident memory (from `wait4`, so it is that process
tree's own figure, not the maximum over every child this Python process ever had).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
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
                stdin=subprocess.DEVNULL, start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise ToolMissing(f"{command.argv[0]}: not found on PATH ({exc})") from exc
        status, rusage = _wait(proc, start, command.timeout_s)
    wall = time.monotonic() - start
    if status is None:
        raise ToolTimeout(
            f"{command.argv[0]} ran past its {command.timeout_s:.0f} s limit and was stopped; log: {log}"
        )
    result = Completed(command, status, wall, rusage.ru_maxrss / 1024.0, log)
    if check and not result.ok:
        raise ToolError(
            f"{command.argv[0]} exited with {status}; log: {log}\n{result.log_tail()}"
        )
    return result


def _wait(proc: subprocess.Popen, start: float, timeout_s: float | None):
    """Wait for `proc` with `wait4`; on timeout kill its process group and return (None, rusage)."""
    delay = 0.005
    while True:
        pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, rusage
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, _, rusage = os.wait4(proc.pid, 0)
            proc.returncode = -signal.SIGKILL
            return None, rusage
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
