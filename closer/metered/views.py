"""The run header (`run.json`) and the tool configuration (`tools.toml`) as msgspec Structs: what a
metered call reads on its hot path, without pydantic (whose import and model building alone cost
a standalone `closer-tool` call several times the 50 ms it may add to its tools).

Each view mirrors its model (`closer.trajectory.record.RunInfo`, `closer.metered.config.ToolConfig`)
field for field, with the same names, bounds and checks (the checks are the functions below, which
the models call too). A file the view refuses goes to the model, which decides and words the error
(one line naming the file and the key); a file the model takes in a lax form (a "5" for an int)
comes back as the view of the model's values. The `[budget]` table of tools.toml is kept as it
was read: the run's budget is the run header's, and `closer-tool` refuses a tools.toml whose bytes
differ from those validated, budget included, when the run started (tests/test_metered_views.py
checks the views against the models on generated good and perturbed files).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

import msgspec
from msgspec import Meta, Struct

from closer.errors import InputError
from closer.inputs import JsonShapeError, parse_json, read_bytes
from closer.metered.layers import DEFAULT_LAYER_PATTERNS
from closer.tomlio import load_toml
from closer.toolclass import ToolClass
from closer.trajectory.editlayer import EditLayer

# allow_inf_nan=False: a float field refuses infinities (JSON 1e999 decodes to inf)
NonNegative = Annotated[float, Meta(ge=0, le=sys.float_info.max)]
Positive = Annotated[float, Meta(gt=0, le=sys.float_info.max)]
Count = Annotated[int, Meta(ge=0)]
PositiveInt = Annotated[int, Meta(gt=0)]
VIEW_REFUSALS = (msgspec.ValidationError,)


class _Strict(Struct, forbid_unknown_fields=True):
    pass


# ---------------------------------------------------------------- checks the models share

def check_control_files(names: list[str]) -> list[str]:
    for name in names:
        if not name or "/" in name or name in (".", ".."):
            raise ValueError(f"{name!r}: a file name in the control dir, without folders")
    return names


def check_module_attr(spec: str | None) -> str | None:
    if spec is not None and spec.count(":") != 1:
        raise ValueError("must be 'module:attribute'")
    return spec


def check_one_source(estimator: str | None, targets: str | None) -> None:
    if estimator is not None and targets is not None:
        raise ValueError("give either estimator or targets, not both")


def check_commands(commands: list[list[str]]) -> list[list[str]]:
    if any(not argv for argv in commands):
        raise ValueError("every command needs at least the program name")
    return commands


def check_log_metrics(patterns: dict[str, str]) -> dict[str, str]:
    for key, pattern in patterns.items():
        try:
            if re.compile(pattern).groups < 1:
                raise ValueError(f"{key}: regex needs a capture group")
        except re.error as exc:
            raise ValueError(f"{key}: bad regex: {exc}") from exc
    return patterns


def configured_commands(tools: dict, tool: ToolClass, source: Path):
    """The commands of `tool` in a configuration's `tools` table, or the error naming the file."""
    if tool not in tools:
        names = ", ".join(t.value for t in tools) or "none"
        raise InputError(f"{source}: no [tools.{tool.value}] table; this task configures: {names}")
    return tools[tool]


def layer_patterns(layers: dict[EditLayer, list[str]]) -> dict[EditLayer, list[str]]:
    """Task patterns where given, defaults elsewhere, in stage order."""
    return {layer: layers.get(layer, DEFAULT_LAYER_PATTERNS[layer]) for layer in EditLayer}


# ---------------------------------------------------------------- run.json

class CostWeightsView(_Strict):
    sim: NonNegative
    synth: NonNegative
    pnr: NonNegative
    verify: NonNegative

    def of(self, tool: ToolClass) -> float:
        return getattr(self, tool.value)


class StagnationView(_Strict):
    window_calls: PositiveInt
    window_cost_units: Positive


