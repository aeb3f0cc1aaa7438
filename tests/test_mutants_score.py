"""Mutation scoring with real Yosys, pyslang and Icarus runs on the fixture FIFO (both directions).

One hidden set (N=8) is generated once for the module; the full oracle, a reset-only testbench
and an always-failing testbench are scored against it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from closer.errors import InputError
from closer.mutants.design_input import load_design
from closer.mutants.generate import GenerateOptions, generate
from closer.mutants.models import Family, MutantSetName, Outcome
from closer.mutants.paths import MutantStorePaths
from closer.mutants.score import ScoreOptions, default_run_dir, score
from closer.mutants.testbench import Testbench, run_testbench
from closer.paths import repo_paths, schema_path
from tests.conftest import require_tool

FIXTURES = Path(__file__).parent / "fixtures" / "mutants"
FIFO = FIXTURES / "fifo"
ORACLE = Testbench.from_path(FIFO / "oracle" / "test_fifo.py")
RESET_ONLY = Testbench.from_path(FIXTURES / "testbenches" / "test_fifo_reset_only.py")
ALWAYS_FAILS = FIXTURES / "testbenches" / "test_fifo_always_fails.py"
NO_CHECKS = Testbench.from_path(FIXTURES / "testbenches" / "test_fifo_no_checks.py")
N = 8


@pytest.fixture(scope="module")
def hidden(tmp_path_factory) -> MutantStorePaths:
    require_tool("iverilog")
    require_tool("yosys")
    store = MutantStorePaths(tmp_path_factory.mktemp("mutants") / "hidden")
    generate(load_design(str(FIFO)), ORACLE, store, GenerateOptions(n=N, seed=1, set_name=MutantSetName.HIDDEN))
    return store


@pytest.fixture(scope="module")
def full_oracle_run(hidden):
    run_dir = default_run_dir(hidden, ORACLE, "icarus")
    return score(load_design(str(FIFO)), hidden, ORACLE, run_dir, ScoreOptions()), run_dir


def _validate(data: dict, name: str) -> None:
    jsonschema.validate(data, json.loads(schema_path(name).read_text()))


def test_generated_set_is_buildable_labelled_and_schema_valid(hidden):
    manifest = json.loads(hidden.manifest.read_text())
    _validate(manifest, "mutants-manifest")
    assert manifest["n"] == N == len(manifest["mutants"])
    assert {m["family"] for m in manifest["mutants"]} == {Family.YOSYS, Family.SOURCE}
    assert len({m["id"] for m in manifest["mutants"]}) == N
    for m in manifest["mutants"]:
        assert all((hidden.mutant_dir(m["id"]) / s).is_file() for s in m["sources"])
        assert m["location"]["file"] == "rtl/fifo.v" and m["location"]["line"] > 0
    assert manifest["candidates_tried"] == N + len(manifest["excluded"])
    assert "yosys" in manifest["provenance"]["tools"] and "icarus" in manifest["provenance"]["tools"]


def test_full_oracle_kills_at_least_90_percent_of_hidden_set(full_oracle_run):
    report, run_dir = full_oracle_run
    assert report.golden.passed and not report.golden_alarm
    assert report.n == N
    assert report.score >= 0.9
    _validate(json.loads((run_dir / "score.json").read_text()), "mutants-score")


def test_reset_only_testbench_kills_little(hidden):
    report = score(load_design(str(FIFO)), hidden, RESET_ONLY, default_run_dir(hidden, RESET_ONLY, "icarus"),
                   ScoreOptions())
    assert report.golden.passed
    assert report.n == N
    assert report.score <= 0.3, [(r.id, r.outcome) for r in report.mutants]


def test_always_failing_testbench_scores_zero_at_the_golden_gate(hidden, tmp_path):
    closer = repo_paths().venv / "bin" / "closer"
    done = subprocess.run([str(closer), "mutants", "score", str(FIFO), "--testbench", str(ALWAYS_FAILS),
                           "--store", str(hidden.root), "--work", str(tmp_path / "run"), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    _validate(report, "mutants-score")
    assert report["golden_alarm"] is True and report["score"] == 0.0 and report["killed"] == 0
    assert report["n"] == N and {m["outcome"] for m in report["mutants"]} == {Outcome.NOT_RUN}
    assert not (tmp_path / "run" / "sim" / report["mutants"][0]["id"]).exists(), "no mutant may run"


def test_mutant_that_does_not_build_is_counted_and_reported_and_run_resumes(hidden, full_oracle_run, tmp_path):
    _, run_dir = full_oracle_run
    store = MutantStorePaths(tmp_path / "store")
    shutil.copytree(hidden.root, store.root, ignore=shutil.ignore_patterns("candidates", "sim"))
    manifest = json.loads(store.manifest.read_text())
    broken = manifest["mutants"][0]
    victim = store.mutant_dir(broken["id"]) / broken["sources"][-1]
    victim.write_text(victim.read_text().replace("endmodule", "endmodule_typo", 1))
    copied_run = store.runs / run_dir.name
    (copied_run / "results" / f"{broken['id']}.json").unlink()
    (copied_run / "score.json").unlink()

    report = score(load_design(str(FIFO)), store, ORACLE, copied_run, ScoreOptions())
    assert report.resumed == N - 1, "finished results must be reused, not re-run"
    by_id = {r.id: r for r in report.mutants}
    assert by_id[broken["id"]].outcome == Outcome.BUILD_ERROR and not by_id[broken["id"]].killed
    assert report.n == N and report.build_errors == 1
    assert report.score == pytest.approx(report.killed / N) and report.killed <= N - 1


def test_run_folder_of_another_testbench_is_refused(hidden, full_oracle_run):
    _, run_dir = full_oracle_run
    with pytest.raises(InputError, match="different testbench_sha256"):
        score(load_design(str(FIFO)), hidden, RESET_ONLY, run_dir, ScoreOptions())


def test_timeout_kills(tmp_path):
    trial = run_testbench(ORACLE, load_design(str(FIFO)), [FIFO / "rtl" / "fifo.v"], tmp_path / "sim",
                          "icarus", timeout_s=0.3)
    assert trial.outcome == Outcome.TIMEOUT


def test_public_set_is_disjoint_and_unkillable_candidates_are_excluded(hidden, tmp_path):
    """An 'oracle' that checks nothing kills no candidate: each is listed as excluded (likely
    equivalent for that oracle), none enters the set, and the shortfall is noted."""
    public = MutantStorePaths(tmp_path / "public")
    options = GenerateOptions(n=2, seed=1, set_name=MutantSetName.PUBLIC, max_candidates=3)
    manifest = generate(load_design(str(FIFO)), NO_CHECKS, public, options)
    hidden_ids = {m["id"] for m in json.loads(hidden.manifest.read_text())["mutants"]}
    assert {x.id for x in manifest.excluded}.isdisjoint(hidden_ids)
    assert manifest.n == 0 and manifest.mutants == [] and manifest.candidates_tried == 3
    assert [x.reason for x in manifest.excluded] == ["survives_reference_oracle"] * 3
    assert any("only 0 of 2" in note for note in manifest.notes)
    with pytest.raises(InputError, match="already exists"):
        generate(load_design(str(FIFO)), NO_CHECKS, public, options)

