"""The EDA programs a sandbox must not reach: the metered tools are the agent's only way to run
them. Found from the package managers' own file lists (not a list of names that drifts): every
executable file of the EDA Debian packages, the import folders and scripts of the EDA Python
distributions in the venv, and the tools Closer builds into the venv (qrouter)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

# Debian packages whose programs simulate, synthesize, time, place, route or check a design
# (scripts/bootstrap.sh installs them).
EDA_DEBIAN_PACKAGES = ("iverilog", "verilator", "yosys", "opensta", "klayout", "graywolf", "qrouter",
                       "magic", "netgen-lvs")
# Python distributions that are (or embed) EDA tools.
EDA_PYTHON_DISTRIBUTIONS = ("pyosys", "klayout", "verilator", "cocotb", "cocotb-bus", "cocotbext-axi",
                            "siliconcompiler", "systemc", "pyverilog", "pyslang", "lambdapdk", "lambdalib")
# Closer's own launchers of those tools (console scripts of this package).
LAUNCHER_SCRIPTS = ("yosys", "verilator")
VENV_BUILT_TOOLS = ("opt",)  # .venv/opt/<tool>: built by scripts (qrouter)


@dataclass(frozen=True)
class Hidden:
    files: list[Path] = field(default_factory=list)
    dirs: list[Path] = field(default_factory=list)


def eda_paths(venv: Path) -> Hidden:
    files = [*debian_executables(EDA_DEBIAN_PACKAGES), *python_scripts(venv)]
    dirs = [*python_import_dirs(), *(venv / name for name in VENV_BUILT_TOOLS if (venv / name).is_dir())]
    return Hidden(files=sorted(set(files)), dirs=sorted(set(dirs)))


@lru_cache(maxsize=4)
def debian_executables(packages: tuple[str, ...]) -> tuple[Path, ...]:
    """Executable regular files of the installed packages (`dpkg -L`), resolved to the paths
    that exist (usrmerge: /bin/x is /usr/bin/x)."""
    done = subprocess.run(["dpkg", "-L", *packages], capture_output=True, text=True, check=False)
    found = set()
    for line in done.stdout.splitlines():
        path = Path(line.strip())
        if path.is_file() and not path.is_symlink() and os.access(path, os.X_OK):
            found.add(path.resolve())
    return tuple(sorted(p for p in found if p.parts[1] in ("usr", "opt")))


def _distributions() -> list[importlib.metadata.Distribution]:
    dists = []
    for name in EDA_PYTHON_DISTRIBUTIONS:
        try:
            dists.append(importlib.metadata.distribution(name))
        except importlib.metadata.PackageNotFoundError:
            continue
    return dists


def python_import_dirs() -> list[Path]:
    """Top-level folders the EDA distributions install into site-packages (and their .libs)."""
    dirs = set()
    for dist in _distributions():
        for entry in dist.files or []:
            parts = Path(entry).parts
            if len(parts) > 1 and not parts[0].endswith((".dist-info", ".egg-info")) and parts[0] != "..":
                path = Path(dist.locate_file(parts[0])).resolve()  # the path bound inside (a linked venv's target)
                if path.is_dir():
                    dirs.add(path)
    return sorted(dirs)


def python_scripts(venv: Path) -> list[Path]:
    """Console scripts of the EDA distributions and Closer's tool launchers in the venv's bin."""
    bin_dir = venv / "bin"
    names = set(LAUNCHER_SCRIPTS)
    for dist in _distributions():
        names.update(ep.name for ep in dist.entry_points if ep.group in ("console_scripts", "gui_scripts"))
        for entry in dist.files or []:
            parts = Path(entry).parts
            if len(parts) >= 2 and parts[-2] == "bin" and ".." in parts:
                names.add(parts[-1])
    return [bin_dir / name for name in sorted(names) if (bin_dir / name).is_file()]


def interpreter_prefix() -> Path:
    return Path(sys.prefix)
