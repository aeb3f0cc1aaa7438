"""The one place that knows where PicoRV32's files of ours live::

    designs/picorv32/
        design.toml  targets.toml  constraints/picorv32.sdc
        firmware/    manifest.toml, io.h, test_macros.h, link.ld, start.S, *.S, *.c
        tasks/       fmax.toml, coverage.toml, debug.toml
                     debug/faults/*.patch   (our fault patches, applied at fetch time)
                     debug/hidden.toml      (which hidden program detects which fault)
    oracles/picorv32/
        firmware_tb.py   cocotb memory-model testbench
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from closer.paths import repo_paths

DESIGN = "picorv32"


@dataclass(frozen=True)
class PicoPaths:
    repo_root: Path

    @property
    def design(self) -> Path:
        return self.repo_root / "designs" / DESIGN

    @property
    def design_toml(self) -> Path:
        return self.design / "design.toml"

    @property
    def sdc(self) -> Path:
        return self.design / "constraints" / "picorv32.sdc"

    @property
    def firmware(self) -> Path:
        return self.design / "firmware"

    @property
    def manifest(self) -> Path:
        return self.firmware / "manifest.toml"

    @property
    def tasks(self) -> Path:
        return self.design / "tasks"

    def task_toml(self, task: str) -> Path:
        return self.tasks / f"{task}.toml"

    @property
    def debug_hidden(self) -> Path:
        return self.tasks / "debug" / "hidden.toml"

    @property
    def oracle_dir(self) -> Path:
        return self.repo_root / "oracles" / DESIGN

    @property
    def testbench_module(self) -> str:
        return "firmware_tb"


def pico_paths() -> PicoPaths:
    return PicoPaths(repo_paths().root)
