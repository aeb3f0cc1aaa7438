"""`closer drc select`: run Best-of-N selectors on a scored candidate pool and record, per problem,
the chosen candidate, whether it succeeds on the private layouts, and the pool's Oracle@N."""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel

from closer.drc.evaluate import Outcome
from closer.drc.pools import harness_texts
from closer.drc.problem import Problem
from closer.drc.protocol import CommandTool
from closer.drc.runner import RunSettings
from closer.drc.runs import RunResults, read_candidates
from closer.drc.selectors import SELECTORS, Bench, SelectorSettings, seed_for
from closer.drc.suite import write_new
from closer.errors import CloserError, InputError


class SelectionRecord(BaseModel):
    problem: str
    selector: str
    n: int
    chosen: str
    chosen_outcome: Outcome
    oracle_success: bool  # some candidate of the pool succeeds
    tests: int
    testgen_calls: int
    judge_calls: int
    wall_s: float
    error: str = ""


class SelectionRun(BaseModel):
    schema_version: int = 1
    candidates: str
    baseline: str
    testgen: str
    judge: str
    n: int
    records: list[SelectionRecord]

    def accuracy(self, selector: str) -> float:
        chosen = [r for r in self.records if r.selector == selector]
        return sum(r.chosen_outcome is Outcome.SUCCESS for r in chosen) / max(1, len(chosen))


def select_all(problems: list[Problem], pool: Path, results: RunResults, selectors: list[str], testgen: str,
               judge: str, out: Path, run_settings: RunSettings, settings: SelectorSettings, seed: int = 0) -> SelectionRun:
    candidates = read_candidates(pool, problems)
    truth = {(r.problem, r.candidate): r.outcome for r in results.results}
    records = []
    for problem in problems:
        named = candidates.get(problem.spec.id)
        if not named:
            continue
        missing = [name for name in named if (problem.spec.id, name) not in truth]
        if missing:
            raise InputError(f"--results: no result for {problem.spec.id}/{missing[0]}; run `closer drc run` on this pool")
        texts = {name: path.read_text(errors="replace") for name, path in named.items()}
        oracle = any(truth[(problem.spec.id, name)] is Outcome.SUCCESS for name in named)
        trusted, cache = frozenset(harness_texts(problem)), {}
        for selector in selectors:
            folder = out / problem.spec.id / selector
            bench = Bench(problem=problem.spec.public(), candidates=texts,
                          testgen=CommandTool(testgen, folder / "testgen"), judge=CommandTool(judge, folder / "judge"),
                          workdir=folder / "tests", run_settings=run_settings, seed=seed_for(problem.spec.id, seed),
                          trusted=trusted, cache=cache)
            started, error = time.monotonic(), ""
            try:
                chosen = SELECTORS[selector](bench, settings)
            except CloserError as exc:  # a failing command: the selector falls back to the first
                chosen, error = next(iter(texts)), str(exc).splitlines()[0]
            records.append(SelectionRecord(
                problem=problem.spec.id, selector=selector, n=len(named), chosen=chosen,
                chosen_outcome=truth[(problem.spec.id, chosen)], oracle_success=oracle, tests=len(bench.tests),
                testgen_calls=bench.testgen.calls, judge_calls=bench.judge.calls,
                wall_s=round(time.monotonic() - started, 2), error=error))
    run = SelectionRun(candidates=str(pool), baseline=results.baseline, testgen=testgen, judge=judge,
                       n=max((r.n for r in records), default=0), records=records)
    write_new(out / "selection.json", run.model_dump_json(indent=2) + "\n")
    return run
