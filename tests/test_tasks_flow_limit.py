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


def _two_scorings(tmp_path: Path, shared: Path | None):
    """The same design folder flowed twice, as the hidden and public scorings of one evaluation do."""
    outcomes = []
    for label in ("hidden", "public"):
        folder = tmp_path / label / "gcd"
        shutil.copytree(repo_paths().design_dir("gcd"), folder)
        outcomes.append(checks.run_synthesis(folder, _Task(), tmp_path / label / "flow", to="synth",
                                             timeout_s=600, shared=shared))
    return outcomes


def test_one_evaluations_scorings_share_one_run_without_a_cache(tmp_path: Path, no_flow_reuse):
    first, second = _two_scorings(tmp_path, shared=tmp_path / "shared")
    assert first.reused is None and second.reused is not None
    assert second.metrics == first.metrics
    assert second.netlist.is_file() and second.netlist.is_relative_to(tmp_path / "public")
    # without the shared folder each scoring runs its own flow
    first, second = _two_scorings(tmp_path / "apart", shared=None)
    assert first.reused is None and second.reused is None


def test_a_time_cut_run_is_shared_within_the_evaluation_only(tmp_path: Path, monkeypatch):
    from closer.flow import reuse

    cache = tmp_path / "cache"
    monkeypatch.setenv(reuse.CACHE_ENV, str(cache))
    monkeypatch.setattr(reuse, "time_cut", lambda metadata: True)  # as if a time budget had cut the run
    first, second = _two_scorings(tmp_path, shared=tmp_path / "shared")
    assert first.reused is None and second.reused is not None
    assert not any(cache.glob("*/*/entry.json"))  # never in the flow cache: another evaluation runs it again
    assert any((tmp_path / "shared").glob("*/*/entry.json"))


def test_a_failed_run_is_shared_within_the_evaluation(tmp_path: Path, no_flow_reuse):
    """Stopped at its limit, the first scoring's flow is not run again by the second: it gets the
    same error (and the partial run), marked as reused."""
    outcomes = []
    for label in ("hidden", "public"):
        folder = tmp_path / label / "gcd"
        shutil.copytree(repo_paths().design_dir("gcd"), folder)
        outcomes.append(checks.run_synthesis(folder, _Task(), tmp_path / label / "flow", to="pnr",
                                             timeout_s=3.0, shared=tmp_path / "shared"))
    first, second = outcomes
    assert first.error and "limit" in first.error and first.reused is None
    assert second.error == first.error and second.reused is not None and second.metadata is None
