"""Static timing and power with OpenSTA (`sta`, Debian 2.0.17) at each corner, before and after
parasitics (SPEF from qrouter's RC trees)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from closer.errors import ToolError
from closer.procs import Command, run


@dataclass
class StaResult:
    corner: str
    setup_ws_ns: float | None
    hold_ws_ns: float | None
    power_total_w: float | None
    with_parasitics: bool
    log: Path


_NUM = r"(-?[0-9.]+(?:e[-+]?\d+)?)"


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
    if done.returncode != 0 or re.search(r"^Error", text, re.M):
        raise ToolError(f"OpenSTA failed at corner {corner}; log: {done.log}\n{done.log_tail()}")
    setup_part, _, hold_part = text.partition("CLOSER_HOLD")
    setup = _slack(setup_part.partition("CLOSER_SETUP")[2])
    hold = _slack(hold_part)
    power = re.search(r"^Total\s+" + _NUM + r"\s+" + _NUM + r"\s+" + _NUM + r"\s+" + _NUM, text, re.M)
    return StaResult(corner, setup, hold, float(power.group(4)) if power else None, spef is not None, done.log)


def _slack(report: str) -> float | None:
    """The slack of the (worst) path OpenSTA printed; None when no constrained path exists."""
    m = re.search(_NUM + r"\s+slack \((?:MET|VIOLATED)\)", report)
    return float(m.group(1)) if m else None
