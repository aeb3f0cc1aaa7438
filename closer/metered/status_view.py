"""`closer-tool status` without models: the budget left, from a cache of what the ledger said.

Reading the ledger validates every trajectory record, and the models alone take longer to import
than a status may take (50 ms). What a status shows besides the clock — the run header's budget
numbers and what the trajectory's records add up to (`StatusBasis`) — is a pure function of
run.json and trajectory.jsonl, so it is cached under their SHA-256 (`status_key`): whoever reads
the ledger strictly (a status, a call) stores it, and a standalone status whose files hash to the
stored key is answered from it (`quick_status`). A cache that is absent, stale, unreadable or
malformed is ignored, and anything the quick path is unsure of (a running or interrupted call,
a run not started, unusual arguments) takes the strict path. The cache is never the ledger:
calls charge from the trajectory. The quick path itself is closer.metered.quickstatus (standard
library only, what the `closer-tool` launcher runs); this module holds the typed views of it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from dataclasses import dataclass
from datetime import datetime

from closer.metered.paths import WorkspacePaths
from closer.metered.quickstatus import cache_key, cached_status, remaining_of, status_fields

__all__ = ["Status", "StatusBasis", "remaining_of", "status_of", "status_key", "store_basis", "quick_status"]


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


def status_of(basis: StatusBasis, now: datetime, call_running: bool = False,
              interrupted_call: int | None = None) -> Status:
    return Status(**status_fields(dataclasses.asdict(basis), now, call_running, interrupted_call))


def status_key(ws: WorkspacePaths) -> str:
    """SHA-256 over the format, Closer's version, the trajectory's path and both files' bytes."""
    return cache_key(str(ws.run_info), str(ws.trajectory))


def store_basis(ws: WorkspacePaths, key: str, basis: StatusBasis) -> None:
    """Atomically (a writer's own temporary file, then rename); a failure only loses the cache."""
    tmp = ws.status_cache.with_name(f".{ws.status_cache.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        tmp.write_text(json.dumps({"key": key, "basis": dataclasses.asdict(basis)}))
        tmp.replace(ws.status_cache)
    except OSError:
        tmp.unlink(missing_ok=True)


def quick_status(argv: list[str]) -> Status | None:
    """The standalone status of `closer-tool [-w DIR] status [--json]` from the cache, or None when
    the strict path must answer (whatever it would say or refuse)."""
    fields = cached_status(argv)
    return Status(**fields) if fields is not None else None
