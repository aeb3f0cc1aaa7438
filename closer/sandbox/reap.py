"""Nothing of a sandbox outlives it: after its first process exits, every process left with the
sandbox's uid (the pid namespace should already have taken them all) is killed and reported."""

from __future__ import annotations

import time

import psutil


def processes_of(uid: int) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["uids"]):
        try:
            if proc.info["uids"] is not None and uid in (proc.info["uids"].real, proc.info["uids"].effective):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def reap(uid: int, grace_s: float = 2.0) -> list[str]:
    """Kill every process of `uid`; returns 'pid name' of each one found (empty: none was left)."""
    left = processes_of(uid)
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
