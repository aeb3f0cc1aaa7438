"""Outside check: upstream's own firmware and testbench (`make test_synth` style) against OUR
sky130 gate-level netlist of `picorv32_axi`.

Upstream's `scripts/yosys/synth_sim.ys` synthesizes `picorv32_axi` with COMPRESSED_ISA, MUL, DIV,
IRQ and TRACE enabled and runs `testbench.v -DSYNTH_TEST`; we do the same with our synthesis to
the sky130 tt Liberty and the PDK's functional cell models. Everything runs in a scratch copy of
the fetched tree; nothing upstream is written into this repository.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from closer.pdk import pdk
from closer.picorv32.synth import SynthResult, synthesize
from closer.procs import Command, run

AXI_TOP = "picorv32_axi"
UPSTREAM_TEST_PARAMETERS = {"COMPRESSED_ISA": 1, "ENABLE_MUL": 1, "ENABLE_DIV": 1,
                            "ENABLE_IRQ": 1, "ENABLE_TRACE": 1}
TOOLCHAIN_PREFIX = "riscv64-unknown-elf-"


@dataclass(frozen=True)
class UpstreamResult:
    passed: bool
    trap_cycles: int | None
    synth: SynthResult
    log: Path
    wall_s: float


def prepare_tree(src: Path, work: Path) -> Path:
    tree = work / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(src, tree)
    return tree


def build_upstream_firmware(tree: Path, log_dir: Path) -> Path:
    run(Command(["make", "-C", str(tree), "firmware/firmware.hex",
                 f"TOOLCHAIN_PREFIX={TOOLCHAIN_PREFIX}"], timeout_s=600),
        log_dir / "firmware.log")
    return tree / "firmware" / "firmware.hex"


def testbench_commands(tree: Path, netlist: Path, vvp: Path) -> list[Command]:
    compile_ = Command(["iverilog", "-g2012", "-DSYNTH_TEST", "-DFUNCTIONAL", "-o", str(vvp),
                        str(tree / "testbench.v"), str(netlist),
                        *map(str, pdk().verilog_models)], cwd=tree)
    simulate = Command(["vvp", "-N", str(vvp)], cwd=tree, timeout_s=6 * 3600)
    return [compile_, simulate]


def parse_testbench_log(text: str) -> tuple[bool, int | None]:
    trap = re.search(r"TRAP after (\d+) clock cycles", text)
    return "ALL TESTS PASSED." in text, int(trap.group(1)) if trap else None


def run_upstream_testbench(src: Path, work: Path) -> UpstreamResult:
    tree = prepare_tree(src, work)
    build_upstream_firmware(tree, work)
    synth = synthesize([tree / "picorv32.v"], work / "synth", UPSTREAM_TEST_PARAMETERS,
                       top=AXI_TOP)
    compile_, simulate = testbench_commands(tree, synth.netlist, work / "testbench_synth.vvp")
    run(compile_, work / "iverilog.log")
    done = run(simulate, work / "testbench.log", check=False)
    passed, cycles = parse_testbench_log(done.log.read_text(errors="replace"))
    return UpstreamResult(passed and done.ok, cycles, synth, done.log, done.wall_s)
