"""THE one place that defines metric keys: Closer's own keys, the ORFS keys Closer reads, and the
derived metrics a reward target may name.

Every key follows the ORFS scheme `<stage>__<category>__<metric>[__<qualifier>]`. ORFS files
written before 2026-01 spell qualifiers with a colon (`...__iter:0`, `...__corner:ff`); newer ones
replace every `:` in a key with `__` (`...__iter__0`). `normalize_key` maps both to the newer
spelling, so every other module sees one spelling.

Per-corner values: the unqualified key (e.g. `finish__timing__hold__ws`) is the value ORFS reports
(the worst over the analysed corners); a per-corner value is the same key plus
`__corner__<corner>` (old spelling `__corner:<corner>`, the METRICS2.1 modifier). A gate that
checks "every reported corner" checks the unqualified key and every `__corner__*` key present.

`docs/reward.md` embeds the tables `markdown_tables()` renders from these declarations; a test
keeps the two equal.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Callable, Mapping

from closer.flow.cachedir import FLOW_REUSED  # noqa: F401  (kept where the metered call finds it without this module)

CORNER_QUALIFIER = "__corner__"
_KEY_CHARS = re.compile(r"[a-z][A-Za-z0-9_.\-]*")


class MetricKind(StrEnum):
    COUNT = "count"  # a non-negative integer
    NUMBER = "number"  # any finite number
    ENUM = "enum"  # one of a closed set of strings
    TEXT = "text"  # free text (provenance)
    CLOCKS = "clocks"  # ORFS clock list: ["<name>: <period ns>", ...]


@dataclass(frozen=True)
class MetricKey:
    name: str
    kind: MetricKind
    unit: str
    description: str
    choices: tuple[str, ...] = ()
    source: str = "closer"  # "closer" (Closer writes it) or "orfs" (ORFS or a flow writes it)


def _key(name, kind, unit, description, choices=(), source="closer") -> MetricKey:
    return MetricKey(name, kind, unit, description, tuple(choices), source)


# --- Closer's own keys: what ORFS does not measure -------------------------------------------
SIGNOFF_DRC_ERRORS = "closer__signoff__drc_errors"
SIGNOFF_LVS_ERRORS = "closer__signoff__lvs_errors"
FUNC_TESTS_TOTAL = "closer__func__tests_total"
FUNC_TESTS_FAILED = "closer__func__tests_failed"
GLS_TESTS_TOTAL = "closer__gls__tests_total"
GLS_TESTS_FAILED = "closer__gls__tests_failed"
LEC_RESULT = "closer__lec__result"
UNCONSTRAINED_ENDPOINTS = "closer__timing__unconstrained_endpoints"
SIM_CYCLES = "closer__sim__cycles"
ROUTE_UNROUTED_NETS = "closer__route__unrouted_nets"
RUN_DESIGN = "run__closer__design"
RUN_DESIGN_REVISION = "run__closer__design_revision"
RUN_PDK_CORNER = "run__closer__pdk_corner"
RUN_TOOL_VERSIONS = "run__closer__tool_versions"

LEC_EQUIVALENT = "equivalent"
LEC_CHOICES = (LEC_EQUIVALENT, "not_equivalent", "inconclusive")

CLOSER_KEYS: tuple[MetricKey, ...] = (
    _key(SIGNOFF_DRC_ERRORS, MetricKind.COUNT, "violations",
         "Sign-off DRC violations on the final GDS under the foundry's deck (Closer: the MPW-precheck "
         "KLayout deck sky130A_mr.drc), all rules summed."),
    _key(SIGNOFF_LVS_ERRORS, MetricKind.COUNT, "mismatches",
         "Sign-off LVS mismatches between the layout extraction and the netlist (0 = clean)."),
    _key(FUNC_TESTS_TOTAL, MetricKind.COUNT, "tests",
         "RTL functional (cocotb) tests run."),
    _key(FUNC_TESTS_FAILED, MetricKind.COUNT, "tests",
         "RTL functional tests that failed or errored."),
    _key(GLS_TESTS_TOTAL, MetricKind.COUNT, "tests",
         "Gate-level simulation tests run on the final netlist."),
    _key(GLS_TESTS_FAILED, MetricKind.COUNT, "tests",
         "Gate-level simulation tests that failed or errored."),
    _key(LEC_RESULT, MetricKind.ENUM, "",
         "Logic equivalence of RTL and final netlist.", LEC_CHOICES),
    _key(UNCONSTRAINED_ENDPOINTS, MetricKind.COUNT, "endpoints",
         "Endpoints and non-clock inputs with no timed setup or hold check, false-pathed ones "
         "included (the flow's STA audit, reports/untimed.rpt)."),
    _key(ROUTE_UNROUTED_NETS, MetricKind.COUNT, "nets",
         "Nets the detailed router left unrouted (any one fails the route gate)."),
    _key(SIM_CYCLES, MetricKind.COUNT, "cycles",
         "Clock cycles the task's workload took in simulation (input of execution_time)."),
    _key(RUN_DESIGN, MetricKind.TEXT, "", "Design name (provenance)."),
    _key(RUN_DESIGN_REVISION, MetricKind.TEXT, "",
         "Revision of the design sources scored, e.g. a content hash (provenance)."),
    _key(RUN_PDK_CORNER, MetricKind.TEXT, "",
         "Liberty corners the timing and power numbers come from, e.g. "
         "`setup:ss_100C_1v60,tt_025C_1v80;hold:tt_025C_1v80,ff_n40C_1v95;power:tt_025C_1v80` "
         "(provenance)."),
    _key(RUN_TOOL_VERSIONS, MetricKind.TEXT, "",
         "Tool versions, `step:tool=version` joined by `;` (provenance)."),
)

# --- ORFS keys Closer reads (written by ORFS or by Closer's flows in the ORFS scheme) ---------
ROUTE_DRC_ERRORS = "detailedroute__route__drc_errors"
ROUTE_DRC_ITER_PREFIX = "detailedroute__route__drc_errors__iter__"
ANTENNA_VIOLATING_NETS = "detailedroute__antenna__violating__nets"
HOLD_WS = "finish__timing__hold__ws"
SETUP_WS = "finish__timing__setup__ws"
DRV_MAX_SLEW = "finish__timing__drv__max_slew"
DRV_MAX_CAP = "finish__timing__drv__max_cap"
POWER_TOTAL = "finish__power__total"
INSTANCE_AREA = "finish__design__instance__area"
CLOCKS_DETAILS = "constraints__clocks__details"

ORFS_KEYS: tuple[MetricKey, ...] = (
    _key(ROUTE_DRC_ERRORS, MetricKind.COUNT, "violations",
         "DRC violations left after the last detailed-routing iteration. Its presence means "
         "routing finished; `..__iter__N` keys alone mean it started and did not.", source="orfs"),
    _key(ANTENNA_VIOLATING_NETS, MetricKind.COUNT, "nets",
         "Nets whose antenna ratio exceeds the tech LEF's limit on some layer.", source="orfs"),
    _key(HOLD_WS, MetricKind.NUMBER, "ns",
         "Worst hold slack at finish; per corner as `__corner__<corner>`.", source="orfs"),
    _key(SETUP_WS, MetricKind.NUMBER, "ns",
         "Worst setup slack at finish; input of effective_clock_period.", source="orfs"),
    _key(DRV_MAX_SLEW, MetricKind.COUNT, "pins",
         "Max-slew violations at finish; per corner as `__corner__<corner>`.", source="orfs"),
    _key(DRV_MAX_CAP, MetricKind.COUNT, "pins",
         "Max-capacitance violations at finish; per corner as `__corner__<corner>`.",
         source="orfs"),
    _key(INSTANCE_AREA, MetricKind.NUMBER, "µm²",
         "Standard-cell plus macro area at finish.", source="orfs"),
    _key(POWER_TOTAL, MetricKind.NUMBER, "W",
         "Total power at finish (ORFS labels it 1nW but the value is in W).", source="orfs"),
    _key(CLOCKS_DETAILS, MetricKind.CLOCKS, "ns",
         'Clocks from the SDC as `["<name>: <period>"]`, added by ORFS genMetrics.py.',
         source="orfs"),
)

KNOWN_KEYS: dict[str, MetricKey] = {k.name: k for k in CLOSER_KEYS + ORFS_KEYS}


def normalize_key(key: str) -> str:
    """One spelling for qualifiers: `a__iter:0` -> `a__iter__0` (what ORFS does since 2026-01)."""
    return key.replace(":", "__") if ":" in key else key


def looks_like_key(name: str) -> bool:
    """True for names in the `<stage>__<category>__<metric>[__<qualifier>]` scheme."""
    return name.count("__") >= 2 and _KEY_CHARS.fullmatch(name) is not None


# Slack and fmax grow with quality; a reward target (always lower-is-better) on them is a mistake.
_HIGHER_IS_BETTER = re.compile(r"__timing__(?:(?:setup|hold)__(?:ws|wns|tns)|fmax)(?:__|$)")


def higher_is_better(name: str) -> bool:
    return _HIGHER_IS_BETTER.search(name) is not None


def corner_keys(values: Mapping[str, object], base: str) -> list[str]:
    """The keys reporting `base` at some corner: `base` itself and every `base__corner__<c>`."""
    prefix = base + CORNER_QUALIFIER
    found = [base] if base in values else []
    found.extend(sorted(k for k in values if k.startswith(prefix)))
    return found


# --- derived metrics --------------------------------------------------------------------------
@dataclass(frozen=True)
class DerivedMetric:
    """A metric computed from others. All derived metrics are lower-is-better, like every target."""

    name: str
    unit: str
    formula: str
    inputs: tuple[str, ...]  # metric names (keys or other derived metrics); CLOCK_PERIOD is special
    # the inputs in order -> the value; the operator functions (a - b, a * b) are called from C
    # when the batch maps them over columns, without a Python frame per value
    compute: Callable[..., float]
    description: str
    # the gate a value that is not finite or not > 0 fails (e.g. a setup slack larger than the
    # clock period: a negative effective period is a broken timing result, not a fast design)
    gate: str = "sta"


CLOCK_PERIOD = "clock_period"  # from the targets file or from constraints__clocks__details

DERIVED: dict[str, DerivedMetric] = {
    d.name: d
    for d in (
        DerivedMetric(
            "effective_clock_period", "ns", "clock_period − finish__timing__setup__ws",
            (CLOCK_PERIOD, SETUP_WS), operator.sub,
            "The shortest period the design would meet: the constrained period minus the worst "
            "setup slack. clock_period is the targets file's `clock_period` when given, else "
            "the single clock in constraints__clocks__details.",
        ),
        DerivedMetric(
            "execution_time", "ns", "closer__sim__cycles × effective_clock_period",
            (SIM_CYCLES, "effective_clock_period"), operator.mul,
            "Time the task's workload takes at the effective clock period.",
        ),
        DerivedMetric(
            "energy", "nJ", "finish__power__total × execution_time",
            (POWER_TOTAL, "execution_time"), operator.mul,
            "Energy of the task's workload (W × ns = nJ).",
        ),
    )
}

# Earlier-stage variants for tasks that stop before finish: <stage>_effective_clock_period
TIMED_STAGES = ("synth", "floorplan", "placeopt", "cts", "globalroute", "finish")
for _stage in TIMED_STAGES:
    DERIVED[f"{_stage}_effective_clock_period"] = DerivedMetric(
        f"{_stage}_effective_clock_period", "ns", f"clock_period − {_stage}__timing__setup__ws",
        (CLOCK_PERIOD, f"{_stage}__timing__setup__ws"), operator.sub,
        "As effective_clock_period, from the worst setup slack after that stage.",
    )
del _stage


def parse_clock_details(value: object) -> dict[str, float]:
    """`["core_clock: 1.1000", ...]` -> {"core_clock": 1.1}. Raises ValueError with the reason."""
    if not isinstance(value, list) or not value:
        raise ValueError(f"expected a non-empty list of '<clock>: <period>' strings, got {value!r}")
    clocks: dict[str, float] = {}
    for item in value:
        if not isinstance(item, str) or ":" not in item:
            raise ValueError(f"expected '<clock>: <period>', got {item!r}")
        name, _, period_text = item.rpartition(":")
        try:
            period = float(period_text)
        except ValueError:
            raise ValueError(f"period of clock {name.strip()!r} is not a number: {item!r}") from None
        if not math.isfinite(period) or period <= 0:
            raise ValueError(f"period of clock {name.strip()!r} must be finite and > 0: {item!r}")
        clocks[name.strip()] = period
    return clocks


def markdown_tables() -> str:
    """The metric-key and derived-metric tables of docs/reward.md, rendered from the declarations."""
    lines = ["| key | written by | kind | unit | meaning |", "|---|---|---|---|---|"]
    for k in CLOSER_KEYS + ORFS_KEYS:
        kind = f"{k.kind.value}: {' / '.join(k.choices)}" if k.choices else k.kind.value
        lines.append(f"| `{k.name}` | {k.source} | {kind} | {k.unit} | {k.description} |")
    lines += ["", "| derived metric | unit | formula | meaning |", "|---|---|---|---|"]
    staged = {f"{stage}_effective_clock_period" for stage in TIMED_STAGES}
    for d in DERIVED.values():
        if d.name not in staged:
            lines.append(f"| `{d.name}` | {d.unit} | {d.formula} | {d.description} |")
    lines.append(f"| `<stage>_effective_clock_period` | ns | clock_period − "
                 f"<stage>__timing__setup__ws | As effective_clock_period, from the worst setup "
                 f"slack after that stage; stage one of {', '.join(TIMED_STAGES)}. |")
    return "\n".join(lines) + "\n"
