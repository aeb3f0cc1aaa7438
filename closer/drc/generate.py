"""`closer drc generate`: SKY130 problems in the Rule2DRC folder layout, every label verified.

Each rule of the table gives one problem per phrasing. Its layouts are built by construction
(`closer.drc.cases`), each phrasing's set turned and moved differently; then the gold script runs
on every layout with the real KLayout (a mismatch stops the generation), and so does each
perturbation of the gold, to record which ones the test set catches (a problem whose set catches
none is refused: its tests would not be two-way).
"""

from __future__ import annotations

import hashlib
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from closer.drc import scripts
from closer.drc.cases import build_cases
from closer.drc.evaluate import Outcome, caught_uncaught, evaluate_scripts, gold_and_perturbations
from closer.drc.phrasing import phrasings
from closer.drc.problem import ProblemSpec, RuleText, load_problem, write_labels, write_spec
from closer.drc.rules import Rule, RuleKind, rule_table
from closer.drc.runner import RunSettings
from closer.drc.shapes import write_gds
from closer.drc.suite import GENERATOR_VERSION, ProblemEntry, SuiteManifest, checksums, klayout_version, write_new
from closer.errors import InputError, ToolError

SUITE_NAME = "closer-sky130-rule2drc"


@dataclass(frozen=True)
class GenerateOptions:
    out: Path
    limit: int | None = None  # at most this many problems (spread over the kinds)
    kinds: tuple[RuleKind, ...] = tuple(RuleKind)
    workers: int = 1


def problem_id(rule: Rule, variant: int) -> str:
    inner = f"_{rule.inner.name}" if rule.inner else ""
    return f"{rule.kind}_{rule.layer.name}{inner}_v{variant}"


def planned(options: GenerateOptions) -> list[tuple[Rule, int]]:
    """(rule, phrasing) pairs, interleaved by kind so a limit keeps every kind."""
    per_kind = [[(rule, v) for rule in rule_table() if rule.kind is kind for v in range(len(phrasings(rule)))]
                for kind in options.kinds]
    order = [item for round_ in _zip_longest(per_kind) for item in round_]
    return order[:options.limit] if options.limit else order


def _zip_longest(lists: list[list]) -> list[list]:
    width = max((len(items) for items in lists), default=0)
    return [[items[i] for items in lists if i < len(items)] for i in range(width)]


def write_problem(root: Path, rule: Rule, variant: int) -> Path:
    pid = problem_id(rule, variant)
    folder = root / "problems" / pid
    category = scripts.category(rule)
    text = phrasings(rule)[variant]
    layers = {rule.layer.name: rule.layer.pair}
    if rule.inner:
        layers[rule.inner.name] = rule.inner.pair
    spec = ProblemSpec(id=pid, title=scripts.describe(rule), nl_description=text, layers=layers,
                       rules=[RuleText(text=text, category=category)], categories=[category],
                       deck=f"gold/{pid}.drc", data_dir="data/gds")
    (folder / "gold").mkdir(parents=True)
    write_spec(folder / "spec.yaml", spec)
    (folder / "gold" / f"{pid}.drc").write_text(scripts.script(rule, title=spec.title))
    seed = int(hashlib.sha256(pid.encode()).hexdigest()[:8], 16)
    rows = []
    for case in build_cases(rule):
        name = f"{case.name}.gds"
        write_gds(case, folder / "data" / "gds" / ("fail" if case.violates else "pass") / name,
                  rotation=variant, offset=(seed % 997 * 5, seed // 997 % 991 * 5))
        rows.append((name, {category: int(bool(case.violates))}))
    write_labels(folder / "data" / "gds" / "labels.csv", [category], rows)
    return folder


def generate(options: GenerateOptions) -> SuiteManifest:
    out = options.out
    if out.exists() and any(out.iterdir()):
        raise InputError(f"{out}: not empty; generate into a new folder")
    plan = planned(options)
    folders = {problem_id(rule, v): write_problem(out, rule, v) for rule, v in plan}
    started = time.monotonic()
    manifest = SuiteManifest(suite=f"{SUITE_NAME}/{GENERATOR_VERSION}", source="generated", root=".",
                             klayout=klayout_version(out / "work" / "klayout-version.log"),
                             problems=verify(out, plan, folders, options.workers))
    manifest.verify_wall_s = round(time.monotonic() - started, 1)
    shutil.rmtree(out / "work")
    write_new(out / "manifest.json", manifest.model_dump_json(indent=2) + "\n")
    return manifest


def verify(out: Path, plan: list[tuple[Rule, int]], folders: dict[str, Path], workers: int) -> list[ProblemEntry]:
    """Gold and every perturbation on every layout, in the tool sandbox, many jobs per process."""
    problems = {pid: load_problem(folder, out) for pid, folder in folders.items()}
    candidates = gold_and_perturbations(list(problems.values()), out / "work" / "scripts")
    results = evaluate_scripts(list(problems.values()), candidates, out / "work" / "runs",
                               RunSettings(timeout_s=120, workers=workers), shared_process=True)
    entries = []
    for rule, variant in plan:
        pid = problem_id(rule, variant)
        by_name = results[pid]
        if by_name["gold"].outcome is not Outcome.SUCCESS:
            raise ToolError(f"{pid}: the gold script does not match its labels "
                            f"({by_name['gold'].mismatched} layouts, {by_name['gold'].message})")
        caught, uncaught = caught_uncaught(by_name)
        if not caught:
            raise ToolError(f"{pid}: no perturbation of the gold fails any layout: the tests are not two-way")
        layouts = problems[pid].layouts
        entries.append(ProblemEntry(
            id=pid, folder=str(folders[pid].relative_to(out)), kind=str(rule.kind), deck_rule=rule.deck_rule,
            layouts_pass=sum(not lay.violates for lay in layouts), layouts_fail=sum(lay.violates for lay in layouts),
            gold_verified=True, caught=caught, uncaught=uncaught, sha256=checksums(folders[pid])))
    return entries
