"""The evaluator's flow runs in its own process group under a wall-clock limit: a run past the
limit is stopped and reported as an error (never raised), so the record is still written."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from closer.paths import repo_paths
from closer.tasks import checks


class _Task:  # the two fields run_synthesis reads
    design, top, config = "gcd", "gcd", "default"


def test_flow_past_its_limit_is_stopped_and_reported(tmp_path: Path, no_flow_reuse):
    folder = tmp_path / "gcd"
    shutil.copytree(repo_paths().design_dir("gcd"), folder)
    start = time.monotonic()
    outcome = checks.run_synthesis(folder, _Task(), tmp_path / "flow", to="pnr", timeout_s=3.0)
    assert time.monotonic() - start < 30
    assert outcome.error and "limit" in outcome.error and outcome.metadata is None


def test_flow_within_its_limit_returns_the_metadata(tmp_path: Path):
    folder = tmp_path / "gcd"
    shutil.copytree(repo_paths().design_dir("gcd"), folder)
    outcome = checks.run_synthesis(folder, _Task(), tmp_path / "flow", to="synth", timeout_s=600)
    assert outcome.error is None and outcome.metrics["synth__design__instance__count"] > 0
    assert outcome.netlist is not None and outcome.netlist.is_file()
