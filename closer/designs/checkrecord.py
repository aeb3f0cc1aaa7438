"""What `closer design check` leaves behind: one CheckRecord per run, append-only, keyed by the
design's content checksum, so `closer task generate` can ask "was this exact content checked?".

    <user cache>/closer/design-checks/<design>/<checksum[:16]>/<UTC time>-<pid>.json
"""

from __future__ import annotations

import hashlib
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from closer import __version__
from closer.designs.model import DesignPaths
from closer.tasks.models import DesignTasks
from closer.tasks.paths import tree_checksum


class StageOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")
    stage: str
    ok: bool
    detail: str = Field(description="what was found; on failure, the real cause")
    figures: dict[str, float] = Field(default_factory=dict, description="numbers the stage measured")


class CheckRecord(BaseModel):
    """design-check.json (schema: closer/schemas/design-check.schema.json)."""

    model_config = ConfigDict(extra="forbid")
    schema_version: Literal["1"] = "1"
    design: str
    folder: str
    content_checksum: str = Field(description="content_checksum() of the checked folder")
    closer_version: str = __version__
    started_at: str
    finished_at: str
    complete: bool = Field(description="every stage ran (not --quick)")
    passed: bool = Field(description="every stage that ran passed")
    stages: list[StageOutcome]


def content_checksum(dpaths: DesignPaths, tasks: DesignTasks) -> str:
    """SHA-256 over the design folder's files and the oracle folder (also when it lies outside)."""
    digest = hashlib.sha256(tree_checksum(dpaths.root).encode())
    oracle = (dpaths.root / tasks.oracle).resolve()
    if not oracle.is_relative_to(dpaths.root.resolve()):
        digest.update(tree_checksum(oracle).encode())
    return digest.hexdigest()


def records_dir(design: str, checksum: str) -> Path:
    from closer.designs.fetch import cache_root

    return cache_root() / "design-checks" / design / checksum[:16]


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def append_record(record: CheckRecord) -> Path:
    folder = records_dir(record.design, record.content_checksum)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = record.finished_at.replace(":", "").replace("+0000", "Z")
    path = folder / f"{stamp}-{os.getpid()}.json"
    with open(path, "x") as out:  # never overwrites
        out.write(record.model_dump_json(indent=1) + "\n")
    return path


def passing_record(design: str, checksum: str) -> Path | None:
    """The newest complete, passing record of exactly this content, if any."""
    folder = records_dir(design, checksum)
    for path in sorted(folder.glob("*.json"), reverse=True) if folder.is_dir() else []:
        try:
            record = CheckRecord.model_validate_json(path.read_text())
        except (OSError, ValidationError):
            continue
        if record.content_checksum == checksum and record.complete and record.passed:
            return path
    return None
