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


def test_tool_versions_are_probed_once_per_set_of_binaries(monkeypatch, tmp_path):
    """The versions are kept under the tools' stat keys: a second process reads them back without
    probing; a replaced program (another size or mtime) is probed again."""
    import closer.toolchain as toolchain

    monkeypatch.setenv("CLOSER_CACHE_DIR", str(tmp_path / "cache"))
    probed = []
    real_probe = toolchain.probe
    monkeypatch.setattr(toolchain, "probe", lambda tool: probed.append(tool.name) or real_probe(tool))
    toolchain.tool_versions.cache_clear()
    first = toolchain.tool_versions()
    assert first["iverilog"].startswith("11.") and "yosys" in probed
    probed.clear()
    toolchain.tool_versions.cache_clear()
    assert toolchain.tool_versions() == first and probed == []

    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    fake = fake_bin / "iverilog"
    fake.write_text("#!/bin/sh\necho 'Icarus Verilog version 12.0 (fake)'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(toolchain, "search_path", lambda: f"{fake_bin}:{os.environ['PATH']}")
    toolchain.tool_versions.cache_clear()
    assert toolchain.tool_versions()["iverilog"] == "12.0" and "iverilog" in probed
    toolchain.tool_versions.cache_clear()


def test_public_versions_names_the_tools_and_rejects_a_bad_argument():
    import sys

    done = subprocess.run([sys.executable, "-m", "closer.tasks.public_versions", "verify"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("closer public checks ") and "qrouter" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "closer.tasks.public_versions", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "usage:" in bad.stderr and "Traceback" not in bad.stderr
