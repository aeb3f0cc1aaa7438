"""`closer drc import PATH`: read Rule2DRC-format folders in place and write a suite manifest, so
the public release (or any folder in its format) runs unchanged. With `verify`, the gold script
runs on every layout and the perturbations record how two-way each test set is; a gold mismatch is
recorded (`gold_verified: false`), not fatal: the data is not ours to fix."""

from __future__ import annotations

import time
from pathlib import Path

from closer.drc.evaluate import Outcome, caught_uncaught, evaluate_scripts, gold_and_perturbations
from closer.drc.problem import Problem, find_problems, load_problem
from closer.drc.runner import RunSettings
from closer.drc.suite import ProblemEntry, SuiteManifest, checksums, klayout_version, write_new
from closer.errors import InputError


def import_folders(source: Path, out: Path, verify: bool, settings: RunSettings) -> SuiteManifest:
    root = source.resolve()
    folders = find_problems(root)
    problem_root = root if (root / "problems").is_dir() else root.parent.parent
    problems = [load_problem(folder, problem_root) for folder in folders]
    _check_unique(problems)
    for problem in problems:
        if not problem.gold.is_file():
            raise InputError(f"{problem.folder}: no gold script gold/{problem.spec.id}.drc")
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    verdicts = _verify(problems, out, settings) if verify else {}
    entries = []
    for problem in problems:
        caught, uncaught, verified = verdicts.get(problem.spec.id, ([], [], False))
        entries.append(ProblemEntry(
            id=problem.spec.id, folder=str(problem.folder.relative_to(problem_root)),
            layouts_pass=sum(not lay.violates for lay in problem.layouts),
            layouts_fail=sum(lay.violates for lay in problem.layouts),
            gold_verified=verified, caught=caught, uncaught=uncaught, sha256=checksums(problem.folder)))
    manifest = SuiteManifest(suite=f"imported:{root.name}", source="imported", root=str(problem_root),
                             klayout=klayout_version(out / "klayout-version.log"), problems=entries,
                             verify_wall_s=round(time.monotonic() - started, 1))
    write_new(out / "manifest.json", manifest.model_dump_json(indent=2) + "\n")
    return manifest


def _check_unique(problems: list[Problem]) -> None:
    seen: set[str] = set()
    for problem in problems:
        if problem.spec.id in seen:
            raise InputError(f"{problem.folder / 'spec.yaml'}: id: {problem.spec.id!r} used twice")
        seen.add(problem.spec.id)


def _verify(problems: list[Problem], out: Path, settings: RunSettings) -> dict[str, tuple[list[str], list[str], bool]]:
    candidates = gold_and_perturbations(problems, out / "verify" / "scripts")
    # the gold comes from a downloaded release: one process per script, like any candidate
    results = evaluate_scripts(problems, candidates, out / "verify" / "runs", settings)
    return {pid: (*caught_uncaught(by_name), by_name["gold"].outcome is Outcome.SUCCESS)
            for pid, by_name in results.items()}
