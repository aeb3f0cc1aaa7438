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
from closer.physical.repair.opensta import cell_liberty, liberty_reads
from closer.sdc import SdcPolicy, write_canonical

DONE_MARK = "CLOSER_DONE"


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
    clock_skew_ns: float | None = None       # report_clock_skew (propagated clocks only)
    clock_latency_ns: float | None = None    # the larger latency of that worst pair
    setup_tns_ns: float | None = None        # OpenSTA's total negative slack (max / min paths)
    hold_tns_ns: float | None = None


_NUM = r"(-?[0-9.]+(?:e[-+]?\d+)?)"
_VIOLATED_ROW = re.compile(r"^(\S+)\s+" + _NUM + r"\s+" + _NUM + r"\s+" + _NUM + r"\s+\(VIOLATED\)\s*$", re.M)
_DRIVER = re.compile(r"^CLOSER_DRIVER (\S+) (\S+) (\S+) " + _NUM + r"\s*$", re.M)

# Every driver pin with the largest of its net's rise/fall total capacitance (farads) at the max
# corner, written to the open file $closer_fh; the liberty cell is written as `<library>/<cell>`.
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
  puts $closer_fh "CLOSER_DRIVER [get_full_name $pin] [get_name [$pin liberty_port]]\
 [get_full_name [get_lib_cells -of_objects [$pin instance]]] $cap"
}
"""


@dataclass(frozen=True)
class StaReports:
    """The files one `sta_script` run writes its results to (never parsed from the log)."""

    setup: Path
    hold: Path
    power: Path
    slew: Path
    drivers: Path
    tns: Path
    done: Path

    @classmethod
    def of(cls, work: Path, tag: str) -> "StaReports":
        return cls(*(work / f"sta_{tag}.{part}.rpt"
                     for part in ("setup", "hold", "power", "slew", "drivers", "tns", "done")))


def skew_report(reports: StaReports) -> Path:
    return reports.done.with_name(reports.done.name.replace(".done.", ".skew."))


def clock_skew(report: str) -> tuple[float | None, float | None]:
    """(skew, larger latency) in ns of OpenSTA 2.0.17's `report_clock_skew`: a `Latency CRPR Skew`
    table of the worst pair, the source pin's latency on one line, the target's latency, CRPR
    and skew on the last; (None, None) when nothing was reported."""
    rows = [[float(v) for v in line.split()] for line in report.splitlines()
            if re.fullmatch(r"\s*" + _NUM + r"(\s+" + _NUM + r")*\s*", line)]
    if not rows or len(rows[-1]) != 3:
        return None, None
    latencies = [r[0] for r in rows]
    return rows[-1][2], max(latencies)


def sta_script(liberty: Path, netlist_v: Path, top: str, sdc: Path | None, spef: Path | None,
               clock_port: str | None, period_ns: float | None, reports: StaReports,
               propagated_clock: bool = False) -> str:
    """`sdc` must be a canonical SDC (closer.sdc.write_canonical); run_sta makes sure it is.
    `propagated_clock`: the clocks arrive through their (built) clock tree, not ideally."""
    lines = [*liberty_reads(liberty), f"read_verilog {{{netlist_v}}}", f"link_design {top}"]
    if sdc is not None:
        lines.append(f"read_sdc {{{sdc}}}")
    elif clock_port and period_ns:
        lines.append(f"create_clock -name clk -period {period_ns} [get_ports {clock_port}]")
    if propagated_clock:
        lines.append("set_propagated_clock [all_clocks]")
    if spef is not None:
        lines.append(f"read_spef {{{spef}}}")
    if propagated_clock:  # after the SPEF: before it the tree's wires were not in the skew (0.0000)
        lines.append(f"report_clock_skew -digits 4 > {{{skew_report(reports)}}}")
    lines += [
        f"report_checks -path_delay max -digits 4 > {{{reports.setup}}}",
        f"report_checks -path_delay min -digits 4 > {{{reports.hold}}}",
        f"report_power > {{{reports.power}}}",
        f"report_check_types -max_transition -all_violators -digits 4 > {{{reports.slew}}}",
        f"set closer_fh [open {{{reports.drivers}}} w]",
        _DRIVER_CAPS_TCL,
        "close $closer_fh",
        f"set closer_fh [open {{{reports.tns}}} w]",
        'puts $closer_fh "CLOSER_TNS [sta::total_negative_slack_cmd max] [sta::total_negative_slack_cmd min]"',
        "close $closer_fh",
        f"set closer_fh [open {{{reports.done}}} w]",
        f'puts $closer_fh "{DONE_MARK}"',
        "close $closer_fh",
        "exit",
    ]
    return "\n".join(lines) + "\n"


def run_sta(corner: str, liberty: Path, netlist_v: Path, top: str, sdc: Path | None, spef: Path | None,
            work: Path, clock_port: str | None = None, period_ns: float | None = None,
            sdc_policy: SdcPolicy = SdcPolicy(), propagated_clock: bool = False) -> StaResult:
    """OpenSTA at one corner. `sdc` is read as data (closer.sdc) and OpenSTA gets its canonical
    text; the results come from the report files, not the log (raises ToolError, SdcError)."""
    tag = f"{corner}_{'spef' if spef else 'nospef'}"
    reports = StaReports.of(work, tag)
    for path in vars(reports).values():
        path.unlink(missing_ok=True)
    canonical = None
    if sdc is not None:
        canonical = work / f"sta_{tag}.sdc"
        write_canonical(Path(sdc), canonical, sdc_policy)
    tcl = work / f"sta_{tag}.tcl"
    tcl.write_text(sta_script(liberty, netlist_v, top, canonical, spef, clock_port, period_ns, reports,
                              propagated_clock))
    done = run(Command(["sta", "-no_init", "-exit", str(tcl)], cwd=work, timeout_s=600),
               work / f"sta_{tag}.log", check=False)
    text = done.log.read_text(errors="replace")
    finished = reports.done.is_file() and reports.done.read_text().strip() == DONE_MARK
    if done.returncode != 0 or re.search(r"^Error", text, re.M) or not finished:
        raise ToolError(f"OpenSTA failed at corner {corner}; log: {done.log}\n{done.log_tail()}")
    spef_warnings = len(re.findall(rf"^Warning: {re.escape(str(spef))}\b", text, re.M)) if spef else 0
    result = parse_sta_reports(reports, corner, liberty, spef, done.log, spef_warnings)
    if propagated_clock and skew_report(reports).is_file():
        result.clock_skew_ns, result.clock_latency_ns = clock_skew(skew_report(reports).read_text())
    return result


def parse_sta_reports(reports: StaReports, corner: str, liberty: Path, spef: Path | None, log: Path,
                      spef_warnings: int = 0) -> StaResult:
    """The numbers of one `sta_script` run, from its report files (raises ToolError naming a
    missing one)."""
    texts = {}
    for name, path in vars(reports).items():
        if not path.is_file():
            raise ToolError(f"{path}: OpenSTA wrote no {name} report (log {log})")
        texts[name] = path.read_text(errors="replace")
    power = re.search(r"^Total\s+" + _NUM + r"\s+" + _NUM + r"\s+" + _NUM + r"\s+" + _NUM,
                      texts["power"], re.M)
    over = max_cap_violators(driver_caps(texts["drivers"]), liberty_max_capacitance(cell_liberty(liberty)))
    slew = max_transition_violators(texts["slew"])
    setup_tns, hold_tns = total_negative_slacks(texts["tns"], reports.tns)
    return StaResult(corner, _slack(texts["setup"]), _slack(texts["hold"]),
                     float(power.group(4)) if power else None, spef is not None, log,
                     max_slew_violations=len(slew), max_cap_violations=len(over),
                     max_cap_violators=over, spef_warnings=spef_warnings,
                     setup_tns_ns=setup_tns, hold_tns_ns=hold_tns)


_TNS = re.compile(r"^CLOSER_TNS " + _NUM + r" " + _NUM + r"\s*$", re.M)


def total_negative_slacks(report: str, path: Path) -> tuple[float, float]:
    """(setup TNS, hold TNS) in ns from the `CLOSER_TNS <max> <min>` line (OpenSTA's seconds)."""
    m = _TNS.search(report)
    if not m:
        raise ToolError(f"{path}: OpenSTA wrote no CLOSER_TNS line")
    return round(float(m.group(1)) * 1e9, 4), round(float(m.group(2)) * 1e9, 4)


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
