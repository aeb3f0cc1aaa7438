"""The whole `closer design check` on the smallest design: a fresh scaffold (`closer design new`),
as docs/adding-a-design.md promises: every stage passes, the oracle agent scores 1.0 on A, B and C
through the real flow, and `closer task generate` then takes the design without --unchecked."""

from __future__ import annotations

from pathlib import Path

import pytest

from closer.designs.checkrecord import CheckRecord
from closer.designs.model import SEARCH_PATH_ENV
from closer.designs.runcheck import check_design
from closer.designs.scaffold import new_design
from closer.tasks.generate import generate_suite


@pytest.mark.slow
def test_scaffold_passes_the_full_check_then_generates(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(SEARCH_PATH_ENV, str(tmp_path / "designs"))
    monkeypatch.setenv("CLOSER_CACHE_DIR", str(tmp_path / "cache"))
    new_design("tiny", tmp_path / "designs")
    lines: list[str] = []
    record, path = check_design("tiny", progress=lines.append)
    assert record.passed and record.complete, "\n".join(lines)
    assert [s.stage for s in record.stages] == ["lint", "oracle", "mutants", "tasks", "agent-A", "agent-B",
                                                "agent-C", "weak"]
    assert record.stages[2].figures["kill_ratio"] >= 0.8
    assert CheckRecord.model_validate_json(path.read_text()) == record
    manifest = generate_suite("tiny", tmp_path / "suite", budgets=["low"], require_check=True)
    assert manifest.design_checks == {"tiny": str(path)} and len(manifest.tasks) == 3
