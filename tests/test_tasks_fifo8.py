"""fifo8's tasks (designs/fifo8, the worked example of docs/adding-a-design.md): its calibrated
targets are in every task, its instructions speak of a FIFO, B starts from its weak variant, and
nothing hidden reaches a workspace."""

from __future__ import annotations

import json
import tomllib

import pytest

from closer.tasks.models import TaskKind, load_design_tasks
from closer.tasks.paths import SuitePaths
from tests.projection_support import low_suite


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> SuitePaths:
    return low_suite(tmp_path_factory, "fifo8")


def test_calibrated_targets_are_measured_values(repo) -> None:
    tasks = load_design_tasks(repo.designs / "fifo8" / "tasks.toml")
    for kind in TaskKind:
        targets = tasks.targets[kind]
        assert targets and all(t.target > 1.0 and t.weight > 0 for t in targets), kind


@pytest.mark.slow
def test_three_tasks_carry_the_calibrated_targets(suite: SuitePaths, repo) -> None:
    tasks = load_design_tasks(repo.designs / "fifo8" / "tasks.toml")
    manifest = json.loads(suite.manifest.read_text())
    assert sorted(t["task_id"] for t in manifest["tasks"]) == ["fifo8-A-low", "fifo8-B-low", "fifo8-C-low"]
    for kind in TaskKind:
        hidden = tomllib.loads(suite.hidden(f"fifo8-{kind.value}-low").targets.read_text())
        expected = {t.metric: t.target for t in tasks.targets[kind]}
        assert {t["metric"]: t["target"] for t in hidden["targets"]} == expected


@pytest.mark.slow
def test_instruction_is_written_from_fifo8s_own_words(suite: SuitePaths) -> None:
    text = suite.task("fifo8-A-low").instruction.read_text()
    assert "words popped" in text and "consumer stalls" in text
    assert "operands" not in text and "requests" not in text  # gcd's wording


@pytest.mark.slow
def test_b_starts_from_the_weak_variant_and_hides_the_rest(suite: SuitePaths, repo) -> None:
    weak = (repo.designs / "fifo8" / "weak" / "rtl" / "fifo8.v").read_text()
    golden = (repo.designs / "fifo8" / "rtl" / "fifo8.v").read_text()
    assert (suite.task("fifo8-B-low").workspace / "rtl" / "fifo8.v").read_text() == weak
    for kind in ("A", "C"):
        start = (suite.task(f"fifo8-{kind}-low").workspace / "rtl" / "fifo8.v").read_text()
        assert start not in (weak, golden) and "mem[" not in start
    for kind in TaskKind:
        task = suite.task(f"fifo8-{kind.value}-low")
        every_file = "\n".join(p.read_text(errors="replace") for p in task.root.rglob("*") if p.is_file())
        assert "DEPTH_LOG2 = 4" not in every_file and '"deep"' not in every_file  # the hidden config
