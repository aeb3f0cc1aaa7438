"""What a run has spent so far, read back from its trajectory (the trajectory is the ledger), the
workspace lock that serializes calls, and `status`, which reports the budget left without spending
(and leaves what it read in the status cache, closer.metered.status_view)."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from typing import TYPE_CHECKING

from closer.errors import CloserError
from closer.metered.paths import WorkspacePaths
from closer.metered.run import utc_now
from closer.metered.status_view import Status, StatusBasis, remaining_of, status_key, status_of, store_basis
from closer.metered.views import BudgetView, RunView, load_run_view
from closer.toolclass import ToolClass
from closer.trajectory.reader import TrajectoryReader

if TYPE_CHECKING:
    from closer.budget import Budget
    from closer.trajectory.fastrecord import RecordView
    from closer.trajectory.record import RunInfo, TrajectoryRecord


@dataclass
class Ledger:
    """What the trajectory so far says: next sequence number, counted calls, last snapshot, best."""

    next_seq: int = 1
    used: dict[ToolClass, int] = field(default_factory=lambda: {t: 0 for t in ToolClass})
    last_snapshot: str | None = None
    best_reward: float | None = None
    cost_units: float = 0.0
    records: int = 0
    bad_lines: list[str] = field(default_factory=list)


def read_ledger(ws: WorkspacePaths, run_info: RunInfo | RunView) -> Ledger:
    ledger = Ledger(last_snapshot=run_info.baseline_snapshot)
    if not ws.trajectory.exists():
        return ledger
    # damage fails closed (TrajectoryDamaged); views: the fast decoder's records where it takes the line
    reader = TrajectoryReader(ws.trajectory, run_info.run_id, views=True)
    for rec in reader:
        ledger.records += 1
        ledger.next_seq = max(ledger.next_seq, rec.seq + 1)
        if rec.cost.counted:
            ledger.used[rec.tool] += 1
        ledger.cost_units += rec.cost.units
        if rec.surface_digest is not None:
            ledger.last_snapshot = rec.surface_digest
        if rec.reward is not None and (ledger.best_reward is None or rec.reward > ledger.best_reward):
            ledger.best_reward = rec.reward
    ledger.bad_lines = [b.describe(ws.trajectory) for b in reader.bad_lines]
    return ledger


def remaining(budget: Budget | BudgetView, used: dict[ToolClass, int], elapsed_s: float) -> dict[str, float | None]:
    return remaining_of({t.value: budget.cap(t) for t in ToolClass}, {t.value: used[t] for t in ToolClass},
                        budget.wall_s, elapsed_s)


@contextmanager
def workspace_lock(ws: WorkspacePaths) -> Iterator[None]:
    """Serialize calls; the kernel drops the lock if the holder dies (even by SIGKILL)."""
    ws.control.mkdir(parents=True, exist_ok=True)
    with open(ws.lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def status(ws: WorkspacePaths) -> Status:
    ws.check_layout()
    key = status_key(ws)
    run_info = load_run_view(ws.run_info)
    ledger = read_ledger(ws, run_info)
    now = utc_now()
    running, interrupted = _inflight_state(ws)
    if not running and interrupted is None and status_key(ws) == key:  # unchanged while read
        store_basis(ws, key, status_basis(run_info, ledger))
    if interrupted is not None and interrupted.seq >= ledger.next_seq:
        ledger.used[interrupted.tool] += 1
    return status_of(status_basis(run_info, ledger), now, running, interrupted.seq if interrupted else None)


def refresh_status_cache(ws: WorkspacePaths) -> None:
    """Under the run's lock, after a call: read the ledger strictly, as `status` would, and cache
    what it says, so that the next status is answered without models. A ledger that cannot be
    read leaves no cache (the strict status reports it)."""
    if ws.inflight.exists():
        return
    key = status_key(ws)
    try:
        run_info = load_run_view(ws.run_info)
        basis = status_basis(run_info, read_ledger(ws, run_info))
    except CloserError:
        return
    store_basis(ws, key, basis)


def status_basis(run_info: RunInfo | RunView, ledger: Ledger) -> StatusBasis:
    budget = run_info.budget
    return StatusBasis(
        run_id=run_info.run_id, tier=budget.tier, caps={t.value: budget.cap(t) for t in ToolClass},
        wall_s=budget.wall_s, started_at=run_info.started_at.isoformat(),
        used={t.value: ledger.used[t] for t in ToolClass}, best_reward=ledger.best_reward,
        calls=ledger.records, bad_lines=list(ledger.bad_lines))


def _inflight_state(ws: WorkspacePaths) -> tuple[bool, TrajectoryRecord | RecordView | None]:
    """(a call is running now, the provisional record of a killed call) without waiting."""
    if not ws.inflight.exists():
        return False, None
    with open(ws.lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True, None
        try:
            if not ws.inflight.exists():
                return False, None
            return False, load_inflight(ws)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def load_inflight(ws: WorkspacePaths) -> TrajectoryRecord:
    """The provisional record of a killed call, validated by the model (a rare path)."""
    from closer.inputs import load_json_model
    from closer.trajectory.record import TrajectoryRecord

    return load_json_model(ws.inflight, TrajectoryRecord, "interrupted-call record")
