"""Typed models of the task generator's inputs (a design's tasks.toml) and outputs (task.json,
hidden.json, the manifests, suite.json). One model per file others read; each has a JSON Schema
in closer/schemas/ exported from the model (`closer.tasks.schemas`)."""

from __future__ import annotations

import string
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from closer.errors import InputError
from closer.sdc.policy import SdcException
from closer.tomlio import load_toml_model
from closer.trajectory.editlayer import EditLayer

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


# The fields an oracle environment template may use (`closer.tasks.checks.oracle_env` fills them).
ORACLE_ENV_FIELDS = {
    "seeds": "comma-separated seeds (gate-level run: gls_seeds)",
    "count": "requests per seed (gate-level run: gls_count)",
    "backpressure": "1 or 0",
    "edge_cases": "1 or 0 (always 0 in the gate-level run)",
    "workload_json": "the workload table as JSON (gate-level run: workload updated by gls_workload)",
    "report_dir": "folder where each test writes <test>.json with its cycle count",
    "config": "the design.toml config being simulated",
    "param": "top-module parameters of that config, as {param[NAME]}",
}


def template_fields(template: str) -> set[str]:
    """Root names of the replacement fields of a str.format template ({param[N]} -> param)."""
    roots = set()
    for _, name, _, _ in string.Formatter().parse(template):
        if name is not None:
            roots.add(name.split("[", 1)[0].split(".", 1)[0])
    return roots


def check_env_templates(mapping: dict[str, str]) -> dict[str, str]:
    for var, template in mapping.items():
        try:
            unknown = template_fields(template) - set(ORACLE_ENV_FIELDS)
        except ValueError as exc:
            raise ValueError(f"{var}: bad template {template!r}: {exc}") from exc
        if unknown:
            raise ValueError(f"{var}: unknown field(s) {sorted(unknown)} in {template!r}; "
                             f"fields: {sorted(ORACLE_ENV_FIELDS)}")
    return mapping


class OracleEnv(_Strict):
    """How conditions reach a design's cocotb oracle: environment variable -> template over the
    condition fields (ORACLE_ENV_FIELDS). Written once per design in tasks.toml ([oracle_env],
    [oracle_gls_env]) and carried by every Conditions, so the public tools and the evaluator
    render the same contract."""

    env: dict[str, str] = Field(min_length=1, description="variable -> template, every run")
    gls_env: dict[str, str] = Field(default_factory=dict,
                                    description="variable -> template, added for the gate-level run")

    @field_validator("env", "gls_env")
    @classmethod
    def _known_fields(cls, mapping: dict[str, str]) -> dict[str, str]:
        return check_env_templates(mapping)


class ConfigConditions(_Strict):
    """Per-config replacements of a Conditions' seeds, count and workload (e.g. other seeds for a
    wider configuration)."""

    seeds: list[int] | None = Field(None, min_length=1)
    count: int | None = Field(None, gt=0)
    workload: dict[str, Any] | None = None


class PhysicalConditions(_Strict):
    """The physical flow's conditions (kinds B/C): the corners STA reports (every one is gated) and
    the placer's IO-order seed. Public ones are in task.json; hidden ones add corners and use
    another seed."""

    corners: list[str] = Field(min_length=1, description="STA corners (closer.pdk.ALL_CORNERS)")
    place_seed: int = Field(0, ge=0, description="placer IO-order seed (0: name order)")

    @field_validator("corners")
    @classmethod
    def _known(cls, corners: list[str]) -> list[str]:
        from closer.pdk import ALL_CORNERS

        unknown = [c for c in corners if c not in ALL_CORNERS]
        if unknown:
            raise ValueError(f"unknown corner(s) {unknown}; known: {', '.join(ALL_CORNERS)}")
        return corners


class Conditions(_Strict):
    """The workload the functional oracle drives (public: in the workspace; hidden: evaluator only)."""

    configs: list[str] = Field(min_length=1, description="design.toml configs (widths) simulated")
    seeds: list[int] = Field(min_length=1, description="one test per seed")
    count: int | None = Field(None, gt=0, description="requests per seed (if the oracle takes a count)")
    backpressure: bool = Field(False, description="random back-pressure and request gaps")
    edge_cases: bool = Field(False, description="also run the edge-case test")
    gls_seeds: list[int] = Field(default_factory=list, description="seeds of the gate-level run")
    gls_count: int = Field(8, gt=0, description="requests per seed in the gate-level run")
    workload: dict[str, Any] = Field(default_factory=dict,
                                     description="oracle-specific workload knobs ({workload_json})")
    gls_workload: dict[str, Any] = Field(default_factory=dict,
                                         description="workload entries replaced in the gate-level run")
    by_config: dict[str, ConfigConditions] = Field(
        default_factory=dict, description="config -> its own seeds/count/workload")
    oracle_env: OracleEnv | None = Field(
        None, description="the oracle's environment contract (filled from tasks.toml [oracle_env])")
    physical: PhysicalConditions | None = Field(
        None, description="physical flow conditions (kinds whose flow_to is finish)")

    @model_validator(mode="after")
    def _by_config_simulated(self) -> "Conditions":
        extra = sorted(set(self.by_config) - set(self.configs))
        if extra:
            raise ValueError(f"by_config names config(s) {extra} that are not in configs {self.configs}")
        return self

    def for_config(self, config: str) -> "Conditions":
        """These conditions with `config`'s own seeds/count/workload in place."""
        override = self.by_config.get(config)
        if override is None:
            return self
        return self.model_copy(update={k: v for k, v in override.model_dump().items() if v is not None})


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
    sdc_exceptions: list[SdcException] = Field(
        default_factory=list, description="timing exceptions the kind's SDC may use (default none)")


