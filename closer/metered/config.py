"""The task's tool configuration (`.closer/tools.toml`): each tool class's commands as data.

    [run]
    design = "counter"                  # provenance labels
    pdk_corner = "tt_025C_1v80"

    [budget]                            # closer.budget.BudgetOverride
    tier = "low"
    sim = 2                             # any tier number may be overridden

    [surface]                           # the edit surface: fnmatch patterns, `*` crosses `/`
    include = ["*"]
    exclude = []

    [layers]                            # per-task edit-layer patterns (defaults below)
    rtl = ["rtl/*", "*.v"]

    [reward]                            # optional public reward estimate (see estimator.py):
    targets = "targets.toml"            # reward-library targets, relative to .closer/, or
    # estimator = "module:function"     # a task's own estimator

    [tools.sim]
    commands = [["iverilog", "-g2012", "-o", "{results}/sim.vvp", "rtl/counter.v"],
                ["vvp", "{results}/sim.vvp"]]
    timeout_s = 600
    version = ["iverilog", "-V"]        # provenance probe; default: <argv0> --version
    [tools.sim.log_metrics]             # metric key -> regex; group 1 of the last match
    "sim__tests__failed" = 'ERRORS: (\\d+)'

Placeholders in command arguments: `{workspace}`, `{results}` (this call's results folder),
`{metrics}` (the JSON file of public metrics a command may write), `{python}`, `{pdk_root}`;
an argument that is exactly `{args}` is replaced by the arguments the agent passed. Commands
run with the workspace as their working directory.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from closer.budget import BudgetOverride, ToolClass
from closer.metered.argv import ARGS_PLACEHOLDER, PLACEHOLDER, expand_argv, placeholder_values  # noqa: F401
from closer.metered.layers import DEFAULT_LAYER_PATTERNS  # noqa: F401  (re-exported)
from closer.metered.views import (check_commands, check_control_files, check_log_metrics, check_module_attr,
                                  check_one_source, configured_commands, layer_patterns)
from closer.tomlio import load_toml_model
from closer.trajectory.editlayer import EditLayer

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunLabels(_Strict):
    design: str | None = None
    pdk_corner: str | None = None


class SurfaceConfig(_Strict):
    include: list[str] = Field(default_factory=lambda: ["*"])
    exclude: list[str] = Field(default_factory=list)
    max_file_bytes: int = Field(16 << 20, gt=0, description="larger surface files are refused")
    max_total_bytes: int = Field(64 << 20, gt=0, description="the surface's total size limit")


class TreeConfig(_Strict):
    """What a call's tree holds besides the pristine workspace and the snapshot."""

    control_files: list[str] = Field(default_factory=list, description=(
        "files of the control dir the tools read (e.g. the public targets), copied into the tree's "
        ".closer/; the agent never sees the control dir"))

    @field_validator("control_files")
    @classmethod
    def _plain_names(cls, value: list[str]) -> list[str]:
        return check_control_files(value)


class RewardConfig(_Strict):
    estimator: str | None = Field(None, description="'module:attr' of a RewardEstimator")
    targets: str | None = Field(None, description="reward targets TOML (relative to the control dir)")

    @model_validator(mode="after")
    def _one_source(self) -> "RewardConfig":
        check_one_source(self.estimator, self.targets)
        return self

    @field_validator("estimator")
    @classmethod
    def _module_attr(cls, value: str | None) -> str | None:
        return check_module_attr(value)


class ToolCommands(_Strict):
    commands: list[list[str]] = Field(min_length=1, description="argv lists run in order")
    timeout_s: float = Field(3600.0, gt=0)
    metrics_file: str = Field("metrics.json", description="relative to the call's results folder")
    log_metrics: dict[str, str] = Field(default_factory=dict, description="metric key -> regex")
    version: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)

    def with_env(self, extra: dict[str, str]) -> ToolCommands:
        return self.model_copy(update={"env": {**self.env, **extra}})

    @field_validator("commands")
    @classmethod
    def _non_empty_argv(cls, value: list[list[str]]) -> list[list[str]]:
        return check_commands(value)

    @field_validator("log_metrics")
    @classmethod
    def _regexes_compile(cls, value: dict[str, str]) -> dict[str, str]:
        return check_log_metrics(value)


class ToolConfig(_Strict):
    run: RunLabels = RunLabels()
    budget: BudgetOverride = BudgetOverride()
    surface: SurfaceConfig = SurfaceConfig()
    layers: dict[EditLayer, list[str]] = Field(default_factory=dict)
    reward: RewardConfig = RewardConfig()
    tree: TreeConfig = TreeConfig()
    tools: dict[ToolClass, ToolCommands] = Field(default_factory=dict)

    def layer_patterns(self) -> dict[EditLayer, list[str]]:
        """Task patterns where given, defaults elsewhere, in stage order."""
        return layer_patterns(self.layers)

    def commands_for(self, tool: ToolClass, source: Path) -> ToolCommands:
        return configured_commands(self.tools, tool, source)


def load_tool_config(path: Path) -> ToolConfig:
    return load_toml_model(path, ToolConfig, "tool configuration {path} does not exist")
