"""Best-of-N selectors: pick one of N candidate scripts using execution feedback.

judge            the judge command chooses from the scripts alone
generated_tests  the candidate that matches the most expected labels of the generated tests
s_star           S*: clusters by outputs on generated tests, then a pairwise tournament of their
                 representatives, each match on new tests generated to tell the pair apart and
                 decided by the judge on the tests where they differ
codemonkey       CodeMonkeys: rank by generated-test score, the judge picks among the top 3
split_tester     SplitTester: cluster by outputs, target the cluster with the largest score × size,
                 generate tests from K random members, recluster; stop after P failed splits or
                 when the extra-test budget is spent; the judge picks among the top 3 clusters'
                 representatives with the tests on which they differ

Candidates run on generated layouts in the tool sandbox, one KLayout process per distinct script
per round (`closer.drc.runner`); results are cached by script and layout.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from closer.drc.problem import PublicProblem
from closer.drc.protocol import (Candidate, CommandTool, JudgeRequest, JudgeResponse, Output, ShownTest,
                                 ProbeRequest, ProbeResponse)
from closer.drc.runner import Job, JobStatus, RunSettings, run_groups
from closer.drc.shapes import Case, write_gds


@dataclass(frozen=True)
class SelectorSettings:
    initial_tests: int = 8
    extra_tests: int = 8  # SplitTester's and S*'s budget beyond the initial tests
    members: int = 3  # K
    patience: int = 1  # P: failed splits before stopping
    finalists: int = 3


@dataclass
class Bench:
    """One problem's candidates, the commands, and every generated test run so far."""
    problem: PublicProblem
    candidates: dict[str, str]  # id -> script text
    testgen: CommandTool
    judge: CommandTool
    workdir: Path
    run_settings: RunSettings
    seed: int = 0
    trusted: frozenset[str] = frozenset()  # harness-made script texts: may share a KLayout process
    cache: dict[tuple[str, str], Output] = field(default_factory=dict)  # (script, layout) digests
    tests: list[Case] = field(default_factory=list)
    outputs: dict[str, dict[str, Output]] = field(default_factory=dict)  # candidate -> test -> output
    runs: int = 0

    def generate(self, mode: str, count: int, members: list[str] = ()) -> list[Case]:
        request = ProbeRequest(problem=self.problem, mode=mode, count=count, seed=self.seed + len(self.tests),
                              candidates=[Candidate(id=m, script=self.candidates[m]) for m in members])
        new = self.testgen.call(request, ProbeResponse).tests[:count]
        taken = {t.name for t in self.tests}
        renamed = [case.model_copy(update={"name": f"t{len(self.tests) + i:03d}_{case.name}"[:64]})
                   for i, case in enumerate(new)]
        renamed = [case for case in renamed if case.name not in taken]
        self.tests += renamed
        self._run(renamed)
        return renamed

    def _run(self, cases: list[Case]) -> None:
        texts = {_digest(text): text for text in self.candidates.values()}
        shapes = {case.name: _digest(case.model_dump_json(include={"shapes"})) for case in cases}
        pending = [(t, c) for t in texts for c in cases if (t, shapes[c.name]) not in self.cache]
        if pending:
            self._execute(pending, texts, shapes)
        for cid, text in self.candidates.items():
            for case in cases:
                self.outputs.setdefault(cid, {})[case.name] = self.cache[(_digest(text), shapes[case.name])]

    def _execute(self, pending: list[tuple[str, Case]], texts: dict[str, str], shapes: dict[str, str]) -> None:
        self.runs += 1
        folder = self.workdir / f"round_{self.runs:02d}"
        (folder / "scripts").mkdir(parents=True, exist_ok=True)
        groups: dict[str, list[Job]] = {}
        for digest, case in pending:
            script, layout = folder / "scripts" / f"{digest}.drc", folder / "layouts" / f"{shapes[case.name]}.gds"
            if not script.exists():
                script.write_text(texts[digest])
            if not layout.exists():
                write_gds(case, layout)
            group = "shared" if texts[digest] in self.trusted else digest
            groups.setdefault(group, []).append(Job(f"{digest}\0{shapes[case.name]}", script, layout))
        counts = [len({job.script for job in group}) for group in groups.values()]
        results = run_groups(list(groups.values()), folder / "runs", self.run_settings, counts)
        for key, result in results.items():
            digest, shape = key.split("\0")
            self.cache[(digest, shape)] = "error" if result.status is not JobStatus.OK else int(result.flagged)

    def score(self, cid: str) -> float:
        """Fraction of tests with an expected label whose label the candidate reproduces."""
        labeled = [t for t in self.tests if t.violates is not None]
        if not labeled:
            return 0.0
        return sum(self.outputs.get(cid, {}).get(t.name) == int(t.violates) for t in labeled) / len(labeled)

    def signature(self, cid: str) -> tuple:
        return tuple(self.outputs.get(cid, {}).get(t.name) for t in self.tests)

    def clusters(self) -> list[list[str]]:
        groups: dict[tuple, list[str]] = {}
        for cid in self.candidates:
            groups.setdefault(self.signature(cid), []).append(cid)
        return list(groups.values())

    def ask_judge(self, ids: list[str], differing_only: bool = True) -> str:
        if len(ids) == 1:
            return ids[0]
        shown = []
        for test in self.tests:
            outputs = {cid: self.outputs.get(cid, {}).get(test.name, "error") for cid in ids}
            if not differing_only or len(set(outputs.values())) > 1:
                shown.append(ShownTest(name=test.name, expected=test.violates, outputs=outputs))
        request = JudgeRequest(problem=self.problem, tests=shown,
                               candidates=[Candidate(id=cid, script=self.candidates[cid]) for cid in ids])
        choice = self.judge.call(request, JudgeResponse).choice
        return choice if choice in ids else ids[0]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cluster_rank(bench: Bench, cluster: list[str]) -> float:
    return bench.score(cluster[0]) * len(cluster)


