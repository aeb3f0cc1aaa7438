"""The one class per folder layout: the mutant store and a scoring run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from closer.paths import repo_paths


@dataclass(frozen=True)
class MutantStorePaths:
    """One mutant set of one design configuration::

        <root>/                       default: oracles/<design>/mutants/<config>/<set>/
          manifest.json               the kept mutants, the excluded candidates, provenance
          mutants/<id>/...            each kept mutant's buildable file set
          candidates/<id>/            every candidate tried: its files and the oracle's sim.log
          work/                       Yosys scripts and logs, the golden and baseline oracle runs
          runs/<testbench>-<sim>/     scoring runs (see ScoreRunPaths)
    """

    root: Path

    @classmethod
    def default(cls, design: str, config: str, set_name: str) -> "MutantStorePaths":
        return cls(repo_paths().oracles / design / "mutants" / config / set_name)

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    @property
    def mutants(self) -> Path:
        return self.root / "mutants"

    def mutant_dir(self, mutant_id: str) -> Path:
        return self.mutants / mutant_id

    @property
    def candidates(self) -> Path:
        return self.root / "candidates"

    def candidate_dir(self, mutant_id: str) -> Path:
        return self.candidates / mutant_id

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def runs(self) -> Path:
        return self.root / "runs"


@dataclass(frozen=True)
class ScoreRunPaths:
    """One testbench scored against one mutant set::

        <root>/
          run.json             what this run scores (manifest, testbench and simulator hashes)
          golden.json          the golden-gate result
          results/<id>.json    one MutantResult per finished mutant (written atomically: resume)
          sim/<id>/            the mutant's simulation: sim.log, results.xml
          sim/golden/
          score.json           the ScoreReport
    """

    root: Path

    @property
    def run_key(self) -> Path:
        return self.root / "run.json"

    @property
    def golden(self) -> Path:
        return self.root / "golden.json"

    @property
    def results(self) -> Path:
        return self.root / "results"

    def result(self, mutant_id: str) -> Path:
        return self.results / f"{mutant_id}.json"

    def sim_dir(self, name: str) -> Path:
        return self.root / "sim" / name

    @property
    def score(self) -> Path:
        return self.root / "score.json"
