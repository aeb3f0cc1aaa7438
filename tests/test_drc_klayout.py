"""closer.drc with the real KLayout: generated labels verified, gold 1 / null 0, the perturbed pool
through every selector and the report, a Rule2DRC-format folder imported and evaluated, hostile
scripts contained."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from closer.drc.cli import drc_group
from closer.drc.evaluate import Outcome, evaluate_scripts
from closer.drc.generate import GenerateOptions, generate
from closer.drc.problem import load_problem
from closer.drc.runner import RunSettings
from closer.drc.shapes import Case, rect, write_gds
from closer.drc.suite import load_suite

pytestmark = pytest.mark.slow


def _cli(*args: str) -> str:
    result = CliRunner().invoke(drc_group, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    """One problem per rule kind, every label checked by the gold script."""
    out = tmp_path_factory.mktemp("drc") / "suite"
    manifest = generate(GenerateOptions(out=out, limit=6, workers=2))
    assert len({p.kind for p in manifest.problems}) == 6
    assert all(p.gold_verified and p.caught for p in manifest.problems)
    return out


def test_generated_suite_is_in_the_rule2drc_layout(suite):
    manifest, problems = load_suite(suite)
    for problem in problems:
        assert problem.gold == problem.folder / "gold" / f"{problem.spec.id}.drc"
        assert {lay.file.parent.name for lay in problem.layouts} == {"pass", "fail"}
        assert all((lay.file.parent.name == "fail") == lay.violates for lay in problem.layouts)
    assert manifest.suite.startswith("closer-sky130-rule2drc/")
    with pytest.raises(Exception, match="already exists|not empty"):
        generate(GenerateOptions(out=suite, limit=1))


def test_gold_scores_one_and_null_zero(suite, tmp_path):
    for baseline, rate in (("gold", 1.0), ("null", 0.0)):
        _cli("pool", suite, "--baseline", baseline, "--n", 2, "--out", tmp_path / f"pool-{baseline}")
        output = _cli("run", suite, "--candidates", tmp_path / f"pool-{baseline}", "--out", tmp_path / f"run-{baseline}")
        results = json.loads((tmp_path / f"run-{baseline}" / "results.json").read_text())
        success = sum(r["outcome"] == "success" for r in results["results"]) / len(results["results"])
        assert success == rate, output


def test_perturbed_pool_runs_every_selector_and_reports(suite, tmp_path):
    _cli("pool", suite, "--baseline", "perturbed", "--n", 5, "--limit", 3, "--out", tmp_path / "pool")
    _cli("run", suite, "--candidates", tmp_path / "pool", "--out", tmp_path / "run")
    output = _cli("select", suite, "--candidates", tmp_path / "pool", "--results", tmp_path / "run", "--out", tmp_path / "sel")
    assert output.startswith("Oracle@5")
    records = json.loads((tmp_path / "sel" / "selection.json").read_text())["records"]
    assert {r["selector"] for r in records} == {"judge", "generated_tests", "s_star", "codemonkey", "split_tester"}
    assert all(not r["error"] for r in records)
    assert any(r["tests"] > 0 for r in records if r["selector"] == "split_tester")
    _cli("report", "--run", tmp_path / "run", "--selection", tmp_path / "sel", "--out", tmp_path / "report")
    page = (tmp_path / "report" / "report.md").read_text()
    assert "perturbed (machinery baseline)" in page and "split_tester" in page
    assert (tmp_path / "report" / "pass_at_n.png").stat().st_size > 1000


def _write_release_folder(root: Path) -> Path:
    """A problem the way the Rule2DRC release lays it out, written by hand."""
    folder = root / "problems" / "r2d_0001"
    (folder / "gold").mkdir(parents=True)
    (folder / "spec.yaml").write_text(
        "id: r2d_0001\ntitle: met2 min width\nnl_description: met2 (69/20) width must be at least 0.14 um.\n"
        "layers:\n  met2: [69, 20]\nrules:\n- text: met2 width must be at least 0.14 um.\n  category: m2.1\n"
        "categories: [m2.1]\ndeck: gold/r2d_0001.drc\ndata_dir: data/gds\n")
    (folder / "gold" / "r2d_0001.drc").write_text(
        'source($input)\nreport("m2.1", $output)\nm2 = input(69, 20)\n'
        'm2.width(0.14.um, euclidian).output("m2.1", "m2.1 : min. m2 width : 0.14um")\n')
    rows = []
    for name, width in (("wide", 200), ("exact", 140), ("thin", 100), ("thinner", 60)):
        verdict = "fail" if width < 140 else "pass"
        write_gds(Case(name=name, shapes=[rect((69, 20), 0, 0, width, 2000)]), folder / "data/gds" / verdict / f"{name}.gds")
        rows.append(f"{name}.gds,{int(width < 140)}")
    (folder / "data/gds/labels.csv").write_text("filename,m2.1\n" + "\n".join(rows) + "\n")
    return folder


def test_rule2drc_folder_imports_and_evaluates(tmp_path):
    folder = _write_release_folder(tmp_path / "release")
    _cli("import", tmp_path / "release", "--out", tmp_path / "imported", "--verify")
    manifest = json.loads((tmp_path / "imported" / "manifest.json").read_text())
    assert manifest["problems"][0]["gold_verified"] and "threshold_up" in manifest["problems"][0]["caught"]
    _cli("pool", tmp_path / "imported", "--baseline", "gold", "--n", 1, "--out", tmp_path / "pool")
    _cli("run", tmp_path / "imported", "--candidates", tmp_path / "pool", "--out", tmp_path / "run")
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [r["outcome"] for r in results["results"]] == ["success"]
    # a wrong label: the gold no longer verifies (recorded, not fatal, since the data is not ours)
    labels = folder / "data/gds/labels.csv"
    labels.write_text(labels.read_text().replace("exact.gds,0", "exact.gds,1"))
    _cli("import", tmp_path / "release", "--out", tmp_path / "imported2", "--verify")
    assert not json.loads((tmp_path / "imported2" / "manifest.json").read_text())["problems"][0]["gold_verified"]


def test_hostile_scripts_are_contained(suite, tmp_path):
    _, problems = load_suite(suite)
    problem = problems[0]
    labels = problem.folder / "data" / "gds" / "labels.csv"
    scripts = {
        "reads_labels": f'source($input)\nreport("x", $output)\nFile.read("{labels}")\n',
        "writes_outside": f'source($input)\nreport("x", $output)\nFile.write("{suite}/planted", "x")\n',
        "loops": 'source($input)\nreport("x", $output)\nloop { }\n',
        "exits": 'exit 0\n',
        "syntax": 'source($input)\nreport("x", $output\n',
    }
    paths = {}
    for name, text in scripts.items():
        paths[name] = tmp_path / f"{name}.drc"
        paths[name].write_text(text)
    loops = {"loops": paths.pop("loops")}
    masked = (suite.resolve(),)
    results = evaluate_scripts([problem], {problem.spec.id: paths}, tmp_path / "work",
                               RunSettings(timeout_s=120, workers=2, masked=masked))[problem.spec.id]
    results |= evaluate_scripts([problem], {problem.spec.id: loops}, tmp_path / "loop",
                                RunSettings(timeout_s=8, masked=masked))[problem.spec.id]
    assert results["reads_labels"].outcome is Outcome.ERROR and "No such file" in results["reads_labels"].message
    assert results["writes_outside"].outcome is Outcome.ERROR and not (suite / "planted").exists()
    assert results["loops"].outcome is Outcome.TIMEOUT
    assert results["exits"].outcome is Outcome.ERROR
    assert results["syntax"].outcome is Outcome.ERROR and "SyntaxError" in results["syntax"].message
    assert load_problem(problem.folder).layouts == problem.layouts
