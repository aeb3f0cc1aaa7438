"""The lint node: Verilator `--lint-only` on the design's RTL, the command SiliconCompiler's
verilator lint task builds (closer.flow.lint_task), with string parameters passed intact
(`-GP="v"`: no shell runs the command) and a black-box module per hard macro of the config (a
macro's module is defined by no RTL file; closer.flow.macros.blackbox_verilog) in `macros/`."""

from __future__ import annotations

from pathlib import Path

from closer.flow.direct.sources import DesignSources
from closer.procs import Command

BLACKBOX_DIR = "macros"


def write_blackboxes(node: Path, macro_lefs: list[Path]) -> list[str]:
    """`macros/<name>.v` per MACRO of each LEF; their paths relative to the node folder."""
    if not macro_lefs:
        return []
    from closer.flow.macros import blackbox_verilog
    from closer.physical.io.lef import read_macros

    out = []
    for lef in macro_lefs:
        for name in read_macros(lef):
            path = Path(BLACKBOX_DIR) / f"{name}.v"
            (node / path).parent.mkdir(exist_ok=True)
            (node / path).write_text(blackbox_verilog(name, lef))
            out.append(str(path))
    return out


def lint_command(node: Path, sources: DesignSources, blackboxes: list[str],
                 timeout_s: float | None = None) -> Command:
    argv = ["verilator", "-sv", "--top-module", sources.top,
            *(f"-G{name}={value}" for name, value in sources.params),
            *(f"-I{folder}" for folder in dict.fromkeys(map(str, sources.include_dirs))),
            *dict.fromkeys(map(str, sources.rtl)),
            "--lint-only", "--no-timing", *blackboxes]
    return Command(argv, cwd=node, timeout_s=timeout_s)


def parse_version(stdout: str) -> str:
    """`Verilator 5.048 2026-...` -> 5.048"""
    return stdout.split()[1]
