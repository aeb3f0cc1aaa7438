"""Questions about processes that may end while they are asked: a process that is gone between
`is_running` and `status` (or `name`) is simply not alive, never an error in the test."""

from __future__ import annotations

import psutil


def alive(p: psutil.Process) -> bool:
    """Running and not a zombie."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def name_of(p: psutil.Process) -> str:
    try:
        return p.name()
    except psutil.NoSuchProcess:
        return ""


def kill_quietly(p: psutil.Process) -> None:
    try:
        p.kill()
    except psutil.NoSuchProcess:
        pass
