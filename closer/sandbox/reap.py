"""Nothing of a sandbox outlives it: after its first process exits, every process left with the
sandbox's uid (the pid namespace should already have taken them all) is killed and reported."""

from __future__ import annotations

import time

import psutil

# bwrap returns as soon as the sandbox's first command exits, while the namespace's init is still
# killing and waiting for the rest (its monitor reads the exit status from an eventfd and does not
# wait for pid 1); those processes are on their way out, not left over.
TEARDOWN_S = 5.0


def processes_of(uid: int) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["uids"]):
        try:
            if proc.info["uids"] is not None and uid in (proc.info["uids"].real, proc.info["uids"].effective):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def live_processes_of(uid: int) -> list[psutil.Process]:
    """The uid's processes that still run: not ended, nor zombies waiting for their parent."""
    return [p for p in processes_of(uid) if _alive(p)]


def _after_teardown(uid: int, teardown_s: float) -> list[psutil.Process]:
    """The uid's processes once the pid namespace has had `teardown_s` to end them."""
    deadline = time.monotonic() + teardown_s
    while (left := live_processes_of(uid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def reap(uid: int, grace_s: float = 2.0, teardown_s: float = TEARDOWN_S) -> list[str]:
    """Kill every process of `uid` still running after the namespace's teardown; returns 'pid name'
    of each one (empty: none was left)."""
    left = _after_teardown(uid, teardown_s)
    described = []
    for proc in left:
        try:
            described.append(f"{proc.pid} {proc.name()}")
            proc.kill()
        except psutil.NoSuchProcess:
            continue
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(p.is_running() for p in left):
        time.sleep(0.05)
    return described
