"""Provenance labels for every stored record: tool versions, design revision, time."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
from pathlib import Path

from closer import __version__
from closer.mutants.design_input import DesignUnderTest
from closer.mutants.models import Provenance
from closer.procs import Command, run


def _first_line(argv: list[str], log: Path) -> str:
    try:
        done = run(Command(argv, timeout_s=60), log, check=False)
    except Exception as exc:  # a missing tool is recorded, not fatal, in a label
        return f"unavailable ({exc.__class__.__name__})"
    lines = [l for l in done.log.read_text(errors="replace").splitlines()[1:] if l.strip()]
    return lines[0].strip() if lines else "unknown"


def provenance(design: DesignUnderTest, simulator: str, work: Path) -> Provenance:
    tools = {
        "yosys": _first_line(["yosys", "--version"], work / "version-yosys.log"),
        "cocotb": importlib.metadata.version("cocotb"),
        "pyslang": importlib.metadata.version("pyslang"),
    }
    if simulator == "icarus":
        tools["icarus"] = _first_line(["iverilog", "-V"], work / "version-iverilog.log")
    else:
        tools["verilator"] = _first_line(["verilator", "--version"], work / "version-verilator.log")
    return Provenance(closer_version=__version__, tools=tools, design_revision=design.revision(),
                      created_utc=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
