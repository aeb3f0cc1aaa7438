"""The targets file (TOML): which gates a task requires and the metric targets of the reward.

    clock_period = 2.5            # optional, ns; overrides constraints__clocks__details
    [gates]
    required = ["route"]          # any of func, lec, gls, sta, route, drc, lvs, antenna
    [[targets]]
    name = "area"
    metric = "finish__design__instance__area"
    target = 4000.0               # finite, > 0, in the metric's unit
    weight = 1.0                  # finite, >= 0

Every target is lower-is-better: its penalty is weight · max(0, log(value / target)).
"""

from __future__ import annotations

import hashlib
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from closer.metrics import higher_is_better, normalize_key
from closer.reward.errors import TargetsFileError


class GateName(StrEnum):
    FUNC = "func"
    LEC = "lec"
    GLS = "gls"
    STA = "sta"
    ROUTE = "route"
    DRC = "drc"
    LVS = "lvs"
    ANTENNA = "antenna"


GATE_ORDER: tuple[GateName, ...] = tuple(GateName)

_STRICT = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)


class GatesSection(BaseModel):
    model_config = _STRICT
    required: list[GateName] = Field(
        description="Gates the task requires; the others are stage-inapplicable and count as 1."
    )

    @field_validator("required", mode="before")
    @classmethod
    def _names(cls, value):
        if isinstance(value, list):
            unknown = [v for v in value if v not in {g.value for g in GateName}]
            if unknown:
                raise ValueError(
                    f"unknown gate(s) {unknown}; gates are {', '.join(g.value for g in GateName)}"
                )
            return [GateName(v) for v in value]
        return value

    @field_validator("required")
    @classmethod
    def _unique(cls, value: list[GateName]) -> list[GateName]:
        duplicates = sorted({g.value for g in value if value.count(g) > 1})
        if duplicates:
            raise ValueError(f"gate(s) listed twice: {duplicates}")
        return value


class Target(BaseModel):
    model_config = _STRICT
    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_.\-]*$",
                               description="Unique name of the term")]
    metric: Annotated[str, Field(min_length=1,
                                 description="Metric key (ORFS scheme) or derived metric name")]
    target: Annotated[float, Field(gt=0, le=1e30, description=(
        "Value at or below which the penalty is 0 (1e-30 to 1e30, like every metric number)"))]
    weight: Annotated[float, Field(ge=0, le=1e6, description="Weight of log(value/target) in the exponent")]

    @field_validator("target")
    @classmethod
    def _not_tiny(cls, value: float) -> float:
        if value < 1e-30:
            raise ValueError(f"must be at least 1e-30 (got {value!r})")
        return value

    @field_validator("metric")
    @classmethod
    def _normalize(cls, value: str) -> str:
        if higher_is_better(value):
            raise ValueError(
                f"'{value}' is higher-is-better (slack or fmax) but every target is minimized; "
                "use effective_clock_period")
        return normalize_key(value)


class Targets(BaseModel):
    """The parsed targets file."""

    model_config = _STRICT
    gates: GatesSection
    targets: list[Target] = Field(default_factory=list)
    clock_period: Annotated[float | None, Field(
        default=None, gt=0, le=1e6, description="Clock period in ns for derived timing metrics; "
        "overrides constraints__clocks__details")]

    @model_validator(mode="after")
    def _check(self) -> "Targets":
        names = [t.name for t in self.targets]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate target name(s) {duplicates}")
        if not self.targets and not self.gates.required:
            raise ValueError("no targets and no required gates: nothing to score")
        return self

    @property
    def required(self) -> frozenset[GateName]:
        return frozenset(self.gates.required)


class LoadedTargets(BaseModel):
    """Targets plus where they came from (for provenance)."""

    model_config = ConfigDict(frozen=True)
    targets: Targets
    path: str
    sha256: str


def load_targets(path: Path | str) -> LoadedTargets:
    path = Path(path)
    if not path.is_file():
        kind = "a directory, not a targets file" if path.is_dir() else "no such targets file"
        raise TargetsFileError(f"{path}: {kind}")
    raw = path.read_bytes()
    if not raw.strip():
        raise TargetsFileError(f"{path}: file is empty")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise TargetsFileError(f"{path}: not UTF-8 text ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise TargetsFileError(f"{path}: malformed TOML: {exc}") from None
    except RecursionError:
        raise TargetsFileError(f"{path}: malformed TOML: nested too deeply") from None
    except ValueError as exc:  # an integer too long to convert
        raise TargetsFileError(f"{path}: malformed TOML: {str(exc).split(':')[0]}") from None
    return LoadedTargets(targets=targets_from_dict(data, str(path)), path=str(path),
                         sha256=hashlib.sha256(raw).hexdigest())


def targets_from_dict(data: dict, where: str = "<targets>") -> Targets:
    try:
        return Targets.model_validate(data)
    except ValidationError as exc:
        problems = [f"{_location(e['loc'], data)}: {_message(e)}" for e in exc.errors()]
        raise TargetsFileError(f"{where}: " + "; ".join(problems)) from None


def _location(loc: tuple, data: dict) -> str:
    if not loc:
        return "(file)"
    parts: list[str] = []
    for i, part in enumerate(loc):
        if isinstance(part, int):
            label = f"[{part}]"
            if loc[:i] == ("targets",):
                name = _target_name(data, part)
                label = f"[{part}] (name={name!r})" if name else label
            parts.append(label)
        else:
            parts.append(("." if parts else "") + str(part))
    return "".join(parts)


def _target_name(data: dict, index: int) -> str | None:
    try:
        name = data["targets"][index]["name"]
    except (KeyError, IndexError, TypeError):
        return None
    return name if isinstance(name, str) else None


def _message(error: dict) -> str:
    kind = error["type"]
    if kind == "missing":
        return "required key is missing"
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "finite_number":
        return f"must be a finite number, got {error.get('input')!r}"
    if kind in ("float_type", "int_type", "string_type", "list_type", "model_type"):
        return f"{error['msg'].lower()}, got {type(error.get('input')).__name__} {error.get('input')!r}"
    return error["msg"].removeprefix("Value error, ") + (
        f" (got {error.get('input')!r})" if kind in ("greater_than", "greater_than_equal") else ""
    )
