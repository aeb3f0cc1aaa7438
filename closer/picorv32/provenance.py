"""Provenance of every PicoRV32 result: tool versions, PDK corner(s), design revision."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from closer.designs.fetch import load_fetch_spec
from closer.pdk import default_pdk_root

VERSION_COMMANDS = {
    "yosys": ["yosys", "--version"],
    "opensta": ["sta", "-version"],
    "iverilog": ["iverilog", "-V"],
    "verilator": ["verilator", "--version"],
    "riscv_gcc": ["riscv64-unknown-elf-gcc", "--version"],
}


def tool_versions() -> dict[str, str]:
    versions = {}
    for name, argv in VERSION_COMMANDS.items():
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            text = (out.stdout or out.stderr).strip().splitlines()
            versions[name] = text[0] if text else "unknown"
        except (OSError, subprocess.TimeoutExpired):
            versions[name] = "not installed"
    import cocotb

    versions["cocotb"] = cocotb.__version__
    return versions


def design_revision(rtl: Path) -> dict[str, str]:
    spec = load_fetch_spec("picorv32")
    return {"upstream_commit": spec.commit,
            "rtl_sha256": hashlib.sha256(rtl.read_bytes()).hexdigest()}


def provenance(rtl: Path, corners: list[str]) -> dict:
    return {"tools": tool_versions(), "pdk_root": str(default_pdk_root()), "corners": corners,
            "design": design_revision(rtl)}
