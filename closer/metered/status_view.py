"""`closer-tool status` without models: the budget left, from a cache of what the ledger said.

Reading the ledger validates every trajectory record, and the models alone take longer to import
than a status may take (50 ms). What a status shows besides the clock — the run header's budget
numbers and what the trajectory's records add up to (`StatusBasis`) — is a pure function of
run.json and trajectory.jsonl, so it is cached under their SHA-256 (`status_key`): whoever reads
the ledger strictly (a status, a call) stores it, and a standalone status whose files hash to the
stored key is answered from it (`quick_status`). A cache that is absent, stale, unreadable or
malformed is ignored, and anything the quick path is unsure of (a running or interrupted call,
a run not started, unusual arguments) takes the strict path. The cache is never the ledger:
calls charge from the trajectory. This module imports no model and no command-line library.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from closer import __version__
from closer.errors import InputError
from closer.metered.paths import WorkspacePaths
from closer.toolclass import ToolClass

CACHE_FORMAT = "closer-status-1"  # change when StatusBasis or its derivation changes


@dataclass(frozen=True)
class Status:
    run_id: str
    tier: str
    caps: dict[str, int | None]
    used: dict[str, int]
    remaining: dict[str, float | None]
    elapsed_s: float
    wall_s: float
    best_reward: float | None
    calls: int
    bad_lines: list[str]
    call_running: bool = False
    interrupted_call: int | None = None  # seq of a killed call the next call will record (counted)


@dataclass(frozen=True)
class StatusBasis:
    """What run.json and the trajectory say, before the clock is read."""

    run_id: str
    tier: str
    caps: dict[str, int | None]
    wall_s: float
    started_at: str  # ISO 8601 with its offset, as run.json's started_at
    used: dict[str, int]
    best_reward: float | None
    calls: int
    bad_lines: list[str]


def remaining_of(caps: dict[str, int | None], used: dict[str, int], wall_s: float,
                 elapsed_s: float) -> dict[str, float | None]:
    left: dict[str, float | None] = {}
    for tool in ToolClass:
        cap = caps[tool.value]
        left[tool.value] = None if cap is None else max(cap - used[tool.value], 0)
    left["wall_s"] = max(wall_s - elapsed_s, 0.0)
    return left


def status_of(basis: StatusBasis, now: datetime, call_running: bool = False,
              interrupted_call: int | None = None) -> Status:
    elapsed = (now - datetime.fromisoformat(basis.started_at)).total_seconds()
    return Status(
        run_id=basis.run_id, tier=basis.tier, caps=dict(basis.caps), used=dict(basis.used),
        remaining=remaining_of(basis.caps, basis.used, basis.wall_s, elapsed), elapsed_s=elapsed,
        wall_s=basis.wall_s, best_reward=basis.best_reward, calls=basis.calls, bad_lines=list(basis.bad_lines),
        call_running=call_running, interrupted_call=interrupted_call,
    )


def status_key(ws: WorkspacePaths) -> str:
    """SHA-256 over the format, Closer's version, the trajectory's path and both files' bytes."""
    digest = hashlib.sha256(f"{CACHE_FORMAT}\0{__version__}\0{ws.trajectory}\0".encode())
    for path in (ws.run_info, ws.trajectory):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            digest.update(b"absent\0")
            continue
        digest.update(f"{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def store_basis(ws: WorkspacePaths, key: str, basis: StatusBasis) -> None:
    """Atomically (a writer's own temporary file, then rename); a failure only loses the cache."""
    tmp = ws.status_cache.with_name(f".{ws.status_cache.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        tmp.write_text(json.dumps({"key": key, "basis": dataclasses.asdict(basis)}))
        tmp.replace(ws.status_cache)
    except OSError:
        tmp.unlink(missing_ok=True)


def cached_basis(ws: WorkspacePaths) -> StatusBasis | None:
    """The stored basis if it is well-formed and its key is the files' key now, else None."""
    if ws.status_cache.is_symlink() or not ws.status_cache.is_file():
        return None
    try:
        stored = json.loads(ws.status_cache.read_bytes())
        if stored["key"] != status_key(ws):
            return None
        return _basis_from(stored["basis"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _basis_from(data: dict) -> StatusBasis:
    """A stored basis, its shape checked (ValueError/KeyError/TypeError when it is not one)."""
    names = [t.value for t in ToolClass]
    basis = StatusBasis(**data)
    shapes = [
        isinstance(basis.run_id, str), isinstance(basis.tier, str), isinstance(basis.started_at, str),
        list(basis.caps) == names and all(c is None or type(c) is int for c in basis.caps.values()),
        list(basis.used) == names and all(type(n) is int for n in basis.used.values()),
        type(basis.wall_s) in (int, float), type(basis.calls) is int,
        basis.best_reward is None or type(basis.best_reward) in (int, float),
        isinstance(basis.bad_lines, list) and all(isinstance(line, str) for line in basis.bad_lines),
    ]
    if not all(shapes):
        raise ValueError("not a status basis")
    return dataclasses.replace(basis, wall_s=float(basis.wall_s))


def quick_status(argv: list[str]) -> Status | None:
    """The standalone status of `closer-tool [-w DIR] status [--json]` from the cache, or None when
    the strict path must answer (whatever it would say or refuse)."""
    workspace = _workspace_argument(argv)
    if workspace is None:
        return None
    try:
        ws = WorkspacePaths.locate(workspace)
        ws.check_layout()
    except (InputError, OSError):
        return None
    if not ws.run_info.is_file() or ws.inflight.exists() or ws.inflight.is_symlink():
        return None
    basis = cached_basis(ws)
    return status_of(basis, datetime.now(timezone.utc)) if basis is not None else None


def quick_status_text(argv: list[str]) -> str | None:
    """What `closer-tool status [--json]` prints, from the cache; None: ask the strict path."""
    from closer.metered.client import format_status

    st = quick_status(argv)
    if st is None:
        return None
    as_dict = dataclasses.asdict(st)
    return json.dumps(as_dict, indent=2) if "--json" in argv else format_status(as_dict)


def _workspace_argument(argv: list[str]) -> Path | None:
    """The workspace folder of a plain status command line, None for anything else."""
    rest = [a for a in argv if a != "--json"]
    if argv.count("--json") > 1 or (argv.count("--json") == 1 and argv[-1] != "--json"):
        return None
    chosen = os.environ.get("CLOSER_WORKSPACE")
    if chosen == "":
        return None
    if rest[:1] in (["-w"], ["--workspace"]) and len(rest) >= 2:
        chosen, rest = rest[1], rest[2:]
    elif rest[:1] and rest[0].startswith("--workspace="):
        chosen, rest = rest[0].removeprefix("--workspace="), rest[1:]
    if rest != ["status"]:
        return None
    if chosen == "":
        return None
    path = Path(chosen) if chosen is not None else Path.cwd()
    return path if path.is_dir() else None