class InstructionWording(_Strict):
    """[instruction]: the design's own words in the generated instruction.md."""

    workload_unit: str = Field("requests", min_length=1, max_length=60,
                               description="what the oracle's count counts, e.g. 'words popped'")
    hidden_variation: str = Field(
        "other seeds, other parameter values", min_length=1, max_length=200,
        description="how the hidden workloads differ from the public ones, in a few words")


class TaskTargets(_Strict):
    """The file tasks.toml `targets_file` names (written by `closer design calibrate`)."""

    targets: dict[TaskKind, list[TargetSpec]]


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
    targets_file: Path | None = Field(None, description=(
        "a TOML file of [[targets.<kind>]] tables (TaskTargets) instead of [targets] here"))
    instruction: InstructionWording = Field(default_factory=InstructionWording)
    oracle_env: dict[str, str] = Field(
        min_length=1, description="the oracle's environment: variable -> template (ORACLE_ENV_FIELDS)")
    oracle_gls_env: dict[str, str] = Field(
        default_factory=dict, description="variables added for the gate-level run")

    @field_validator("oracle_env", "oracle_gls_env")
    @classmethod
    def _known_fields(cls, mapping: dict[str, str]) -> dict[str, str]:
        return check_env_templates(mapping)

    @field_validator("targets_file")
    @classmethod
    def _inside_folder(cls, path: Path | None) -> Path | None:
        """`closer design calibrate` overwrites this file: never one outside the design folder."""
        if path is not None and (path.is_absolute() or ".." in path.parts):
            raise ValueError("must be a relative path inside the design folder")
        return path

    @model_validator(mode="after")
    def _conditions_carry_env(self) -> "DesignTasks":
        """Both condition sets carry the one oracle contract (set here, never in [public]/[hidden])."""
        contract = OracleEnv(env=self.oracle_env, gls_env=self.oracle_gls_env)
        for which in ("public", "hidden"):
            cond: Conditions = getattr(self, which)
            if cond.oracle_env is not None and cond.oracle_env != contract:
                raise ValueError(f"{which}.oracle_env: set the oracle contract in [oracle_env], "
                                 "not per condition set")
            setattr(self, which, cond.model_copy(update={"oracle_env": contract}))
        return self

    @field_validator("kinds")
    @classmethod
    def _all_kinds(cls, kinds: dict[TaskKind, KindSpec]) -> dict[TaskKind, KindSpec]:
        missing = [k.value for k in TaskKind if k not in kinds]
        if missing:
            raise ValueError(f"kinds {missing} are not described")
        return kinds


def load_design_tasks(path: Path) -> DesignTasks:
    """tasks.toml, with the targets of its `targets_file` in place."""
    tasks = load_toml_model(path, DesignTasks,
                            "{path} does not exist: the design has no task description")
    if tasks.targets_file is None:
        return tasks
    if tasks.targets:
        raise InputError(f"{path}: keys targets and targets_file: give the targets in one place")
    extra = load_toml_model(path.parent / tasks.targets_file, TaskTargets,
                            "{path} (tasks.toml key targets_file) does not exist: "
                            "run `closer design calibrate`")
    return tasks.model_copy(update={"targets": extra.targets})


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
    sdc_exceptions: list[SdcException] = Field(
        default_factory=list, description="timing exceptions the SDC may use (closer.sdc; default none)")
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
    golden_func_s: float | None = Field(None, ge=0, description=(
        "wall time of the hidden functional tests on the golden RTL, measured by `closer task generate`; "
        "each evaluation simulation may take closer.tasks.checks.SIM_TIMEOUT_MULTIPLE times it"))


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
    design_checks: dict[str, str] = Field(default_factory=dict, description=(
        "design -> the passing `closer design check` record its tasks were generated from, or "
        "'unchecked' (--unchecked)"))
    tasks: list[SuiteEntry]
