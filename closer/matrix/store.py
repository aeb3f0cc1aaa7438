"""The matrix's result store: one JSON line per finished trial, appended and never rewritten
(schema: closer/schemas/matrix-store.schema.json). It is the resume point: a trial whose key has
a line is not run again. A line cut off by a kill (the last one, without its newline) is ignored."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from closer.errors import InputError
from closer.inputs import validation_message

Role = Literal["trial", "ab"]


class Checkpoint(BaseModel):
    """Where a C trial first had RTL that passes A's oracle (closer.matrix.checkpoint)."""

    model_config = ConfigDict(extra="forbid")
    seq: int = Field(description="the C call whose snapshot first passed A's oracle")
    elapsed_s: float = Field(description="C's wall clock at that call's end")
    cost_units: float = Field(description="C's cumulative weighted cost at that call")
    a_reward: float | None = Field(description="A's hidden reward of that snapshot's RTL")
    evaluations: int = Field(description="A evaluations the search ran (the others were cached)")


class LayoutPoint(BaseModel):
    """A B, C or A+B trial's hidden reward at one snapshot (closer.matrix.checkpoint): its starting
    RTL, or its first call whose public result was feasible on the full gates."""

    model_config = ConfigDict(extra="forbid")
    seq: int | None = Field(description="the call whose snapshot was scored (None: the starting surface)")
    elapsed_s: float = Field(description="the trial's wall clock at that call's end (0 at the start)")
    cost_units: float = Field(description="the trial's cumulative weighted cost at that call (0 at the start)")
    cost_after_units: float = Field(description="the weighted cost the trial spent after that point")
    reward: float | None = Field(description="the trial's own task's hidden reward of that snapshot")
    evaluations: int = Field(description="evaluations run for it (0: cached)")


class StoreEntry(BaseModel):
    """One finished trial: a plain trial of one task, or one A+B composition."""

    model_config = ConfigDict(extra="forbid")
    schema_version: Literal["1"] = "1"
    key: str = Field(description="the trial's key: <task>/<agent>/trial-<n>, or AB:<design>-<tier>/<agent>/trial-<n>")
    role: Role
    design: str
    kind: str = Field(description="A, B, C, or AB (a composition)")
    budget_tier: str
    agent: str = Field(description="the agent's label")
    agent_backend: str | None = None
    agent_model: str | None = None
    agent_quantization: str | None = None
    machinery_baseline: bool
    trial: int = Field(ge=1)
    suite_version: str = Field(description="the generated suite's version (a digest of its tasks' checksums)")
    task_checksum: str | None = None
    tool_versions: dict[str, object] = Field(default_factory=dict)
    run_state: str
    reward: float | None
    feasible: bool
    record: str | None = Field(description="the trial's record.json (None: a composition whose A failed its gates)")
    composed_from: str | None = Field(None, description="AB: the key of the A trial whose RTL B started from")
    a_checkpoint: Checkpoint | None = Field(None, description=(
        "C trials of a composing matrix: the first call whose snapshot passes A's oracle (None: none did)"))
    checkpoint_searched: bool = Field(False, description="a_checkpoint was searched for (C trials of a composing matrix)")
    start: LayoutPoint | None = Field(None, description=(
        "B and A+B trials of a composing matrix: the hidden reward of the RTL the trial started from"))
    first_feasible: LayoutPoint | None = Field(None, description=(
        "B, C and A+B trials of a composing matrix: the hidden reward at the first call whose public result "
        "was feasible on the full gates (None: no call was, or not searched)"))
    layout_searched: bool = Field(False, description="start and first_feasible were searched for")
    note: str = ""
    finished_at: str


class ResultStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    def entries(self) -> list[StoreEntry]:
        if not self.path.exists():
            return []
        out = []
        for number, line in enumerate(self.path.read_text().split("\n"), 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError:
                continue  # a line a kill cut off mid-write (sealed by the next append): its trial runs again
            try:
                out.append(StoreEntry.model_validate(data))
            except ValidationError as exc:
                raise InputError(f"{self.path}: line {number}: not a store entry: {validation_message(exc)}") from None
        return out

    def done(self) -> dict[str, StoreEntry]:
        return {entry.key: entry for entry in self.entries()}

    def append(self, entry: StoreEntry) -> None:
        """One whole line per entry, under a lock, synced: concurrent writers never interleave."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            if handle.tell() and not self._ends_with_newline():
                handle.write("\n")  # seal a line a killed writer left unfinished
            handle.write(entry.model_dump_json() + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"
