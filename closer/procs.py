"""The one place that runs external processes.

Commands are data (`Command`); `run` executes one, writes its combined output to a log file, and
measures wall time and the child's peak resident memory (from `wait4`, so it is that process
tree's own figure, not the maximum over every child this Python process ever had; its floor is
this process's resident size, the image a child starts from).

No process outlives its reason to run. Each command runs in a process group of its own, which is
killed (SIGKILL to the group) when the command runs past its timeout, and also when the process
that started it dies, even by SIGKILL: the child gets PR_SET_PDEATHSIG, and this process's
watchdog (one `sh`, in a session of its own, started with the first command) reads the groups
running now from a pipe only this process holds open and kills them when the pipe closes.

The child is started with vfork (no Python code runs in it: a fork of a large interpreter costs
tens of ms a command here) through `setpriv --pdeathsig KILL` and an `sh` that checks the parent
is still the one that started it (the signal is armed first, so a parent that dies at any moment
is caught) and execs the command. Without setpriv it is forked with a preexec function that does
the same (`die_with`).
"""

from __future__ import annotations

import errno
import os
import resource
import select
import shlex
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from closer.errors import ToolError, ToolMissing, ToolTimeout

if TYPE_CHECKING:  # imported by worker_pool itself: most callers run commands, not pools
    from concurrent.futures import ProcessPoolExecutor


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
            proc = _start(command, env, out)
        except FileNotFoundError as exc:
            raise ToolMissing(f"{command.argv[0]}: not found on PATH ({exc})") from exc
        with watched(proc.pid):
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


def tree_cpu_s() -> float:
    """User + system CPU seconds of this process and of every child it has waited for (`run`
    waits with wait4, so a tool's time counts once it has ended)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _start(command: Command, env: dict[str, str], out) -> subprocess.Popen:
    """The command in a new session, dying with this process (see the module's docstring)."""
    options = dict(cwd=command.cwd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                   start_new_session=True)
    wrapper = _armed_exec()
    if wrapper is None:
        return subprocess.Popen(command.argv, preexec_fn=_die_with_parent(), **options)
    _check_executable(command.argv[0], env, command.cwd)  # the errors Popen would raise for it
    return subprocess.Popen([*wrapper, str(os.getpid()), *command.argv], **options)


# sh: exit unless this process's parent is still the starter ($1, checked after setpriv armed the
# signal), then become the command
_ARM = 'p=$1; shift; [ "$PPID" = "$p" ] || exit 137; exec "$@"'
_ARMED_EXEC: list[list[str] | None] = []


def _armed_exec() -> list[str] | None:
    """The argv prefix that arms PR_SET_PDEATHSIG and execs the command; None without a setpriv
    that has --pdeathsig (util-linux 2.33 and later: tried once per process)."""
    if not _ARMED_EXEC:
        setpriv, sh = shutil.which("setpriv"), shutil.which("sh")
        prefix = [setpriv, "--pdeathsig", "KILL", "--", sh, "-c", _ARM, "closer-spawn"] if setpriv and sh else None
        if prefix is not None:
            prefix = prefix if _tries_ok([*prefix, str(os.getpid()), "true"], timeout_s=30) else None
        _ARMED_EXEC.append(prefix)
    return _ARMED_EXEC[0]


def _tries_ok(argv: list[str], timeout_s: float) -> bool:
    """`argv` exits 0 within `timeout_s` (waited for as `_wait` does: subprocess.run's time-out
    polls with sleeps, which cost a short probe up to 15 ms here)."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return False
    status, _ = _wait(proc, time.monotonic(), timeout_s)
    return status == 0


def _check_executable(program: str, env: dict[str, str], cwd: Path | None) -> None:
    """FileNotFoundError / PermissionError as exec would give them (the wrapper's exec hides them)."""
    if os.sep in program:
        candidates = [program if cwd is None else os.path.join(cwd, program)]
    else:
        candidates = [os.path.join(folder, program) for folder in os.get_exec_path(env)]
    found = [path for path in candidates if os.path.isfile(path)]
    if not found:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    if not any(os.access(path, os.X_OK) for path in found):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)


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
_LIBC: list = []  # the C library, loaded by the first die_with (ctypes is not imported before)


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
    if not _LIBC:
        import ctypes

        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    _LIBC[0].prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(137)


_FORK_HOOK_ARMED: list[bool] = []
_FORKING_PID: list[int] = [0]


def forked_children_die_with_parent() -> None:
    """From now on, every child this process forks with `os.fork` (multiprocessing's "fork"
    workers: SiliconCompiler's node processes, which it starts itself) gets PR_SET_PDEATHSIG like
    the commands `run` starts, so a SIGTERM or SIGKILL of this process ends them too instead of
    leaving them running. A hook per process, armed once; inherited by the children it arms."""
    if _FORK_HOOK_ARMED:
        return
    os.register_at_fork(before=_note_forking_pid, after_in_child=_die_with_forking_pid)
    _FORK_HOOK_ARMED.append(True)


def _note_forking_pid() -> None:
    _FORKING_PID[0] = os.getpid()


def _die_with_forking_pid() -> None:
    die_with(_FORKING_PID[0])


def worker_pool(jobs: int, start_method: str = "fork") -> ProcessPoolExecutor:
    """A pool of `jobs` workers (forked, or "spawn"ed fresh interpreters) that die with this
    process (by SIGTERM or SIGKILL too), and with them the commands they run: a pool's workers
    otherwise outlive a killed parent. The workers are started by the first submit, so the thread
    that calls it must outlive them (PR_SET_PDEATHSIG follows the starting thread)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=multiprocessing.get_context(start_method),
                               initializer=die_with, initargs=(os.getpid(),))


_FORK_SHARED: list = []  # what fork_map's workers inherit (set only while they run)


def fork_map(fn, items: list, jobs: int, shared):
    """`[fn(item, shared) for item in items]`, with `jobs` > 1 in that many forked workers
    (`worker_pool`) that inherit `shared` as it stands (a KLayout layout read and flattened once:
    nothing of it is pickled, only the items and the results cross). The results in `items`'s
    order; on one job, or one item, in this process."""
    if jobs <= 1 or len(items) <= 1:
        return [fn(item, shared) for item in items]
    _FORK_SHARED.append(shared)
    try:
        with worker_pool(min(jobs, len(items))) as pool:
            return list(pool.map(_call_with_shared, [fn] * len(items), items))
    finally:
        _FORK_SHARED.clear()


def _call_with_shared(fn, item):
    return fn(item, _FORK_SHARED[0])


# one line per change ("add PGID", "del PGID"); at EOF (this process closed or died) it kills the
# groups still listed. Builtins only: nothing forks while it keeps the list.
_WATCHDOG = """
groups=
while read -r op pgid; do
  case $op in
    add) groups="$groups $pgid" ;;
    del) kept=; for g in $groups; do [ "$g" = "$pgid" ] || kept="$kept $g"; done; groups=$kept ;;
  esac
