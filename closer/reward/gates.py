"""The eight gates, each a declaration of checks on metric keys (docs/reward.md renders the table).

A gate is `unmeasured` when a non-optional check finds none of its keys, `fail` when any check
fails, else `pass`. A per-corner check reads the unqualified key and every `__corner__<c>` key
present ("every reported corner"); an optional check applies only where its key exists.
The same declarations drive the scalar path here and the vectorized path in `frame.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Mapping

from closer import metrics as mk
from closer.reward.errors import MetricsFileError
from closer.reward.metrics_file import Metrics
from closer.reward.targets import GateName


class Op(StrEnum):
    EQ_ZERO = "== 0"
    GE_ZERO = ">= 0"
    GT_ZERO = "> 0"
    EQUALS = "equals"


class Observed(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    UNMEASURED = "unmeasured"


@dataclass(frozen=True)
class Check:
    key: str
    op: Op
    expected: str | None = None  # for Op.EQUALS
    per_corner: bool = False
    optional: bool = False

    def describe(self) -> str:
        where = " at every reported corner" if self.per_corner else ""
        cond = f"== '{self.expected}'" if self.op is Op.EQUALS else self.op.value
        note = " (where the key exists)" if self.optional else ""
        return f"`{self.key}` {cond}{where}{note}"


@dataclass(frozen=True)
class Gate:
    name: GateName
    description: str
    checks: tuple[Check, ...]
    # keys with this prefix show the stage started; if the main key is missing but these exist,
    # the stage did not finish and the gate fails instead of being unmeasured
    started_prefix: str | None = None
    unmeasured_hint: str = ""


GATES: dict[GateName, Gate] = {
    g.name: g
    for g in (
        Gate(GateName.FUNC, "RTL functional tests pass",
             (Check(mk.FUNC_TESTS_FAILED, Op.EQ_ZERO),
              Check(mk.FUNC_TESTS_TOTAL, Op.GT_ZERO, optional=True)),
             unmeasured_hint="no functional test result"),
        Gate(GateName.LEC, "RTL and final netlist are equivalent",
             (Check(mk.LEC_RESULT, Op.EQUALS, expected=mk.LEC_EQUIVALENT),),
             unmeasured_hint="no equivalence-check result"),
        Gate(GateName.GLS, "gate-level simulation passes",
             (Check(mk.GLS_TESTS_FAILED, Op.EQ_ZERO),
              Check(mk.GLS_TESTS_TOTAL, Op.GT_ZERO, optional=True)),
             unmeasured_hint="no gate-level simulation result"),
        Gate(GateName.STA, "sign-off timing is clean apart from setup (which the reward scores)",
             (Check(mk.HOLD_WS, Op.GE_ZERO, per_corner=True),
              Check(mk.DRV_MAX_SLEW, Op.EQ_ZERO, per_corner=True),
              Check(mk.DRV_MAX_CAP, Op.EQ_ZERO, per_corner=True),
              Check(mk.UNCONSTRAINED_ENDPOINTS, Op.EQ_ZERO, optional=True)),
             unmeasured_hint="no finish-stage timing metrics"),
        Gate(GateName.ROUTE, "detailed routing finished with no DRC errors and no unrouted net",
             (Check(mk.ROUTE_DRC_ERRORS, Op.EQ_ZERO),
              Check(mk.ROUTE_UNROUTED_NETS, Op.EQ_ZERO, optional=True)),
             started_prefix=mk.ROUTE_DRC_ITER_PREFIX,
             unmeasured_hint="no detailed-routing result"),
        Gate(GateName.DRC, "sign-off DRC is clean",
             (Check(mk.SIGNOFF_DRC_ERRORS, Op.EQ_ZERO),),
             unmeasured_hint="no signoff DRC count"),
        Gate(GateName.LVS, "sign-off LVS is clean",
             (Check(mk.SIGNOFF_LVS_ERRORS, Op.EQ_ZERO),),
             unmeasured_hint="no signoff LVS result"),
        Gate(GateName.ANTENNA, "no net exceeds the tech LEF's antenna ratios",
             (Check(mk.ANTENNA_VIOLATING_NETS, Op.EQ_ZERO),),
             unmeasured_hint="no antenna check result"),
    )
}


@dataclass(frozen=True)
class Observation:
    gate: GateName
    observed: Observed
    reason: str
    values: dict[str, object] = field(default_factory=dict)  # the keys read and their values


def check_keys(values: Mapping[str, object], check: Check) -> list[str]:
    if check.per_corner:
        return mk.corner_keys(values, check.key)
    return [check.key] if check.key in values else []


def checked_value(metrics: Metrics, key: str, check: Check) -> object:
    """The value of `key`, validated for `check` (raises MetricsFileError naming file and key).

    A slack reported as null means STA checked no path there (OpenSTA's 1e30 "infinite" slack,
    which Closer's flow writes as null): for a `>= 0` slack check that is +inf, a vacuous pass.
    """
    value = metrics.values[key]
    where = metrics.where(key)
    if value is None and check.op is Op.GE_ZERO:
        return math.inf
    if check.op is Op.EQUALS:
        known = mk.KNOWN_KEYS.get(check.key)
        choices = known.choices if known else ()
        if not isinstance(value, str) or (choices and value not in choices):
            raise MetricsFileError(
                f"{where}: key '{key}' must be one of {list(choices)}, got {value!r}"
            )
        return value
    number = require_number(value, key, where)
    known = mk.KNOWN_KEYS.get(check.key)
    if known is not None and known.kind is mk.MetricKind.COUNT:
        if number < 0 or number != int(number):
            raise MetricsFileError(
                f"{where}: key '{key}' is a count and must be a non-negative integer, got {value!r}"
            )
    return number


def require_number(value: object, key: str, where: str) -> float:
    if value is None:
        raise MetricsFileError(f"{where}: key '{key}' is null (no value was measured); "
                               "a number is needed")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MetricsFileError(
            f"{where}: key '{key}' must be a number, got {type(value).__name__} {value!r}"
        )
    return value


def passes(op: Op, value: object, expected: str | None) -> bool:
    if op is Op.EQ_ZERO:
        return value == 0
    if op is Op.GE_ZERO:
        return value >= 0
    if op is Op.GT_ZERO:
        return value > 0
    return value == expected


def observe(gate: Gate, metrics: Metrics) -> Observation:
    read: dict[str, object] = {}
    failures: list[str] = []
    missing: list[str] = []
    for check in gate.checks:
        keys = check_keys(metrics.values, check)
        if not keys:
            if not check.optional:
                missing.append(check.key)
            continue
        for key in keys:
            value = checked_value(metrics, key, check)
            read[key] = metrics.values[key]  # as recorded (a null slack stays null)
            if not passes(check.op, value, check.expected):
                failures.append(f"{key} = {value!r} (needs {check.describe()})")
    if gate.started_prefix and missing:
        started = sorted(k for k in metrics.values if k.startswith(gate.started_prefix))
        if started:
            read.update({k: metrics.values[k] for k in started})
            failures.append(f"{', '.join(missing)} missing but {started[-1]} present: "
                            "the stage started and did not finish")
            missing = []
    if failures:
        return Observation(gate.name, Observed.FAIL, "; ".join(failures), read)
    if missing:
        return Observation(gate.name, Observed.UNMEASURED,
                           f"{gate.unmeasured_hint}: missing {', '.join(missing)}", read)
    return Observation(gate.name, Observed.PASS, "all checks pass", read)


def gate_table_markdown() -> str:
    lines = ["| gate | passes when | unmeasured when missing |", "|---|---|---|"]
    for gate in GATES.values():
        conds = "; ".join(c.describe() for c in gate.checks)
        if gate.started_prefix:
            conds += f"; fails if only `{gate.started_prefix}N` keys exist (did not finish)"
        needed = ", ".join(f"`{c.key}`" for c in gate.checks if not c.optional)
        lines.append(f"| {gate.name.value} | {conds} | {needed} |")
    return "\n".join(lines) + "\n"
