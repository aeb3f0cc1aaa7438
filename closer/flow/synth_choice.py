"""Timing-driven choice of the ABC script: the synthesis node runs the strategy's script first
and its restructured one (closer.flow.settings.abc_scripts) only when ABC's own delay estimate of
the first misses the delay target.

ABC's estimate is `stime -p` at the end of every script (the ss Liberty, no wires), against
the `-D` target Yosys passed it; both are read from the synthesis node's log. The first script
that meets its target is kept; when none does, the fastest (the earliest of equal delays). So
a design the first script closes keeps that script's netlist, whatever the second would give.
The attempts' logs are kept beside the run (FlowPaths.synth_attempt_log) and the choice is
recorded as metrics (`closer__synth__abc_script`, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from closer.errors import ToolError

# the synthesis mapping's call (SiliconCompiler's sc_synth_asic.tcl) and its -D argument
_ABC_CALL = re.compile(r"^yosys> abc -showtmp\b(?P<args>.*)$")
_TARGET = re.compile(r"\s-D\s+(?P<ps>[0-9]+(?:\.[0-9]+)?)\b")
# `stime -p`: ... Area = 2137.05 ( 74.6 %)   Delay =  4492.11 ps  ( 12.0 %)
_STIME = re.compile(r"^ABC: WireLoad = .*\bDelay =\s*(?P<ps>[0-9]+(?:\.[0-9]+)?) ps\b")
# the ABC pass's own lines: a module's logic handed to ABC, and the pass's last line
_EXTRACT = re.compile(r"^[0-9.]+ Extracting gate netlist of module ")
_PASS_END = "Removing global temp directory."


@dataclass(frozen=True)
class AbcEstimate:
    delay_ps: float
    target_ps: float | None  # None: no clock, so no -D

    @property
    def meets(self) -> bool:
        return self.target_ps is None or self.delay_ps <= self.target_ps


@dataclass(frozen=True)
class Attempt:
    name: str      # closer.flow.settings.AbcScript.name
    script: str
    estimate: AbcEstimate


def abc_estimate(log: Path) -> AbcEstimate:
    """ABC's `stime -p` delay and `-D` target of the last synthesis mapping in a Yosys log."""
    lines = log.read_text(errors="replace").splitlines()
    calls = [i for i, line in enumerate(lines) if _ABC_CALL.match(line)]
    if not calls:
        raise ToolError(f"{log}: no `abc -showtmp` call: not a synthesis log of this flow")
    args = _ABC_CALL.match(lines[calls[-1]])["args"]
    target = _TARGET.search(args)
    target_ps = float(target["ps"]) if target else None
    after = lines[calls[-1]:]
    delays = [float(m["ps"]) for line in after if (m := _STIME.match(line))]
    if not delays and _mapped_nothing(after):
        return AbcEstimate(0.0, target_ps)  # no combinational logic: no script can do better
    if not delays:
        raise ToolError(f"{log}: ABC printed no `stime -p` delay after its last mapping")
    return AbcEstimate(delays[-1], target_ps)


def _mapped_nothing(after_call: list[str]) -> bool:
    """Yosys ended the ABC pass without extracting a gate netlist (a design without combinational
    logic, such as a task's empty skeleton): ABC never ran, so it printed no estimate."""
    end = next((i for i, line in enumerate(after_call) if line.startswith(_PASS_END)), None)
    return end is not None and not any(_EXTRACT.match(line) for line in after_call[:end])


def needs_next(attempts: list[Attempt]) -> bool:
    """True while no attempt so far meets its target."""
    return not any(a.estimate.meets for a in attempts)


def chosen(attempts: list[Attempt]) -> Attempt:
    """The first attempt that meets its target, else the fastest (earliest among equals)."""
    for attempt in attempts:
        if attempt.estimate.meets:
            return attempt
    return min(attempts, key=lambda a: a.estimate.delay_ps)


def choice_metrics(attempts: list[Attempt]) -> dict:
    """The synthesis stage's record of the choice (flat lists: metrics do not nest)."""
    kept = chosen(attempts)
    return {"closer__synth__abc_script": kept.name,
            "closer__synth__abc_delay_ps": kept.estimate.delay_ps,
            "closer__synth__abc_target_ps": kept.estimate.target_ps,
            "closer__synth__abc_scripts_tried": [a.name for a in attempts],
            "closer__synth__abc_delays_ps_tried": [a.estimate.delay_ps for a in attempts]}
