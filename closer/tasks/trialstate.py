"""A trial folder is claimed once and says where its run stands.

`claim_trial` creates the folder with one `mkdir` (atomic: of two runs racing for the same
folder, exactly one gets it), so a trial folder is never reused and never overwritten. The
claimant then keeps `progress.json` up to date (`mark`, an atomic replace) until `record.json`
is written: a run killed mid-way leaves the last phase it reached, its process id and the time,
and `unfinished_trials` lists such folders (summary.md shows them).
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from closer.errors import InputError

PROGRESS_FILE = "progress.json"


class Phase(StrEnum):
    CLAIMED = "claimed"
    WORKSPACE = "workspace_prepared"
    AGENT = "agent_running"
    EVALUATING = "evaluating"
    RECORDED = "recorded"


class Progress(BaseModel):
    model_config = ConfigDict(extra="forbid")

    phase: Phase
    pid: int
    updated_at: str
    run_id: str | None = None


def claim_trial(trial_dir: Path) -> None:
    """Create `trial_dir` for this run, or refuse: InputError says what holds it."""
    trial_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        trial_dir.mkdir()
    except FileExistsError:
        raise InputError(f"{trial_dir} exists ({describe(trial_dir)}): a trial folder is never overwritten "
                         "or reused; use another --out") from None
    mark(trial_dir, Phase.CLAIMED)


def mark(trial_dir: Path, phase: Phase, run_id: str | None = None) -> None:
    previous = read_progress(trial_dir)
    progress = Progress(phase=phase, pid=os.getpid(), run_id=run_id or (previous.run_id if previous else None),
                        updated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    tmp = trial_dir / f".{PROGRESS_FILE}.tmp"
    tmp.write_text(progress.model_dump_json() + "\n")
    tmp.replace(trial_dir / PROGRESS_FILE)


def read_progress(trial_dir: Path) -> Progress | None:
    try:
        return Progress.model_validate_json((trial_dir / PROGRESS_FILE).read_text())
    except (OSError, ValidationError, ValueError):
        return None


def describe(trial_dir: Path) -> str:
    if (trial_dir / "record.json").exists():
        return "its record is written"
    progress = read_progress(trial_dir)
    if progress is None:
        return "no progress marker"
    return (f"stopped or running at phase {progress.phase.value}, pid {progress.pid}, "
            f"last update {progress.updated_at}")


def unfinished_trials(runs: Path) -> list[tuple[Path, str]]:
    """Trial folders under `runs` with a progress marker but no record: (folder, where it stopped)."""
    return [(p.parent, describe(p.parent)) for p in sorted(runs.rglob(PROGRESS_FILE))
            if not (p.parent / "record.json").exists()]