class BudgetView(_Strict):
    tier: str
    caps: dict[ToolClass, Count | None]
    wall_s: Positive
    cost_units: Positive
    weights: CostWeightsView
    stagnation: StagnationView
    overridden: list[str] = []

    def cap(self, tool: ToolClass) -> int | None:
        return self.caps[tool]


class ProvenanceView(_Strict):
    closer_version: str
    design_revision: str
    tool_versions: dict[str, str] = {}
    pdk_corner: str | None = None
    design: str | None = None


class RunView(_Strict):
    run_id: str
    workspace: str
    started_at: datetime
    budget: BudgetView
    provenance: ProvenanceView
    baseline_snapshot: str
    tools_config_sha256: str
    schema_version: Literal["1"] = "1"


# ---------------------------------------------------------------- tools.toml

class RunLabelsView(_Strict):
    design: str | None = None
    pdk_corner: str | None = None


class SurfaceView(_Strict):
    include: list[str] = msgspec.field(default_factory=lambda: ["*"])
    exclude: list[str] = []
    max_file_bytes: PositiveInt = 16 << 20
    max_total_bytes: PositiveInt = 64 << 20


class TreeView(_Strict):
    control_files: list[str] = []

    def __post_init__(self) -> None:
        check_control_files(self.control_files)


class RewardView(_Strict):
    estimator: str | None = None
    targets: str | None = None

    def __post_init__(self) -> None:
        check_module_attr(self.estimator)
        check_one_source(self.estimator, self.targets)


class ToolCommandsView(_Strict):
    commands: Annotated[list[list[str]], Meta(min_length=1)]
    timeout_s: Positive = 3600.0
    metrics_file: str = "metrics.json"
    log_metrics: dict[str, str] = {}
    version: list[str] | None = None
    env: dict[str, str] = {}

    def __post_init__(self) -> None:
        check_commands(self.commands)
        check_log_metrics(self.log_metrics)

    def with_env(self, extra: dict[str, str]) -> ToolCommandsView:
        return msgspec.structs.replace(self, env={**self.env, **extra})


class ToolConfigView(_Strict):
    run: RunLabelsView = msgspec.field(default_factory=RunLabelsView)
    budget: dict[str, object] = {}  # the run header's budget is the run's (see the module's docstring)
    surface: SurfaceView = msgspec.field(default_factory=SurfaceView)
    layers: dict[EditLayer, list[str]] = {}
    reward: RewardView = msgspec.field(default_factory=RewardView)
    tree: TreeView = msgspec.field(default_factory=TreeView)
    tools: dict[ToolClass, ToolCommandsView] = {}

    def layer_patterns(self) -> dict[EditLayer, list[str]]:
        return layer_patterns(self.layers)

    def commands_for(self, tool: ToolClass, source: Path) -> ToolCommandsView:
        return configured_commands(self.tools, tool, source)


# ---------------------------------------------------------------- loading

def load_run_view(path: Path) -> RunView:
    """run.json as read by `closer.metered.run.load_run_info` (same checks, same errors)."""
    if not path.exists() and not path.is_symlink():
        raise InputError(f"{path} does not exist: the run has not been started")
    raw = read_bytes(path, "run header")
    try:
        data = parse_json(raw)
    except JsonShapeError as exc:
        raise InputError(f"{path}: run header: {exc}") from None

    def by_model():
        from closer.inputs import load_json_model
        from closer.trajectory.record import RunInfo

        return load_json_model(path, RunInfo, "run header")

    return _view(data, RunView, by_model)


def load_tool_view(path: Path) -> ToolConfigView:
    """tools.toml as read by `closer.metered.config.load_tool_config` (same checks, same errors)."""
    data = load_toml(path, "tool configuration {path} does not exist")

    def by_model():
        from closer.metered.config import load_tool_config

        return load_tool_config(path)

    return _view(data, ToolConfigView, by_model)


def _view(data: object, view: type, by_model: Callable) -> object:
    try:
        return msgspec.convert(data, view)
    except VIEW_REFUSALS:
        return msgspec.convert(by_model().model_dump(mode="json"), view)
