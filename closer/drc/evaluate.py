"""Scoring DRC scripts on a problem's private labeled layouts.

A layout matches when, for every label column, "the category has an item" equals the label, and
"any item at all" equals "any label" (the Rule2DRC result: 1 when any category has any item). A
script's outcome on a problem: timeout when a run passed its limit, error when KLayout failed or
wrote no report on some layout, wrong when it ran everywhere but missed a label, else success.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, Field

from closer.drc.mutate import perturbations
from closer.drc.problem import LabeledLayout, Problem
from closer.drc.runner import Job, JobResult, JobStatus, RunSettings, run_groups


SHARED_GROUP_JOBS = 800


class Outcome(StrEnum):
    SUCCESS = "success"
    WRONG = "wrong"
    ERROR = "error"
    TIMEOUT = "timeout"


class CategoryCounts(BaseModel):
    true_positive: int = 0
    false_positive: int = 0
    false_negative: int = 0
    true_negative: int = 0


class ScriptResult(BaseModel):
    problem: str
    candidate: str
    outcome: Outcome
    layouts: int
    mismatched: int
    per_category: dict[str, CategoryCounts] = Field(default_factory=dict)
    message: str = ""


def layout_matches(layout: LabeledLayout, result: JobResult) -> bool:
    if result.status is not JobStatus.OK:
        return False
    per_column = all((result.counts.get(c, 0) > 0) == bool(v) for c, v in layout.labels.items())
    return per_column and result.flagged == layout.violates


def score(problem: Problem, candidate: str, results: list[JobResult]) -> ScriptResult:
    per_category = {c: CategoryCounts() for c in problem.spec.categories}
    mismatched, message = 0, ""
    for layout, result in zip(problem.layouts, results):
        mismatched += not layout_matches(layout, result)
        message = message or result.message
        if result.status is not JobStatus.OK:
            continue
        for name, label in layout.labels.items():
            counts = per_category.setdefault(name, CategoryCounts())
            flagged = result.counts.get(name, 0) > 0
            field = {(True, 1): "true_positive", (True, 0): "false_positive",
                     (False, 1): "false_negative", (False, 0): "true_negative"}[(flagged, label)]
            setattr(counts, field, getattr(counts, field) + 1)
    statuses = {r.status for r in results}
    outcome = (Outcome.TIMEOUT if JobStatus.TIMEOUT in statuses else Outcome.ERROR if JobStatus.ERROR in statuses
               else Outcome.WRONG if mismatched else Outcome.SUCCESS)
    return ScriptResult(problem=problem.spec.id, candidate=candidate, outcome=outcome, layouts=len(results),
                        mismatched=mismatched, per_category=per_category, message=message)


def evaluate_scripts(problems: list[Problem], candidates: dict[str, dict[str, Path]], workdir: Path,
                     settings: RunSettings, shared_process: bool = False) -> dict[str, dict[str, ScriptResult]]:
    """Run `candidates[problem_id][name]` on each problem's layouts.

    One KLayout process per candidate script unless `shared_process` (only for scripts the harness
    wrote itself: gold and its perturbations)."""
    groups: list[list[Job]] = []
    for problem in problems:
        for name, script in candidates.get(problem.spec.id, {}).items():
            groups.append([Job(f"{problem.spec.id}\0{name}\0{i}", script, layout.file)
                           for i, layout in enumerate(problem.layouts)])
    counts = None
    if shared_process:
        jobs = [job for group in groups for job in group]
        groups = [jobs[i:i + SHARED_GROUP_JOBS] for i in range(0, len(jobs), SHARED_GROUP_JOBS)]
        counts = [len({job.script for job in group}) for group in groups]
    results = run_groups(groups, workdir, settings, counts)
    out: dict[str, dict[str, ScriptResult]] = {}
    for problem in problems:
        for name in candidates.get(problem.spec.id, {}):
            runs = [results[f"{problem.spec.id}\0{name}\0{i}"] for i in range(len(problem.layouts))]
            out.setdefault(problem.spec.id, {})[name] = score(problem, name, runs)
    return out


def gold_and_perturbations(problems: list[Problem], scripts_dir: Path) -> dict[str, dict[str, Path]]:
    """Candidates for verifying a problem set: each gold script and its perturbations (written to
    `scripts_dir` as `<id>.<perturbation>.drc`), by problem id and name (`gold` or the perturbation)."""
    scripts_dir.mkdir(parents=True, exist_ok=True)
    candidates: dict[str, dict[str, Path]] = {}
    for problem in problems:
        candidates[problem.spec.id] = {"gold": problem.gold}
        for name, text in perturbations(problem.gold.read_text()).items():
            path = scripts_dir / f"{problem.spec.id}.{name}.drc"
            path.write_text(text)
            candidates[problem.spec.id][str(name)] = path
    return candidates


def caught_uncaught(by_name: dict[str, ScriptResult]) -> tuple[list[str], list[str]]:
    """The perturbations some layout catches (not a success) and those none does."""
    others = {n: r for n, r in by_name.items() if n != "gold"}
    return (sorted(n for n, r in others.items() if r.outcome is not Outcome.SUCCESS),
            sorted(n for n, r in others.items() if r.outcome is Outcome.SUCCESS))
