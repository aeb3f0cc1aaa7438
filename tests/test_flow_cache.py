"""The flow's cache outside the run (closer.flow.cache): the prepared synthesis Liberty, Liberty
cell names, tool versions, the Python package list and SiliconCompiler's dependency check are
each computed once and reused, a changed input is computed again, a bad entry is rebuilt, and
without a usable cache the flow computes in place with the same result."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

import pytest

from closer.flow import cache
from closer.flow.dependency_check import dependency_check_once
from closer.flow.liberty_prep import cached_liberty_cells, prepared_liberty
from closer.flow.paths import FlowPaths
from closer.flow.platform import scan_liberty_cells
from closer.flow.records import CachedPackagesRecord
from closer.flow.runner import run_flow
from closer.flow.tool_versions import CachedVersion
from closer.paths import CACHE_ENV

SS = "sky130_fd_sc_hd__ss_100C_1v60"


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache" / "flow"


@pytest.fixture
def no_cache(tmp_path: Path, monkeypatch) -> None:
    """A cache root that cannot be created (its parent is a file; root ignores permissions)."""
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "a-file" / "cache"))


def test_cache_root_absent_when_it_cannot_be_created(no_cache):
    assert cache.cache_root() is None


def test_write_atomic_leaves_nothing_on_failure(tmp_path: Path):
    def fail(tmp: Path) -> None:
        tmp.write_text("half")
        raise RuntimeError("writer died")

    with pytest.raises(RuntimeError):
        cache.write_atomic(tmp_path / "entry", fail)
    assert list(tmp_path.iterdir()) == []
    cache.write_atomic(tmp_path / "entry", lambda tmp: tmp.write_text("whole"))
    assert (tmp_path / "entry").read_text() == "whole"
    assert stat.S_IMODE((tmp_path / "entry").stat().st_mode) == 0o644


@pytest.mark.slow
def test_prepared_liberty_is_siliconcompilers_preparation(cache_dir, pdk_paths, tmp_path: Path):
    """The cached file is byte for byte what SiliconCompiler writes into a node; a changed
    Liberty is a new entry holding the change."""
    from siliconcompiler.tools.yosys.prepareLib import process_liberty_file

    source = pdk_paths.liberty("ss_100C_1v60")
    entry = prepared_liberty(source, f"sc_sky130hd_{SS}.lib")
    assert entry.name == f"sc_sky130hd_{SS}.lib" and cache_dir in entry.parents
    assert entry.read_text() == process_liberty_file(str(source))
    assert prepared_liberty(source, f"sc_sky130hd_{SS}.lib") == entry

    changed = tmp_path / f"{SS}.lib"
    changed.write_text(source.read_text().replace("original_pin", "original_pin_x", 1)
                       + "\n/* changed */\n")
    other = prepared_liberty(changed, f"sc_sky130hd_{SS}.lib")
    assert other != entry and other.read_text().endswith("/* changed */\n")


def test_liberty_cells_scanned_once_and_rebuilt_when_bad(cache_dir, pdk_paths):
    liberty = pdk_paths.liberty("tt_025C_1v80")
    scans = []

    def scan(path: Path) -> list[str]:
        scans.append(path)
        return scan_liberty_cells(path)

    first = cached_liberty_cells(liberty, scan)
    assert "sky130_fd_sc_hd__inv_1" in first and cached_liberty_cells(liberty, scan) == first
    assert len(scans) == 1
    (entry,) = (cache_dir / "liberty-cells").iterdir()
    entry.write_text(json.dumps({"not": "a list"}))
    assert cached_liberty_cells(liberty, scan) == first and len(scans) == 2


class _FakeTask:
    """The part of SiliconCompiler's Task that CachedVersion uses."""

    def __init__(self, exe: Path) -> None:
        self.exe, self.logger = str(exe), logging.getLogger("test-tool")

    def get(self, key: str):
        assert key == "vswitch"
        return ["--version"]

    def get_exe(self) -> str:
        return self.exe

    def parse_version(self, stdout: str) -> str:
        return stdout.split()[1]

    def get_exe_version(self, workdir=None) -> str:
        import subprocess

        return self.parse_version(subprocess.run([self.exe, "--version"], capture_output=True,
                                                 text=True).stdout)


