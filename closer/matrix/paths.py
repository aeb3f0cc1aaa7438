"""The matrix's output folder; no other code builds these paths by hand::

    <out>/
      suites/<design>/     the generated tasks of each design (closer task generate)
      runs/                the trials, in `closer task run`'s layout (<task>/<agent>/trial-<n>/)
      runs-ab/             the composed B trials, started from an A trial's final RTL
      budgets/<key>.toml   the remaining aggregate budget each composed trial ran under
      logs/<key>.log       each trial's `closer task run` output
      checkpoint-cache/    A evaluations of C's snapshots (closer.matrix.checkpoint)
      store.jsonl          one line per finished trial (append-only; the resume point)
      report/              the RQ tables (closer matrix report)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


def slug(key: str) -> str:
    """A file name for a trial key."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", key)


@dataclass(frozen=True)
class MatrixPaths:
    root: Path

    @property
    def suites(self) -> Path:
        return self.root / "suites"

    def suite(self, design: str) -> Path:
        return self.suites / slug(design)

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    @property
    def runs_ab(self) -> Path:
        return self.root / "runs-ab"

    def budget(self, key: str) -> Path:
        return self.root / "budgets" / f"{slug(key)}.toml"

    def log(self, key: str) -> Path:
        return self.root / "logs" / f"{slug(key)}.log"

    @property
    def checkpoint_cache(self) -> Path:
        return self.root / "checkpoint-cache"

    @property
    def store(self) -> Path:
        return self.root / "store.jsonl"

    @property
    def report(self) -> Path:
        return self.root / "report"