done
for g in $groups; do kill -s KILL -- "-$g" 2>/dev/null; done
exit 0
"""


class Watchdog:
    """This process's watchdog: kills the process groups it was told of if this process dies
    while they run. One per process (a forked child starts its own); one that was killed is
    replaced and told the groups running now."""

    def __init__(self) -> None:
        self._owner = -1  # the pid that started it
        self._write = -1
        self._proc: subprocess.Popen | None = None
        self._groups: set[int] = set()
        self._lock = threading.Lock()

    def tell(self, op: str, pgid: int) -> None:
        with self._lock:
            if self._owner != os.getpid():
                self._adopt()
            (self._groups.add if op == "add" else self._groups.discard)(pgid)
            if self._proc is None or self._proc.poll() is not None or not self._send(f"{op} {pgid}\n"):
                self._replace()

    def _adopt(self) -> None:
        """In a forked child the parent's pipe and groups are not this process's."""
        if self._write >= 0:
            os.close(self._write)
        self._write, self._proc, self._groups = -1, None, set()
        self._owner = os.getpid()

    def _send(self, text: str) -> bool:
        try:
            os.write(self._write, text.encode())
            return True
        except OSError:
            return False

    def _replace(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
        if self._write >= 0:
            os.close(self._write)
        read, self._write = os.pipe()
        try:
            self._proc = subprocess.Popen(["sh", "-c", _WATCHDOG, "closer-watchdog"], stdin=read,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True)
        except OSError:
            self._proc = None  # no sh: PR_SET_PDEATHSIG still ends the commands themselves
        finally:
            os.close(read)
        if self._proc is not None:
            self._send("".join(f"add {pgid}\n" for pgid in sorted(self._groups)))


WATCHDOG = Watchdog()


class watched:
    """Process group `pgid` is killed if this process dies while the block runs."""

    def __init__(self, pgid: int, watchdog: Watchdog = WATCHDOG):
        self.pgid = pgid
        self.watchdog = watchdog

    def __enter__(self) -> watched:
        self.watchdog.tell("add", self.pgid)
        return self

    def __exit__(self, *exc) -> None:
        self.watchdog.tell("del", self.pgid)
