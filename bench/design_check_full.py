"""The path of docs/adding-a-design.md on the smallest design, a fresh scaffold: `design new`,
`design calibrate` (targets measured, 5 % margin), then the whole `design check`: every stage
passes, the oracle agent scores 1.0 on A, B and C through the real flow, and `task generate`
takes the design without --unchecked.

    .venv/bin/python bench/design_check_full.py      (pytest on this file; tens of minutes)

Kept out of `make test` for the CI's time budget: it runs the physical flow for calibration, the
oracle agent on B and C and the weak variant."""

from __future__ import annotations

from pathlib import Path

import pytest

from closer.designs.checkrecord import CheckRecord
from closer.designs.model import SEARCH_PATH_ENV
from closer.designs.runcheck import calibrate_design, check_design
from closer.designs.scaffold import new_design
from closer.tasks.generate import generate_suite


@pytest.mark.slow
def test_scaffold_passes_the_full_check_then_generates(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(SEARCH_PATH_ENV, str(tmp_path / "designs"))
    monkeypatch.setenv("CLOSER_CACHE_DIR", str(tmp_path / "cache"))
    folder = new_design("tiny", tmp_path / "designs")
    targets, measured = calibrate_design("tiny", 0.05, jobs=2)
    assert targets == folder / "task-targets.toml" and {m.kind.value for m in measured} == {"A", "B"}
    assert all(m.weak is not None and m.golden > 0 for m in measured)
    lines: list[str] = []
    record, path = check_design("tiny", progress=lines.append, jobs=2)
    assert record.passed and record.complete, "\n".join(lines)
    assert [s.stage for s in record.stages] == ["lint", "oracle", "mutants", "tasks", "agent-A", "agent-B",
                                                "agent-C", "weak"]
    assert record.stages[2].figures["kill_ratio"] >= 0.8
    assert CheckRecord.model_validate_json(path.read_text()) == record
    manifest = generate_suite("tiny", tmp_path / "suite", budgets=["low"], require_check=True)
    assert manifest.design_checks == {"tiny": str(path)} and len(manifest.tasks) == 3


if __name__ == "__main__":
    import sys

    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
