"""Direct Yosys synthesis and OpenSTA timing of firdma configurations (golden or weak RTL).

This is the firdma feature's own measurement (cell count, area, worst setup slack) used by its
tests and by bench/firdma_synth.py for docs/firdma.md; the general flow lives in closer.flow.
Yosys: read_verilog -sv, synth -flatten, dfflibmap + abc on the tt Liberty, stat -liberty.
OpenSTA (Debian `sta`): the netlist with the design's SDC at the configuration's clock period.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

from closer.errors import ToolError
from closer.firdma.oracle import FirdmaConfig, firdma_paths, rtl_sources
from closer.pdk import PdkPaths, pdk
from closer.procs import Command, run
from closer.sdc import write_canonical

CORNER = "tt_025C_1v80"
SRAM_LIB = "sky130_sram_2kbyte_1rw1r_32x512_8_TT_1p8V_25C.lib"
ABC_CONSTR = "set_driving_cell sky130_fd_sc_hd__inv_2\nset_load 0.005\n"  # as ORFS' abc.constr


@dataclass(frozen=True)
class SynthResult:
    config: str
    cells: int
    area_um2: float
    flops: int
    macros: int
    netlist: Path
    log: Path
    wall_s: float


@dataclass(frozen=True)
class StaResult:
    corner: str
    period_ns: float
    wns_ns: float           # worst setup slack (negative: the clock is missed)
    tns_ns: float
    log: Path

    @property
    def met(self) -> bool:
        return self.wns_ns >= 0.0


def _verilog_string(text: str) -> str:
    """A Verilog string parameter as the number Yosys' chparam accepts (8 bits a character)."""
    return f"{8 * len(text)}'h{text.encode().hex()}"


def sram_liberty(paths: PdkPaths) -> Path:
    return paths.sram_macros / "lib" / SRAM_LIB


def synth_script(rtl_dir: Path, config: FirdmaConfig, out_dir: Path, paths: PdkPaths) -> str:
    liberty = paths.liberty(CORNER)
    sources = [p for p in rtl_sources(rtl_dir, config) if p.suffix == ".sv"]  # not the SRAM sim model
    params = " ".join(
        f"-set {name} {_verilog_string(value) if isinstance(value, str) else value}"
        for name, value in config.parameters.items())
    libs = f"-liberty {liberty}"
    lines = []
    if config.mem_style == "macro":
        lines.append(f"read_liberty -lib {sram_liberty(paths)}")
        libs += f" -liberty {sram_liberty(paths)}"
    lines += [
        "read_verilog -sv " + " ".join(str(p) for p in sources),
        f"chparam {params} firdma",
        "hierarchy -check -top firdma",
        "synth -top firdma -flatten",
        f"dfflibmap -liberty {liberty}",
        # With a constraint file ABC also buffers high-fanout nets and sizes cells (buffer; upsize;
        # dnsize), as a placement flow's repair step would; without it 1000-flop enables are unbuffered.
        f"abc -liberty {liberty} -constr {out_dir / 'abc.constr'} -D {int(config.period_ns * 1000)}",
        "setundef -zero",
        "hilomap -hicell sky130_fd_sc_hd__conb_1 HI -locell sky130_fd_sc_hd__conb_1 LO",
        "opt_clean -purge",
        f"tee -o {out_dir / 'stat.txt'} stat {libs}",
        f"write_verilog -noattr -noexpr {out_dir / 'firdma.netlist.v'}",
    ]
    return "\n".join(lines) + "\n"


def synthesize(rtl_dir: Path, config: FirdmaConfig, out_dir: Path, timeout_s: float = 1800) -> SynthResult:
    paths = pdk()
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    script = out_dir / "synth.ys"
    (out_dir / "abc.constr").write_text(ABC_CONSTR)
    script.write_text(synth_script(rtl_dir, config, out_dir, paths))
    done = run(Command(["yosys", "-s", str(script)], cwd=out_dir, timeout_s=timeout_s), out_dir / "yosys.log")
    stat = (out_dir / "stat.txt").read_text()
    return SynthResult(config.name, *parse_stat(stat, out_dir / "stat.txt"), out_dir / "firdma.netlist.v",
                       done.log, done.wall_s)


def parse_stat(text: str, source: Path) -> tuple[int, float, int, int]:
    """(cells, chip area µm², flip-flops, SRAM macros) from Yosys `stat -liberty` output, whose
    rows are `<count> <area> <cell>` (area may be printed as 7.58E+04)."""
    cells = re.search(r"^\s*(\d+)\s+\S+\s+cells\s*$", text, re.M)
    area = re.search(r"Chip area for (?:top )?module '\\?firdma':\s+([\d.]+)", text)
    if not cells or not area:
        raise ToolError(f"cannot read cell count and chip area from {source}")
    rows = re.findall(r"^\s*(\d+)\s+\S+\s+(\w+)\s*$", text, re.M)
    flops = sum(int(n) for n, cell in rows if re.match(r"sky130_fd_sc_hd__s?e?df", cell))
    macros = sum(int(n) for n, cell in rows if cell.startswith("sky130_sram_"))
    return int(cells.group(1)), float(area.group(1)), flops, macros


def sta(netlist: Path, config: FirdmaConfig, out_dir: Path, corner: str = CORNER,
        timeout_s: float = 900) -> StaResult:
    """Setup timing of `netlist` at `corner` (the SRAM macro has only a typical-corner Liberty,
    which is used at every corner)."""
    paths = pdk()
    netlist, out_dir = netlist.resolve(), out_dir.resolve()  # the script runs in out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    source = out_dir / "firdma.source.sdc"
    source.write_text(sdc_text(config.period_ns))
    sdc = out_dir / "firdma.sdc"   # what OpenSTA reads: the canonical SDC closer.sdc emits
    write_canonical(source, sdc)
    libs = [paths.liberty(corner)] + ([sram_liberty(paths)] if config.mem_style == "macro" else [])
    script = out_dir / f"sta-{corner}.tcl"
    script.write_text("\n".join([*(f"read_liberty {lib}" for lib in libs),
                                 f"read_verilog {netlist}", "link_design firdma", f"read_sdc {sdc}",
                                 "report_checks -path_delay max -fields {slew cap input_pins} -digits 3",
                                 "report_worst_slack -digits 3", "report_tns -digits 3", "exit", ""]))
    done = run(Command(["sta", str(script)], cwd=out_dir, timeout_s=timeout_s), out_dir / f"sta-{corner}.log")
    text = done.log.read_text()
    wns = re.search(r"worst slack\s+(-?[\d.]+)", text)
    tns = re.search(r"tns\s+(-?[\d.]+)", text)
    if not wns or not tns:
        raise ToolError(f"cannot read worst slack / tns from {done.log}")
    return StaResult(corner, config.period_ns, float(wns.group(1)), float(tns.group(1)), done.log)


def sdc_text(period_ns: float) -> str:
    """designs/firdma/constraints/firdma.sdc with the configuration's period."""
    template = (firdma_paths().design / "constraints" / "firdma.sdc").read_text()
    return re.sub(r"-period\s+[\d.]+", f"-period {period_ns}", template)


def as_record(synth: SynthResult, timings: list[StaResult]) -> dict:
    record = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(synth).items()}
    for t in timings:
        record[f"sta__{t.corner}"] = {"period_ns": t.period_ns, "wns_ns": t.wns_ns, "tns_ns": t.tns_ns,
                                      "timing_met": t.met, "log": str(t.log)}
    return record
