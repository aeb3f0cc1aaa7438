"""Typed models of the task generator's inputs (a design's tasks.toml) and outputs (task.json,
hidden.json, the manifests, suite.json). One model per file others read; each has a JSON Schema
in closer/schemas/ exported from the model (`closer.tasks.schemas`)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from closer.tomlio import load_toml_model
from closer.trajectory.record import EditLayer

SUITE_VERSION = "0.1.0"
BUDGET_TIERS: tuple[str, ...] = ("low", "medium", "high")


class TaskKind(StrEnum):
    A = "A"  # spec -> verified RTL
    B = "B"  # weak RTL -> GDS
    C = "C"  # spec -> GDS


KIND_TITLES = {
    TaskKind.A: "spec to verified RTL",
    TaskKind.B: "weak RTL to GDS",
    TaskKind.C: "spec to GDS",
}


class StartPoint(StrEnum):
    SKELETON = "skeleton"  # the golden top module's interface, no logic
    WEAK = "weak"          # the weak-but-correct variant
    GOLDEN = "golden"      # the golden RTL itself


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Conditions(_Strict):
    """The workload the functional oracle drives (public: in the workspace; hidden: evaluator only)."""

    configs: list[str] = Field(min_length=1, description="design.toml configs (widths) simulated")
    seeds: list[int] = Field(min_length=1, description="one test per seed")
    count: int = Field(gt=0, description="requests per seed")
    backpressure: bool = Field(False, description="random back-pressure and request gaps")
    edge_cases: bool = Field(False, description="also run the edge-case test")
    gls_seeds: list[int] = Field(default_factory=list, description="seeds of the gate-level run")
    gls_count: int = Field(8, gt=0, description="requests per seed in the gate-level run")


class TargetSpec(_Strict):
    name: str
    metric: str
    target: float = Field(gt=0)
    weight: float = Field(ge=0)


class KindSpec(_Strict):
    start: StartPoint = Field(description="what the workspace's edit surface starts as")
    edit_surface: dict[str, EditLayer] = Field(
        min_length=1, description="fnmatch pattern (workspace-relative, `*` crosses `/`) -> layer")
    gates: list[str] = Field(description="required gates (closer.reward gate names)")
    flow_to: Literal["sta", "finish"] = Field(description="last flow step the evaluator runs")


class DesignTasks(_Strict):
    """designs/<name>/tasks.toml."""

    spec: Path
    config: str = "default"
    oracle: Path
    test_module: str
    weak: Path | None = None
    reference: dict[str, Path] = Field(min_length=1, description="workspace path -> design file")
    public: Conditions
    hidden: Conditions
    kinds: dict[TaskKind, KindSpec]
    targets: dict[TaskKind, list[TargetSpec]] = Field(default_factory=dict)

    @field_validator("kinds")
    @classmethod
    def _all_kinds(cls, kinds: dict[TaskKind, KindSpec]) -> dict[TaskKind, KindSpec]:
        missing = [k.value for k in TaskKind if k not in kinds]
        if missing:
            raise ValueError(f"kinds {missing} are not described")
        return kinds


def load_design_tasks(path: Path) -> DesignTasks:
    return load_toml_model(path, DesignTasks,
                           "{path} does not exist: the design has no task description")


class TaskConfig(_Strict):
    """task.json: everything about a task that is not hidden."""

    schema_version: Literal["1"] = "1"
    task_id: str
    suite_version: str
    design: str
    top: str
    config: str = Field(description="design.toml config the task is scored with")
    kind: TaskKind
    budget_tier: str
    rtl: list[str] = Field(description="workspace-relative RTL files in compile order")
    sdc: str = Field(description="workspace-relative SDC file")
    clock_port: str
    clock_period_ns: float
    edit_surface: dict[str, EditLayer]
    public: Conditions
    test_module: str
    flow_to: Literal["sta", "finish"]
    design_revision: str = Field(description="SHA-256 (16 hex) of the golden design files")
    parameters: dict[str, dict[str, int | str | bool]] = Field(
        description="top-module parameters of the scoring config and the public configs")


class HiddenConfig(_Strict):
    """hidden.json: the evaluator's conditions and gates (never copied into a workspace)."""

    schema_version: Literal["1"] = "1"
    task_id: str
    hidden: Conditions
    gates: list[str]
    parameters: dict[str, dict[str, int | str | bool]] = Field(
        description="top-module parameters of the scoring config and the hidden configs")
    targets_file: str = "targets.toml"
    solution_dir: str = "solution"
    oracle_dir: str = "oracle"


class FileDigest(_Strict):
    path: str
    sha256: str
    size: int


class LockedManifest(_Strict):
    """manifests/locked.json: SHA-256 of every workspace file outside the edit surface."""

    schema_version: Literal["1"] = "1"
    task_id: str
    files: list[FileDigest]


class SuiteEntry(_Strict):
    task_id: str
    design: str
    kind: TaskKind
    budget_tier: str
    path: str = Field(description="task folder, relative to the suite folder")
    checksum: str = Field(description="SHA-256 over the task folder's files (path and content)")
    hidden_checksum: str = Field(description="SHA-256 over the task's hidden folder")


class SuiteManifest(_Strict):
    schema_version: Literal["1"] = "1"
    suite_version: str
    generated_at: str
    closer_version: str
    tasks: list[SuiteEntry]
