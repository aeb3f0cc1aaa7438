"""`closer doctor` and `closer pdk check` against the real machine, in both directions."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from closer.pdk import CORNERS, PdkPaths, check_pdk
from closer.toolchain import TOOLS, Tool, probe

CLOSER = [str(Path(__file__).parents[1] / ".venv" / "bin" / "closer")]


def _closer(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLOSER, *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200", **(env or {})})


def test_doctor_passes_and_lists_versions():
    proc = _closer("doctor")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for tool in ("yosys", "iverilog", "verilator", "sta", "klayout", "qrouter", "graywolf"):
        assert tool in proc.stdout
    assert "0.70" in proc.stdout  # the pyosys launcher's Yosys
    assert "gate-level simulation" in proc.stdout


def test_doctor_fails_without_pdk():
    proc = _closer("doctor", env={"PDK_ROOT": "/nonexistent"})
    assert proc.returncode == 1
    assert "PDK" in proc.stdout and "/nonexistent" in proc.stdout


def test_probe_reports_missing_tool():
    status = probe(Tool("nothing", "closer-no-such-tool", "test", True, ("--version",), r"(.+)"))
    assert status.path is None and not status.ok


def test_every_required_tool_is_found():
    missing = [t.name for t in TOOLS if t.required and not probe(t).ok]
    assert missing == []


def test_pdk_check_accepts_shared_pdk(pdk_paths):
    results = check_pdk(pdk_paths)
    assert all(r.ok for r in results), [r for r in results if not r.ok]
    assert _closer("pdk", "check").returncode == 0


def test_pdk_check_rejects_missing_root():
    proc = _closer("pdk", "check", env={"PDK_ROOT": "/nonexistent"})
    assert proc.returncode != 0
    assert "/nonexistent" in proc.stdout + proc.stderr


def _pdk_copy(pdk_paths: PdkPaths, tmp_path: Path) -> PdkPaths:
    """A PDK tree of symlinks to the real files, so single files can be broken cheaply."""
    fake = PdkPaths(tmp_path / "pdk")
    for real, link in zip(pdk_paths.required_files().values(), fake.required_files().values()):
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(real)
    return fake


def test_pdk_check_names_a_missing_liberty(pdk_paths, tmp_path):
    fake = _pdk_copy(pdk_paths, tmp_path)
    fake.liberty("ss_100C_1v60").unlink()
    proc = _closer("pdk", "check", env={"PDK_ROOT": str(fake.root)})
    assert proc.returncode == 1
    assert "liberty ss_100C_1v60" in proc.stdout


def test_pdk_check_rejects_a_truncated_liberty(pdk_paths, tmp_path):
    fake = _pdk_copy(pdk_paths, tmp_path)
    target = fake.liberty(CORNERS[0])
    text = Path(os.path.realpath(target)).read_text()
    target.unlink()
    target.write_text(text[: len(text) // 2])
    bad = [r.item for r in check_pdk(fake) if not r.ok]
    assert bad == [f"liberty {CORNERS[0]}"]