def select_judge(bench: Bench, settings: SelectorSettings) -> str:
    return bench.ask_judge(list(bench.candidates))


def select_generated_tests(bench: Bench, settings: SelectorSettings) -> str:
    bench.generate("initial", settings.initial_tests)
    return max(bench.candidates, key=bench.score)  # first of the best on ties


def select_codemonkey(bench: Bench, settings: SelectorSettings) -> str:
    bench.generate("initial", settings.initial_tests)
    ranked = sorted(bench.clusters(), key=lambda c: (-bench.score(c[0]), -len(c)))
    return bench.ask_judge([cluster[0] for cluster in ranked[:settings.finalists]])


def select_s_star(bench: Bench, settings: SelectorSettings) -> str:
    bench.generate("initial", settings.initial_tests)
    ranked = sorted(bench.clusters(), key=lambda c: (-bench.score(c[0]), -len(c)))
    champion, budget = ranked[0][0], settings.extra_tests
    for cluster in ranked[1:]:
        challenger = cluster[0]
        if budget > 0 and bench.signature(champion) == bench.signature(challenger):
            continue
        if budget > 0:
            budget -= len(bench.generate("split", min(2, budget), [champion, challenger]))
        champion = bench.ask_judge([champion, challenger])
    return champion


def select_split_tester(bench: Bench, settings: SelectorSettings) -> str:
    rng = random.Random(bench.seed)
    bench.generate("initial", settings.initial_tests)
    failed, budget = 0, settings.extra_tests
    while failed < settings.patience and budget > 0:
        clusters = bench.clusters()
        target = max(clusters, key=lambda c: cluster_rank(bench, c))
        if len(target) < 2:
            break
        members = rng.sample(target, min(settings.members, len(target)))
        new = bench.generate("split", min(budget, 4), members)
        budget -= max(1, len(new))
        if not any(sorted(target) == sorted(c) for c in bench.clusters()):
            continue
        failed += 1
    top = sorted(bench.clusters(), key=lambda c: -cluster_rank(bench, c))[:settings.finalists]
    return bench.ask_judge([cluster[0] for cluster in top])


SELECTORS: dict[str, Callable[[Bench, SelectorSettings], str]] = {
    "judge": select_judge,
    "generated_tests": select_generated_tests,
    "s_star": select_s_star,
    "codemonkey": select_codemonkey,
    "split_tester": select_split_tester,
}


def seed_for(problem_id: str, seed: int) -> int:
    return int(hashlib.sha256(f"{seed}:{problem_id}".encode()).hexdigest()[:8], 16)
