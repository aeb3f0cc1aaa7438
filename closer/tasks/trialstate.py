"""A trial folder is claimed once and says where its run stands.

`claim_trial` creates the folder with one `mkdir` (atomic: of two runs racing for the same
folder, exactly one gets it), so a trial folder is never reused and never overwritten. The
claimant holds an exclusive `flock` on `.claim` for as long as it lives (the kernel drops it
when the process dies, even by SIGKILL) and keeps `progress.json` up to date (`mark`, an atomic
replace) until `record.json` is written: a run killed mid-way leaves the last phase it reached,
its process id, the time, and what it knew of the agent (sandbox uid; once the agent is over,
its exit), and `unfinished_trials` lists such folders (summary.md shows them).

`reclaim_trial` is the only way back into a folder: it takes the same lock, so it refuses while
the first run (or another resumer) is alive, and refuses a folder whose record is written.
"""

from __future__ import annotations

import fcntl
import os
from datetime import datetime, timezone
from enum import StrEnum
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from closer.errors import InputError
from closer.metered.runstate import AgentExit
from closer.sandbox.spec import SANDBOX_UID_BASE, SANDBOX_UID_SPAN

PROGRESS_FILE = "progress.json"
CLAIM_FILE = ".claim"
RECORD_FILE = "record.json"


class Phase(StrEnum):
    CLAIMED = "claimed"
    WORKSPACE = "workspace_prepared"
    AGENT = "agent_running"
    EVALUATING = "evaluating"
    RECORDED = "recorded"


# phases before any agent process or metered call existed: a resume may start the trial afresh
BEFORE_AGENT = (Phase.CLAIMED, Phase.WORKSPACE)


class AgentOutcome(BaseModel):
    """How the agent's part of a trial ended, kept so a killed evaluation can be finished later."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    exit: AgentExit
    returncode: int | None
    wall_s: float = Field(ge=0)
    started_at: str
    harness_errors: list[str] = Field(default_factory=list)
    leftover_processes: list[str] = Field(default_factory=list)
    broker_calls_running_at_end: int = Field(0, ge=0)


class Progress(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    phase: Phase
    pid: int
    updated_at: str
    run_id: str | None = None
    # a resume kills every process of this uid: only a sandbox uid is ever taken for one (never root's)
    uid: int | None = Field(None, ge=SANDBOX_UID_BASE, lt=SANDBOX_UID_BASE + SANDBOX_UID_SPAN,
                            description="the agent sandbox's uid, once chosen")
    agent: AgentOutcome | None = Field(None, description="set when the agent's part is over")


class TrialClaim:
    """The open, locked `.claim` of one trial folder; release it by closing (or process exit)."""

    def __init__(self, trial_dir: Path, handle: IO[str], progress: Progress | None) -> None:
        self.trial_dir = trial_dir
        self.handle = handle
        self.progress = progress  # where a reclaimed trial had stopped (None for a fresh claim)

    def __enter__(self) -> TrialClaim:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.handle.close()


def claim_trial(trial_dir: Path) -> TrialClaim:
    """Create `trial_dir` for this run, or refuse: InputError says what holds it."""
    trial_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        trial_dir.mkdir()
    except FileExistsError:
        raise InputError(f"{trial_dir} exists ({describe(trial_dir)}): a trial folder is never overwritten "
                         "or reused; use another --out, or --resume to finish a killed trial") from None
    handle = _lock(trial_dir)
    if handle is None:  # a resumer took the lock in the instant between mkdir and here
        raise InputError(f"{trial_dir}: taken by another run while it was being created")
    mark(trial_dir, Phase.CLAIMED)
    return TrialClaim(trial_dir, handle, None)


def reclaim_trial(trial_dir: Path) -> TrialClaim:
    """Take back a trial folder whose run was killed: refused while its run lives, once it is recorded,
    or without a readable progress marker."""
    if not trial_dir.is_dir() or trial_dir.is_symlink():
        raise InputError(f"{trial_dir}: no trial folder to resume")
    handle = _lock(trial_dir)
    if handle is None:
        raise InputError(f"{trial_dir}: its run is still going ({describe(trial_dir)}); "
                         "only a killed trial is resumed")
    if (trial_dir / RECORD_FILE).exists() or (trial_dir / RECORD_FILE).is_symlink():
        handle.close()
        raise InputError(f"{trial_dir / RECORD_FILE}: the trial is recorded; a record is never rewritten")
    progress = read_progress(trial_dir)
    if progress is None:
        handle.close()
        raise InputError(f"{trial_dir / PROGRESS_FILE}: missing or unreadable: where the run stopped is unknown")
    if progress.phase is Phase.RECORDED:
        handle.close()
        raise InputError(f"{trial_dir / RECORD_FILE}: missing although the trial was recorded; not written again")
    return TrialClaim(trial_dir, handle, progress)


def _lock(trial_dir: Path) -> IO[str] | None:
    handle = open(trial_dir / CLAIM_FILE, "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def mark(trial_dir: Path, phase: Phase, **updates: object) -> None:
    """Record `phase` (and any of run_id, uid, agent); what earlier marks said is kept."""
    previous = read_progress(trial_dir)
    kept = previous.model_dump(exclude={"phase", "pid", "updated_at"}) if previous else {}
    progress = Progress.model_validate({
        **kept, **{k: v for k, v in updates.items() if v is not None}, "phase": phase, "pid": os.getpid(),
        "updated_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    tmp = trial_dir / f".{PROGRESS_FILE}.tmp"
    tmp.write_text(progress.model_dump_json() + "\n")
    tmp.replace(trial_dir / PROGRESS_FILE)


def read_progress(trial_dir: Path) -> Progress | None:
    try:
        return Progress.model_validate_json((trial_dir / PROGRESS_FILE).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def describe(trial_dir: Path) -> str:
    if (trial_dir / RECORD_FILE).exists():
        return "its record is written"
    progress = read_progress(trial_dir)
    if progress is None:
        return "no progress marker"
    return (f"stopped or running at phase {progress.phase.value}, pid {progress.pid}, "
            f"last update {progress.updated_at}")


def unfinished_trials(runs: Path) -> list[tuple[Path, str]]:
    """Trial folders under `runs` with a progress marker but no record: (folder, where it stopped)."""
    return [(p.parent, describe(p.parent)) for p in sorted(runs.rglob(PROGRESS_FILE))
            if not (p.parent / RECORD_FILE).exists()]
