"""Static timing and power with OpenSTA (`sta`, Debian 2.0.17) at each corner, before and after
parasitics (SPEF from qrouter's RC trees), plus the design-rule (DRV) violation counts.

What OpenSTA 2.0.17 offers (measured on this machine, 2026-11-30): `report_check_types` knows
`-max_transition` (not `-max_slew`) and `-all_violators` (not `-violators`), and it has no
capacitance-limit check at all (no `-max_capacitance`, no limit getter). So:

* max slew: the number of pins in `report_check_types -max_transition -all_violators` (Liberty
  `max_transition` and SDC `set_max_transition`, as OpenSTA applies them);
* max capacitance: OpenSTA's own total capacitance of each driver pin's net (pins, wire and SPEF
  parasitics, `set_load`; `$net capacitance rise|fall <corner> max`), printed per driver, compared
  with the driver pin's Liberty `max_capacitance` (same rule as newer OpenSTA's check, without SDC
  `set_max_capacitance`, which this build cannot report back).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from closer.errors import ToolError
from closer.procs import Command, run

DONE_MARK = "CLOSER_DONE"
SLEW_BEGIN, SLEW_END = "CLOSER_MAX_TRANSITION_BEGIN", "CLOSER_MAX_TRANSITION_END"


@dataclass
class StaResult:
    corner: str
    setup_ws_ns: float | None
    hold_ws_ns: float | None
    power_total_w: float | None
    with_parasitics: bool
    log: Path
    max_slew_violations: int = 0
    max_cap_violations: int = 0
    max_cap_violators: list[str] = field(default_factory=list)  # driver pins over their limit
    spef_warnings: int = 0      # lines OpenSTA warned about while reading the SPEF


_NUM = r"(-?[0-9.]+(?:e[-+]?\d+)?)"
_VIOLATED_ROW = re.compile(r"^(\S+)\s+" + _NUM + r"\s+" + _NUM + r"\s+" + _NUM + r"\s+\(VIOLATED\)\s*$", re.M)
_DRIVER = re.compile(r"^CLOSER_DRIVER (\S+) (\S+) (\S+) " + _NUM + r"\s*$", re.M)

# Every driver pin with the largest of its net's rise/fall total capacitance (farads) at the max
# corner; the liberty cell is printed as `<library>/<cell>`.
_DRIVER_CAPS_TCL = """\
set closer_corner [sta::cmd_corner]
foreach pin [get_pins */*] {
  if { ![$pin is_driver] } { continue }
  set net [$pin net]
  if { $net == "NULL" } { continue }
  set cap 0.0
  foreach rf {rise fall} {
    set value [$net capacitance $rf $closer_corner max]
    if { $value > $cap } { set cap $value }
  }
  puts "CLOSER_DRIVER [get_full_name $pin] [get_name [$pin liberty_port]]\
 [get_full_name [get_lib_cells -of_objects [$pin instance]]] $cap"
}
"""


def sta_script(liberty: Path, netlist_v: Path, top: str, sdc: Path | None, spef: Path | None,
               clock_port: str | None, period_ns: float | None) -> str:
    lines = [f"read_liberty {liberty}", f"read_verilog {netlist_v}", f"link_design {top}"]
    if sdc is not None:
        lines.append(f"read_sdc {sdc}")
    elif clock_port and period_ns:
        lines.append(f"create_clock -name clk -period {period_ns} [get_ports {clock_port}]")
    if spef is not None:
        lines.append(f"read_spef {spef}")
    lines += [
        'puts "CLOSER_SETUP"',
        "report_checks -path_delay max -digits 4",
        'puts "CLOSER_HOLD"',
        "report_checks -path_delay min -digits 4",
        "report_power",
        f'puts "{SLEW_BEGIN}"',
        "report_check_types -max_transition -all_violators -digits 4",
        f'puts "{SLEW_END}"',
        _DRIVER_CAPS_TCL,
        f'puts "{DONE_MARK}"',
        "exit",
    ]
    return "\n".join(lines) + "\n"


def run_sta(corner: str, liberty: Path, netlist_v: Path, top: str, sdc: Path | None, spef: Path | None,
            work: Path, clock_port: str | None = None, period_ns: float | None = None) -> StaResult:
    tag = f"{corner}_{'spef' if spef else 'nospef'}"
    tcl = work / f"sta_{tag}.tcl"
    tcl.write_text(sta_script(liberty, netlist_v, top, sdc, spef, clock_port, period_ns))
    done = run(Command(["sta", "-no_init", "-exit", str(tcl)], cwd=work, timeout_s=600),
               work / f"sta_{tag}.log", check=False)
    text = done.log.read_text(errors="replace")
    if done.returncode != 0 or re.search(r"^Error", text, re.M) or DONE_MARK not in text:
        raise ToolError(f"OpenSTA failed at corner {corner}; log: {done.log}\n{done.log_tail()}")
    return parse_sta_log(text, corner, liberty, spef, done.log)


def parse_sta_log(text: str, corner: str, liberty: Path, spef: Path | None, log: Path) -> StaResult:
    """The numbers of one `sta_script` run's log (raises ToolError naming the log if a part is missing)."""
    setup_part, _, hold_part = text.partition("CLOSER_HOLD")
    setup = _slack(setup_part.partition("CLOSER_SETUP")[2])
    hold = _slack(hold_part.partition(SLEW_BEGIN)[0])
    power = re.search(r"^Total\s+" + _NUM + r"\s+" + _NUM + r"\s+" + _NUM + r"\s+" + _NUM, text, re.M)
    if SLEW_BEGIN not in text or SLEW_END not in text:
        raise ToolError(f"{log}: no max_transition report ({SLEW_BEGIN} ... {SLEW_END})")
    slew = max_transition_violators(text.partition(SLEW_BEGIN)[2].partition(SLEW_END)[0])
    drivers = driver_caps(text)
    over = max_cap_violators(drivers, liberty_max_capacitance(liberty))
    spef_warnings = len(re.findall(rf"^Warning: {re.escape(str(spef))}\b", text, re.M)) if spef else 0
    return StaResult(corner, setup, hold, float(power.group(4)) if power else None, spef is not None, log,
                     max_slew_violations=len(slew), max_cap_violations=len(over), max_cap_violators=over,
                     spef_warnings=spef_warnings)


def _slack(report: str) -> float | None:
    """The slack of the (worst) path OpenSTA printed; None when no constrained path exists."""
    m = re.search(_NUM + r"\s+slack \((?:MET|VIOLATED)\)", report)
    return float(m.group(1)) if m else None


def max_transition_violators(report: str) -> list[str]:
    """The pins of OpenSTA 2.0.17's `report_check_types -max_transition -all_violators` table
    (`Pin Limit Trans Slack (VIOLATED)` rows; nothing printed means none)."""
    return [m.group(1) for m in _VIOLATED_ROW.finditer(report)]


def driver_caps(text: str) -> list[tuple[str, str, str, float]]:
    """(driver pin, liberty port, cell, net capacitance in farads) from the CLOSER_DRIVER lines."""
    return [(m.group(1), m.group(2), m.group(3).rsplit("/", 1)[-1], float(m.group(4)))
            for m in _DRIVER.finditer(text)]


def max_cap_violators(drivers: list[tuple[str, str, str, float]],
                      limits: dict[tuple[str, str], float]) -> list[str]:
    """Driver pins whose net capacitance exceeds the pin's Liberty max_capacitance (farads)."""
    return [pin for pin, port, cell, cap in drivers
            if (limit := limits.get((cell, port))) is not None and cap > limit]


_LIB_TOKEN = re.compile(r'\bcell\s*\(\s*"?([^")\s]+)"?\s*\)|\bpin\s*\(\s*"?([^")\s]+)"?\s*\)'
                        r'|\bmax_capacitance\s*:\s*' + _NUM + r'|\bcapacitive_load_unit\s*\(\s*'
                        + _NUM + r'\s*,\s*"?(\w+)"?\s*\)')
_CAP_UNITS_F = {"ff": 1e-15, "pf": 1e-12, "nf": 1e-9}


@functools.lru_cache(maxsize=8)
def liberty_max_capacitance(liberty: Path) -> dict[tuple[str, str], float]:
    """(cell, pin) -> max_capacitance in farads, from the Liberty file's pin groups."""
    text = Path(liberty).read_text(errors="replace")
    unit_f: float | None = None
    cell = pin = None
    limits: dict[tuple[str, str], float] = {}
    for m in _LIB_TOKEN.finditer(text):
        if m.group(1):
            cell, pin = m.group(1), None
        elif m.group(2):
            pin = m.group(2)
        elif m.group(3):
            if cell is None or pin is None:
                continue  # a library-level default, not a pin's limit
            if unit_f is None:
                raise ToolError(f"{liberty}: max_capacitance of {cell}/{pin} before capacitive_load_unit")
            limits[(cell, pin)] = float(m.group(3)) * unit_f
        else:
            unit = m.group(5).lower()
            if unit not in _CAP_UNITS_F:
                raise ToolError(f"{liberty}: capacitive_load_unit {unit!r}: expected one of {sorted(_CAP_UNITS_F)}")
            unit_f = float(m.group(4)) * _CAP_UNITS_F[unit]
    if not limits:
        raise ToolError(f"{liberty}: no pin max_capacitance found")
    return limits
