"""The flow's wall-clock deadline: its improvement loops stop in time for the flow to finish.

Whoever bounds a flow run by wall time (the evaluator's `FLOW_TIMEOUT_S`, closer.tasks.checks)
names the moment it will stop it in $CLOSER_FLOW_DEADLINE (Unix time, seconds). A flow killed at
its limit leaves no sign-off verdict, so no reasons; with the deadline, the loops that only
improve a layout that already exists (Repair's, SetupRepair's, RoutedSetupRepair's and the
antenna diode rounds, a setup round's full reroute, Replace's second layout; closer.physical.steps
.base.fits) do not start what they could not finish before it, and qrouter's rip-up passes stop at
it (`within`), less `FINISH_RESERVE_S` for the steps
that must still run (antenna check, STA, the official deck, metrics), and the flow ends with the
layout it has, its gates measured. A loop cut so is recorded (`closer__flow__deadline_cut`): the
result then depends on the machine's speed, and the flow cache never serves it again
(closer.flow.reuse.TIME_CUT_FLAGS). Without the variable nothing changes.
"""

from __future__ import annotations

import math
import os
import time

from closer.errors import InputError

DEADLINE_ENV = "CLOSER_FLOW_DEADLINE"
# What runs after the last improvement loop, measured on firdma full (10.8k cells, two flows on 2
# cores): Antenna 128 s, Sta 19 s, SignoffDrc 188 s; with room for a loaded machine.
FINISH_RESERVE_S = 600.0
CUT_KEY = "closer__flow__deadline_cut"
# An improvement round is expected to take this many times the Route step's time (or the last
# round's, when longer). Measured on firdma small's null run: Route 1,341 s; SetupRepair's first
# round 778 s, its second over 1,900 s (its incremental reroute left problems: a full reroute and a
# second sign-off followed). The repairs inside a round stop at the deadline themselves.
ROUND_ROUTE_FACTOR = 1.5


def deadline() -> float | None:
    """The deadline from the environment; None when unset. A value that is not a finite number is
    an error naming the variable (the harness sets it, so it is a harness fault)."""
    raw = os.environ.get(DEADLINE_ENV, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise InputError(f"${DEADLINE_ENV}: {raw!r} is not a Unix time in seconds")
    return value


def time_left() -> float | None:
    """Seconds an improvement loop may still use (negative: none); None without a deadline."""
    end = deadline()
    return None if end is None else end - time.time() - FINISH_RESERVE_S


def allows(seconds: float) -> bool:
    """Whether work expected to take `seconds` ends before the deadline's reserve."""
    left = time_left()
    return left is None or left >= seconds


def within(seconds: float) -> float:
    """`seconds`, or the time left before the deadline's reserve when that is less (never below 0):
    the wall-clock budget of work that can stop where it is (qrouter's rip-up passes)."""
    left = time_left()
    return seconds if left is None else min(seconds, max(0.0, left))
