"""The trajectory record and the run header: pydantic models, exported as JSON Schemas.

A run directory holds `run.json` (one `RunInfo`) and `trajectory.jsonl` (one `TrajectoryRecord`
per line, in call order). `closer/schemas/trajectory-record.schema.json` and
`trajectory-run.schema.json` are generated from these models (`export_schemas`).
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from closer.budget import Budget, ToolClass
from closer.paths import schema_path
from closer.trajectory.editlayer import LAYER_STAGE, EditLayer  # noqa: F401  (part of the record's vocabulary)
from closer.trajectory.outcome import Outcome

SCHEMA_VERSION = "1"
SchemaVersion = Literal["1"]

# A reward estimate: the reward is in [0, 1] by construction (G · exp(-penalty)).
Reward = Annotated[float, Field(ge=0, le=1)]

# Metric values are JSON: ORFS-style metadata holds a few lists and objects besides the numbers
# (constraints__clocks__details, run__flow__platform__corners).
MetricValue = JsonValue


# Stage rank of the feedback of each tool class (the edit layers' ranks: LAYER_STAGE).
TOOL_STAGE = {ToolClass.SIM: 0, ToolClass.SYNTH: 1, ToolClass.PNR: 2, ToolClass.VERIFY: 3}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def _finite_json(value: object, where: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} is {value}; numbers must be finite")
    if isinstance(value, dict):
        for key, item in value.items():
            _finite_json(item, f"{where}.{key}")
    elif isinstance(value, list):
        for item in value:
            _finite_json(item, where)


class FileChanges(_Model):
    """Edit-surface paths (relative, POSIX) changed since the previous call's snapshot."""

    added: list[str] = Field(default_factory=list)
    modified: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)

    @property
    def all(self) -> list[str]:
        return self.added + self.modified + self.deleted

    @property
    def empty(self) -> bool:
        return not (self.added or self.modified or self.deleted)


class CallCost(_Model):
    counted: bool = Field(description="whether the call counts against its class's cap")
    units: float = Field(ge=0, description="weighted cost charged (0 when not counted)")
    tool_wall_s: float = Field(ge=0, description="wall time of the tool commands")
    peak_rss_mb: float | None = Field(None, description="largest peak RSS of the tool commands")
    reused: bool = Field(False, description=(
        "the call's flow run was served from the run's flow cache (an unchanged design); charged "
        "like any other call (docs/tasks.md, budget rules)"))


class TrajectoryRecord(_Model):
    schema_version: SchemaVersion = SCHEMA_VERSION
    seq: int = Field(ge=1, description="1-based call number within the run")
    run_id: str
    started_at: datetime = Field(description="UTC start of the call (lock taken)")
    ended_at: datetime = Field(description="UTC end of the call")
    elapsed_s: float = Field(ge=0, description="seconds from the run's start to the call's end")
    tool: ToolClass
    args: list[str] = Field(default_factory=list, description="arguments the agent passed")
    surface_digest: str | None = Field(description="sha256 of the edit-surface snapshot manifest")
    changes: FileChanges = Field(default_factory=FileChanges)
    layers: list[EditLayer] = Field(default_factory=list, description="layers the changes touch")
    unclassified: list[str] = Field(default_factory=list, description="changed files in no layer")
    refused: list[str] = Field(default_factory=list, description=(
        "edit-surface entries not taken into the snapshot, each 'path: reason' (symlinks, special "
        "files, files over the size limits)"))
    cost: CallCost
    outcome: Outcome
    message: str = ""
    exit_codes: list[int] = Field(default_factory=list, description="exit code of each command run")
    metrics: dict[str, MetricValue] = Field(default_factory=dict, description="public metrics")
    reward: Reward | None = Field(None, description=(
        "public reward estimate of a call that evaluated the stage's full gate set"))
    feasible: bool | None = Field(None, description="whether the reward gate passed (full-gate calls only)")
    partial_reward: Reward | None = Field(None, description=(
        "estimate of a call that did not evaluate the full gate set: informational, never in best_reward"))
    best_reward: Reward | None = Field(None, description="best public reward so far, this call included")
    remaining: dict[str, float | None] = Field(
        default_factory=dict, description="calls left per class and wall_s left, after this call")
    results_dir: str | None = Field(None, description="workspace-relative folder of this call's outputs")

    @field_validator("metrics")
    @classmethod
    def _finite_metrics(cls, metrics: dict[str, MetricValue]) -> dict[str, MetricValue]:
        for key, value in metrics.items():
            _finite_json(value, key)
        return metrics

    @model_validator(mode="after")
    def _ends_after_start(self) -> TrajectoryRecord:
        if self.ended_at < self.started_at:
            raise ValueError(f"ended_at {self.ended_at.isoformat()} is before started_at "
                             f"{self.started_at.isoformat()}")
        return self


class Provenance(_Model):
    closer_version: str
    tool_versions: dict[str, str] = Field(default_factory=dict, description="class -> version line")
    pdk_corner: str | None = None
    design: str | None = None
    design_revision: str = Field(description="digest of the starting edit surface")


class RunInfo(_Model):
    schema_version: SchemaVersion = SCHEMA_VERSION
    run_id: str
    workspace: str
    started_at: datetime
    budget: Budget
    provenance: Provenance
    baseline_snapshot: str = Field(description="manifest digest of the starting edit surface")
    tools_config_sha256: str = Field(description="sha256 of tools.toml at the start; calls check it")


SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "trajectory-record": TrajectoryRecord,
    "trajectory-run": RunInfo,
}


def schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"


def schema_models() -> dict[str, type[BaseModel]]:
    from closer.trajectory.measures import TrajectorySummary

    return {**SCHEMA_MODELS, "trajectory-summary": TrajectorySummary}


def export_schemas() -> list[Path]:
    """Write the JSON Schemas of the trajectory files (and of `summarize --json`) into closer/schemas/."""
    written = []
    for name, model in schema_models().items():
        path = schema_path(name)
        path.write_text(schema_text(model))
        written.append(path)
    return written
