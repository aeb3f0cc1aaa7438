"""Synthesis of PicoRV32 to sky130_fd_sc_hd (`.venv/bin/yosys`, Yosys 0.70 over pyosys) and static
timing with Debian's OpenSTA (`sta`), for the gate-level oracle, the fmax task and docs/picorv32.md.

Commands are data: `synth_script` and `sta_script` return the text a test can inspect; `synthesize`
and `run_sta` run them through `closer.procs.run`. fmax is what OpenSTA reports, turned into MHz as
1000 / (clock period - worst setup slack) at the given corner, with ideal (unplaced) wires.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from closer.errors import ToolError
from closer.pdk import pdk
from closer.procs import Command, run
from closer.sdc import write_canonical

TT = "tt_025C_1v80"
# Power-gating and probe cells are not for logic (the same cells ORFS/OpenLane keep out).
DONT_USE = ("*lpflow*", "*probe*")
# Yosys 0.70's default `abc -D` script maps for delay but no longer buffers or sizes; with no
# placement-stage repair in this flow we ask ABC for it (buffer also drives primary inputs).
ABC_SCRIPT = ("+strash;&get,-n;&fraig,-x;&put;scorr;dc2;dretime;strash;&get,-n;&dch,-f;&nf,{D};"
              "&put;buffer,-p;upsize,{D};dnsize,{D};stime,-p")
SS = "ss_100C_1v60"


@dataclass(frozen=True)
class SynthResult:
    netlist: Path
    cells: int
    area_um2: float
    sequential_cells: int
    log: Path
    wall_s: float


@dataclass(frozen=True)
class StaResult:
    corner: str
    period_ns: float
    worst_slack_ns: float
    log: Path

    @property
    def min_period_ns(self) -> float:
        return self.period_ns - self.worst_slack_ns

    @property
    def fmax_mhz(self) -> float:
        return 1000.0 / self.min_period_ns


def synth_script(rtl: list[Path], top: str, parameters: dict[str, int], liberty: Path,
                 netlist: Path, stat_json: Path, abc_period_ps: int) -> str:
    reads = "\n".join(f"read_verilog -defer {p}" for p in rtl)
    chparam = "".join(f" -set {k} {int(v)}" for k, v in parameters.items())
    abc_delay = f" -D {abc_period_ps}"
    dont_use = "".join(f" -dont_use {pattern}" for pattern in DONT_USE)
    return f"""read_liberty -lib {liberty}
{reads}
{f'chparam{chparam} {top}' if chparam else ''}
hierarchy -check -top {top}
synth -flatten -top {top}
dfflibmap -liberty {liberty}{dont_use}
abc -liberty {liberty}{abc_delay}{dont_use} -script {ABC_SCRIPT}
setundef -zero
splitnets
opt_clean -purge
hilomap -singleton -hicell sky130_fd_sc_hd__conb_1 HI -locell sky130_fd_sc_hd__conb_1 LO
insbuf -buf sky130_fd_sc_hd__buf_2 A X
check -assert
tee -q -o {stat_json} stat -json -liberty {liberty}
write_verilog -noattr -noexpr -nohex -nodec {netlist}
"""


def synthesize(rtl: list[Path], out_dir: Path, parameters: dict[str, int] | None = None,
               top: str = "picorv32", corner: str = TT, abc_period_ps: int = 10000,
               timeout_s: float = 1200) -> SynthResult:
    out_dir.mkdir(parents=True, exist_ok=True)
    liberty = pdk().liberty(corner)
    netlist, stat_json = out_dir / f"{top}.netlist.v", out_dir / "stat.json"
    script = out_dir / "synth.ys"
    script.write_text(synth_script(rtl, top, parameters or {}, liberty, netlist, stat_json,
                                   abc_period_ps))
    done = run(Command(["yosys", "-q", "-s", str(script)], cwd=out_dir, timeout_s=timeout_s),
               out_dir / "synth.log")
    cells, area, seq = read_stat(stat_json, top)
    return SynthResult(netlist, cells, area, seq, done.log, done.wall_s)


def read_stat(stat_json: Path, top: str) -> tuple[int, float, int]:
    """(cell count, chip area µm², flip-flop count) from Yosys `stat -json -liberty`."""
    try:
        data = json.loads(stat_json.read_text())
        module = data["modules"][f"\\{top}"] if f"\\{top}" in data["modules"] else data["modules"][top]
        cells = int(module["num_cells"])
        area = float(module["area"])
        by_type = module.get("num_cells_by_type", {})
    except (OSError, ValueError, KeyError) as exc:
        raise ToolError(f"cannot read cell count/area from {stat_json}: {exc}") from exc
    seq = sum(n for cell, n in by_type.items() if re.search(r"__(dfxtp|dfrtp|dfstp|dfbbp|dfrbp|dfxbp|edfxtp|dfsbp|dlxtp)", cell))
    return cells, area, seq


def sta_script(netlist: Path, top: str, liberty: Path, sdc: Path, period_ns: float) -> str:
    return f"""read_liberty {liberty}
read_verilog {netlist}
link_design {top}
read_sdc {sdc}
create_clock -name core_clock -period {period_ns} [get_ports clk]
report_checks -path_delay max -digits 4
report_worst_slack -digits 4
exit
"""


def run_sta(netlist: Path, sdc: Path, out_dir: Path, corner: str, period_ns: float,
            top: str = "picorv32", timeout_s: float = 600) -> StaResult:
    out_dir.mkdir(parents=True, exist_ok=True)
    script = out_dir / f"sta_{corner}.tcl"
    canonical = out_dir / f"sta_{corner}.sdc"   # OpenSTA reads the SDC as closer.sdc emits it
    write_canonical(sdc, canonical)
    script.write_text(sta_script(netlist, top, pdk().liberty(corner), canonical, period_ns))
    done = run(Command(["sta", "-no_splash", "-exit", str(script)], cwd=out_dir,
                       timeout_s=timeout_s), out_dir / f"sta_{corner}.log")
    return StaResult(corner, period_ns, parse_worst_slack(done.log), done.log)


def parse_worst_slack(log: Path) -> float:
    text = log.read_text(errors="replace")
    if re.search(r"^Error", text, re.M):
        raise ToolError(f"OpenSTA reported an error; log: {log}")
    match = re.search(r"^worst slack\s+(-?[\d.]+(?:e-?\d+)?)", text, re.M)
    if not match:
        raise ToolError(f"no 'worst slack' line in OpenSTA log {log}")
    return float(match.group(1))
