"""The pristine evaluator on firdma A tasks (real Icarus/cocotb, Yosys, OpenSTA): the reference
solution scores 1.0, the untouched skeleton (the null agent's submission) 0 because the functional
gate fails, and a one-line fault of the golden RTL 0 on the same gate. The three A budgets are the
same task apart from the budget (tests/test_tasks_firdma.py), so one evaluation covers them."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from closer.firdma.oracle import load_faults
from closer.metrics import SIM_CYCLES
from closer.tasks.evaluate import EvaluationRecord, evaluate
from closer.tasks.generate import generate_suite
from closer.tasks.models import TaskKind
from closer.tasks.paths import SuitePaths, TaskPaths

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def task_a(tmp_path_factory) -> TaskPaths:
    out = tmp_path_factory.mktemp("firdma-a")
    generate_suite("firdma", out, kinds=[TaskKind.A], budgets=["low"])
    return SuitePaths(out).task("firdma-A-low")


def _workspace(task: TaskPaths, dest: Path, with_solution: bool) -> Path:
    shutil.copytree(task.workspace, dest)
    if with_solution:
        shutil.copytree(task.hidden.solution, dest, dirs_exist_ok=True)
    return dest


@pytest.fixture(scope="module")
def oracle_record(task_a: TaskPaths, tmp_path_factory) -> EvaluationRecord:
    tmp = tmp_path_factory.mktemp("firdma-oracle")
    return evaluate(_workspace(task_a, tmp / "ws", True), task_a.root, tmp / "eval")


def test_reference_solution_scores_one(oracle_record: EvaluationRecord) -> None:
    record = oracle_record
    assert record.accepted and record.scored, record.verifier_error
    assert record.reward == 1.0 and record.failing_gates == []
    assert record.gates["func"] == "pass" and record.gates["gls"] == "pass"
    # public: directed + random + cycles + spec (issue 26) on small; hidden: the same four on small and wide
    assert record.public.tests == 4 and record.public.failed == 0
    assert record.hidden.tests == 8 and record.hidden.failed == 0
    assert [r["run"] for r in record.hidden.runs] == ["small", "wide"]
    assert record.gls.tests == 2 and record.gls.failed == 0  # test_directed and test_random at gate level
    assert record.metrics[SIM_CYCLES] > 20000
    assert record.metrics["synth__design__instance__area__stdcell"] > 50000
    assert record.provenance["task_design_revision"] and record.provenance["run__closer__tool_versions"]
    # the public projection scores the public workload against the objective's targets (measured
    # on the hidden workload): its reward is the verify estimate, not the hidden reward
    assert record.public_reward is not None
    assert record.public_private_gap == record.public_reward - record.reward


def test_null_submission_scores_zero_with_the_reason(task_a: TaskPaths, tmp_path: Path) -> None:
    record = evaluate(_workspace(task_a, tmp_path / "ws", False), task_a.root, tmp_path / "eval")
    assert record.accepted and record.scored
    assert record.reward == 0.0 and record.failing_gates == ["func"]
    assert "func" in record.gate_reasons and record.hidden.failed > 0
    assert record.flow_error == "not run: the functional tests failed"


def test_faulty_rtl_scores_zero(task_a: TaskPaths, tmp_path: Path) -> None:
    fault = next(f for f in load_faults() if f.id == "wrong_rounding")
    ws = _workspace(task_a, tmp_path / "ws", True)
    target = ws / "rtl" / fault.file
    text = target.read_text()
    assert text.count(fault.find) == 1
    target.write_text(text.replace(fault.find, fault.replace))
    record = evaluate(ws, task_a.root, tmp_path / "eval")
    assert record.reward == 0.0 and record.failing_gates == ["func"] and record.hidden.failed > 0


def test_tied_off_outputs_fail_fast_instead_of_hanging(tmp_path: Path, repo) -> None:
    """An implementation that never answers on AXI4-Lite (every output tied to 0) fails the oracle
    through its bounded register accesses, within seconds rather than the simulation timeout."""
    from closer.firdma.oracle import load_config, run_directed
    from closer.tasks.generate import skeleton

    header = skeleton(repo.designs / "firdma" / "rtl" / "firdma.sv", "firdma")
    outputs = re.findall(r"output\s+wire\s+(?:\[[^\]]+\]\s+)?(\w+)", header)
    assert "s_axil_arready" in outputs and "irq" in outputs
    body = "\n".join(f"    assign {name} = '0;" for name in outputs)
    rtl = tmp_path / "rtl"
    rtl.mkdir()
    (rtl / "firdma.sv").write_text(header.replace("    // TODO: implement (see spec.md)", body))
    result = run_directed(rtl, load_config("small"), tmp_path / "sim", timeout_s=300)
    assert result.build_ok and result.completed and result.tests == 1 and result.failed == 1
    assert "no AXI4-Lite response within" in result.log.read_text()
    assert result.wall_s < 120
