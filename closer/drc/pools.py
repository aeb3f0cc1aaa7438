"""Candidate pools, machinery baselines (not models): gold, null, and N samples drawn from the
gold script and its perturbations (`closer.drc.mutate`).

A pool folder holds `<problem id>/<candidate>.drc` and `pool.json` (where each came from).
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from pydantic import BaseModel

from closer.drc.mutate import perturbations
from closer.drc.problem import Problem
from closer.drc.suite import write_new

GOLD_WEIGHT = 0.25  # the share of gold among sampled candidates


class PoolEntry(BaseModel):
    problem: str
    candidate: str
    source: str  # gold | null | a perturbation name


class PoolManifest(BaseModel):
    baseline: str  # gold | null | perturbed
    n: int
    seed: int
    machinery_baseline: bool = True
    entries: list[PoolEntry]


def null_script(problem: Problem) -> str:
    """Runs, writes an empty report: scores 0 wherever a layout violates."""
    return f'source($input)\nreport("{problem.spec.id}: null baseline", $output)\n'


def harness_texts(problem: Problem) -> set[str]:
    """Every script text the harness itself makes for `problem` (gold, its perturbations, null):
    only these may share a KLayout process; anything else runs in its own."""
    gold = problem.gold.read_text()
    return {gold, null_script(problem), *perturbations(gold).values()}


def sample_sources(problem: Problem, n: int, seed: int) -> list[tuple[str, str]]:
    """(source, script text) × n: gold with probability GOLD_WEIGHT, else a uniform perturbation."""
    gold = problem.gold.read_text()
    variants = sorted(perturbations(gold).items())
    rng = random.Random(int(hashlib.sha256(f"{seed}:{problem.spec.id}".encode()).hexdigest()[:12], 16))
    out = []
    for _ in range(n):
        if not variants or rng.random() < GOLD_WEIGHT:
            out.append(("gold", gold))
        else:
            name, text = rng.choice(variants)
            out.append((str(name), text))
    return out


def write_pool(problems: list[Problem], baseline: str, n: int, seed: int, out: Path) -> PoolManifest:
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for problem in problems:
        if baseline == "gold":
            drawn = [("gold", problem.gold.read_text())] * n
        elif baseline == "null":
            drawn = [("null", null_script(problem))] * n
        else:
            drawn = sample_sources(problem, n, seed)
        folder = out / problem.spec.id
        folder.mkdir(parents=True, exist_ok=True)
        for index, (source, text) in enumerate(drawn):
            name = f"cand_{index:02d}"
            write_new(folder / f"{name}.drc", text)
            entries.append(PoolEntry(problem=problem.spec.id, candidate=name, source=source))
    manifest = PoolManifest(baseline=baseline, n=n, seed=seed, entries=entries)
    write_new(out / "pool.json", manifest.model_dump_json(indent=2) + "\n")
    return manifest
