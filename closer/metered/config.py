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

import re
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from closer.budget import BudgetOverride, ToolClass
from closer.tomlio import load_toml_model
from closer.errors import InputError
from closer.trajectory.editlayer import EditLayer

DEFAULT_LAYER_PATTERNS: dict[EditLayer, list[str]] = {
    EditLayer.RTL: ["rtl/*", "*.v", "*.sv", "*.vh", "*.svh"],
    EditLayer.CONSTRAINT: ["constraints/*", "*.sdc", "*.xdc"],
    EditLayer.FLOORPLAN: ["floorplan/*", "*.def", "*pdn*.tcl", "*macro_placement*"],
    EditLayer.FLOW: ["flow/*", "design.toml", "config.mk", "*.flow.toml"],
}

PLACEHOLDER = re.compile(r"\{(workspace|results|metrics|python|pdk_root)\}")
ARGS_PLACEHOLDER = "{args}"


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
        for name in value:
            if not name or "/" in name or name in (".", ".."):
                raise ValueError(f"{name!r}: a file name in the control dir, without folders")
        return value


class RewardConfig(_Strict):
    estimator: str | None = Field(None, description="'module:attr' of a RewardEstimator")
    targets: str | None = Field(None, description="reward targets TOML (relative to the control dir)")

    @model_validator(mode="after")
    def _one_source(self) -> "RewardConfig":
        if self.estimator is not None and self.targets is not None:
            raise ValueError("give either estimator or targets, not both")
        return self

    @field_validator("estimator")
    @classmethod
    def _module_attr(cls, value: str | None) -> str | None:
        if value is not None and value.count(":") != 1:
            raise ValueError("must be 'module:attribute'")
        return value


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
        if any(not argv for argv in value):
            raise ValueError("every command needs at least the program name")
        return value

    @field_validator("log_metrics")
    @classmethod
    def _regexes_compile(cls, value: dict[str, str]) -> dict[str, str]:
        for key, pattern in value.items():
            try:
                if re.compile(pattern).groups < 1:
                    raise ValueError(f"{key}: regex needs a capture group")
            except re.error as exc:
                raise ValueError(f"{key}: bad regex: {exc}") from exc
        return value


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
        return {layer: self.layers.get(layer, DEFAULT_LAYER_PATTERNS[layer]) for layer in EditLayer}

    def commands_for(self, tool: ToolClass, source: Path) -> ToolCommands:
        if tool not in self.tools:
            configured = ", ".join(t.value for t in self.tools) or "none"
            raise InputError(f"{source}: no [tools.{tool.value}] table; this task configures: {configured}")
        return self.tools[tool]


def load_tool_config(path: Path) -> ToolConfig:
    return load_toml_model(path, ToolConfig, "tool configuration {path} does not exist")


def expand_argv(argv: list[str], values: dict[str, str], agent_args: list[str]) -> list[str]:
    """Substitute the known placeholders; other braces (Tcl, Yosys) are left untouched."""
    out: list[str] = []
    for arg in argv:
        if arg == ARGS_PLACEHOLDER:
            out.extend(agent_args)
        else:
            out.append(PLACEHOLDER.sub(lambda m: values[m.group(1)], arg))
    return out


def placeholder_values(workspace: Path, results: Path, metrics: Path, pdk_root: Path) -> dict[str, str]:
    return {"workspace": str(workspace), "results": str(results), "metrics": str(metrics),
            "python": sys.executable, "pdk_root": str(pdk_root)}