class _VersionedTask(CachedVersion, _FakeTask):
    pass


def _tool(path: Path, version: str, code: int = 0) -> Path:
    path.write_text(f"#!/bin/sh\necho run >> {path}.calls\necho tool {version}\nexit {code}\n")
    path.chmod(0o755)
    return path


def _calls(tool: Path) -> int:
    calls = Path(f"{tool}.calls")
    return len(calls.read_text().splitlines()) if calls.is_file() else 0


def test_tool_version_checked_once_per_binary(cache_dir, tmp_path: Path):
    tool = _tool(tmp_path / "tool", "1.2")
    assert _VersionedTask(tool).get_exe_version() == "1.2"
    assert _VersionedTask(tool).get_exe_version() == "1.2"
    assert _calls(tool) == 1
    _tool(tool, "1.30")                               # replaced binary: new size and mtime
    assert _VersionedTask(tool).get_exe_version() == "1.30"


def test_failed_version_run_is_not_cached(cache_dir, tmp_path: Path):
    tool = _tool(tmp_path / "tool", "9.9", code=1)
    _VersionedTask(tool).get_exe_version()
    _VersionedTask(tool).get_exe_version()
    assert _calls(tool) >= 4                          # ours and SiliconCompiler's, both times
    assert not (cache_dir / "tool-versions").exists()


def test_python_packages_recorded_once_per_environment(cache_dir, monkeypatch):
    from siliconcompiler.schema_support.record import RecordSchema

    freezes = []

    def freeze(self) -> None:
        freezes.append(1)
        self.set("pythonpackage", ["alpha==1", "beta==2"])

    monkeypatch.setattr(RecordSchema, "record_python_packages", freeze)
    for _ in range(2):
        record = CachedPackagesRecord()
        record.record_python_packages()
        assert record.get("pythonpackage") == ["alpha==1", "beta==2"]
    assert len(freezes) == 1


def test_dependency_check_runs_once_and_replays_its_warnings(cache_dir, monkeypatch, caplog):
    import siliconcompiler.utils as sc_utils

    checks = []

    def check(logger: logging.Logger) -> None:
        checks.append(1)
        logger.warning("closer requires x>=2, installed 1")

    monkeypatch.setattr(sc_utils, "check_python_dependencies", check)
    logger = logging.getLogger("test-dependency-check")
    for _ in range(2):
        caplog.clear()
        with dependency_check_once():
            sc_utils.check_python_dependencies(logger)
        assert [r.getMessage() for r in caplog.records] == ["closer requires x>=2, installed 1"]
    assert len(checks) == 1 and sc_utils.check_python_dependencies is check


def _synth_run(out: Path) -> tuple[bytes, dict, list[Path]]:
    """SiliconCompiler's engine: its synthesis task takes the cached Liberty (CloserSynthesis)."""
    result = run_flow("gcd", to="synth", out=out, engine="sc")
    node = FlowPaths(out, "gcd").node_dir("synth")
    netlist = next((node / "outputs").glob("*.vg")).read_bytes()
    metadata = json.loads(Path(result.metadata).read_text())
    return netlist, metadata, sorted(p for p in (node / "inputs").iterdir() if p.suffix == ".lib")


@pytest.mark.slow
def test_synthesis_reads_the_cached_liberty(cache_dir, tmp_path: Path, monkeypatch):
    """gcd to synth with the real tools: with the cache, no Liberty copy in the node and the
    manifest names the cached file; without a usable cache, SiliconCompiler's copy; the netlist
    and metadata.json are the same either way."""
    cached_netlist, cached_meta, cached_libs = _synth_run(tmp_path / "cached")
    manifest = (FlowPaths(tmp_path / "cached", "gcd").node_dir("synth") / "sc_manifest.tcl")
    assert cached_libs == [] and str(cache_dir / "liberty") in manifest.read_text()
    assert list((cache_dir / "tool-versions").iterdir())

    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "a-file" / "cache"))
    plain_netlist, plain_meta, plain_libs = _synth_run(tmp_path / "plain")
    assert [p.name for p in plain_libs] == [f"sc_sky130hd_{SS}.lib"]
    assert cached_netlist == plain_netlist
    assert cached_meta == plain_meta
    assert os.path.getsize(plain_libs[0]) > 1_000_000
