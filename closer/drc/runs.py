"""`closer drc run`: score a folder of candidate scripts (`<problem id>/<name>.drc`, N per problem)
on a suite's private layouts; identical scripts of a problem run once. Writes `results.json`."""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path

from pydantic import BaseModel, Field

from closer.drc.evaluate import Outcome, ScriptResult, evaluate_scripts
from closer.drc.passk import all_fail_at_k, pass_at_k
from closer.drc.pools import harness_texts
from closer.drc.problem import Problem
from closer.drc.runner import RunSettings
from closer.drc.suite import write_new
from closer.errors import InputError

MAX_SCRIPT_BYTES = 256 * 1024
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\.drc$")


class ProblemSummary(BaseModel):
    problem: str
    n: int
    success: int
    error: int
    wrong: int
    timeout: int
    pass_at: dict[int, float] = Field(description="k -> unbiased pass@k")
    error_at: dict[int, float] = Field(description="k -> chance all k candidates error")


class RunResults(BaseModel):
    schema_version: int = 1
    suite: str
    candidates: str
    baseline: str = Field("", description="the pool's machinery baseline, when the folder has a pool.json")
    timeout_s: float
    wall_s: float
    results: list[ScriptResult]
    problems: list[ProblemSummary]

    def rate(self, outcome: Outcome) -> float:
        return sum(r.outcome is outcome for r in self.results) / max(1, len(self.results))


def read_candidates(folder: Path, problems: list[Problem]) -> dict[str, dict[str, Path]]:
    """Candidate scripts per problem id; each must be a regular .drc file within the size limit."""
    out: dict[str, dict[str, Path]] = {}
    for problem in problems:
        sub = folder / problem.spec.id
        if not sub.is_dir():
            continue
        for path in sorted(sub.iterdir()):
            if path.suffix != ".drc":
                continue
            if not NAME.match(path.name) or path.is_symlink() or not path.is_file():
                raise InputError(f"{path}: a candidate must be a regular file named like cand_00.drc")
            if path.stat().st_size > MAX_SCRIPT_BYTES:
                raise InputError(f"{path}: larger than {MAX_SCRIPT_BYTES} bytes")
            out.setdefault(problem.spec.id, {})[path.stem] = path
    if not out:
        raise InputError(f"{folder}: no <problem id>/*.drc for any problem of the suite")
    return out


def run_candidates(suite_name: str, problems: list[Problem], folder: Path, out: Path, settings: RunSettings,
                   baseline: str = "") -> RunResults:
    candidates = read_candidates(folder, problems)
    started = time.monotonic()
    results = evaluate_unique(problems, candidates, out / "work", settings)
    chosen = [problem for problem in problems if problem.spec.id in candidates]
    flat = [results[p.spec.id][name] for p in chosen for name in candidates[p.spec.id]]
    run = RunResults(suite=suite_name, candidates=str(folder), baseline=baseline, timeout_s=settings.timeout_s,
                     wall_s=round(time.monotonic() - started, 1), results=flat,
                     problems=[summarize(p.spec.id, list(results[p.spec.id].values())) for p in chosen])
    write_new(out / "results.json", run.model_dump_json(indent=2) + "\n")
    return run


def evaluate_unique(problems: list[Problem], candidates: dict[str, dict[str, Path]], workdir: Path,
                    settings: RunSettings) -> dict[str, dict[str, ScriptResult]]:
    """Evaluate each distinct script text of a problem once; results under every candidate name.
    Scripts the harness made itself (`harness_texts`) share KLayout processes; others get their own."""
    unique: dict[str, dict[str, Path]] = {}
    own: dict[str, dict[str, Path]] = {}
    alias: dict[tuple[str, str], str] = {}
    by_id = {p.spec.id: p for p in problems}
    for pid, named in candidates.items():
        known = harness_texts(by_id[pid])
        for name, path in named.items():
            text = path.read_bytes()
            digest = hashlib.sha256(text).hexdigest()[:16]
            target = unique if text.decode(errors="replace") in known else own
            target.setdefault(pid, {}).setdefault(digest, path)
            alias[(pid, name)] = digest
    scored = evaluate_scripts(problems, unique, workdir / "harness", settings, shared_process=True)
    for pid, part in evaluate_scripts(problems, own, workdir / "own", settings).items():
        scored.setdefault(pid, {}).update(part)
    return {pid: {name: scored[pid][alias[(pid, name)]].model_copy(update={"candidate": name})
                  for name in named} for pid, named in candidates.items()}


def summarize(problem: str, results: list[ScriptResult]) -> ProblemSummary:
    n = len(results)
    count = {outcome: sum(r.outcome is outcome for r in results) for outcome in Outcome}
    errors = count[Outcome.ERROR] + count[Outcome.TIMEOUT]
    return ProblemSummary(problem=problem, n=n, success=count[Outcome.SUCCESS], error=count[Outcome.ERROR],
                          wrong=count[Outcome.WRONG], timeout=count[Outcome.TIMEOUT],
                          pass_at={k: pass_at_k(n, count[Outcome.SUCCESS], k) for k in range(1, n + 1)},
                          error_at={k: all_fail_at_k(n, errors, k) for k in range(1, n + 1)})
