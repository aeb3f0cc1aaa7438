"""The reward result: what `closer reward --json` prints and `compute_reward` returns.

closer/schemas/reward.schema.json is generated from `RewardResult` (see `closer.reward.schemas`).
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1"

JsonScalar = Union[int, float, str, bool, None]
UsedValue = Union[JsonScalar, list[JsonScalar]]


class GateStatus(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    NOT_REQUIRED = "not_required"
    # a required gate left unmeasured because an earlier required gate already failed (R is 0)
    NOT_MEASURED = "not_measured"


class GateDetail(BaseModel):
    model_config = ConfigDict(frozen=True)
    required: bool
    observed: Literal["pass", "fail", "unmeasured"] = Field(
        description="What the metrics show, also for gates the task does not require")
    reason: str
    values: dict[str, UsedValue] = Field(description="The metric keys the gate read")


class Term(BaseModel):
    model_config = ConfigDict(frozen=True)
    metric: str
    value: float | None = Field(description="Raw metric value; null only when the gate is 0 and "
                                            "the metric was not produced")
    target: float
    weight: float
    ratio: float | None = Field(description="value / target")
    loss: float | None = Field(description="max(0, log(value / target))")
    penalty: float | None = Field(description="weight · loss")
    met: bool | None = Field(description="value <= target")


class DerivedValue(BaseModel):
    model_config = ConfigDict(frozen=True)
    value: float
    unit: str
    formula: str
    inputs: dict[str, float]
    note: str = ""


class SourceInfo(BaseModel):
    model_config = ConfigDict(frozen=True)
    path: str
    kind: str
    sha256: str | None = None
    files: list[str] = Field(default_factory=list)


class Provenance(BaseModel):
    model_config = ConfigDict(frozen=True)
    closer_version: str
    metrics: list[SourceInfo]
    targets_path: str | None = None
    targets_sha256: str | None = None
    run: dict[str, UsedValue] = Field(
        default_factory=dict,
        description="Every run__* key of the metrics: flow/tool versions, platform, design, "
                    "design revision, PDK corner")


class RewardResult(BaseModel):
    """R = G · exp(−Σ_j w_j · max(0, log(m_j / m*_j)))."""

    model_config = ConfigDict(frozen=True)
    schema_version: Literal["1"] = SCHEMA_VERSION
    reward: float = Field(ge=0.0, le=1.0)
    gate: Literal[0, 1]
    gates: dict[str, GateStatus]
    gate_details: dict[str, GateDetail]
    terms: dict[str, Term]
    penalty_total: float | None = Field(
        description="Σ penalties; null when some term has no value (only possible when gate is 0)")
    metrics_used: dict[str, UsedValue]
    derived: dict[str, DerivedValue]
    provenance: Provenance


def result_json(result: RewardResult) -> str:
    """The `--json` text. allow_nan=False: the output is strict JSON; a non-finite number here
    would be a bug, so it fails loudly instead of writing `Infinity`."""
    return json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False, allow_nan=False)
