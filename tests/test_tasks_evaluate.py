"""The pristine evaluator on gcd task A with real tools: locked files, anti-gaming, scoring."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from closer.tasks.evaluate import build_tree, check_locked, evaluate
from closer.tasks.generate import generate_suite
from closer.tasks.models import LockedManifest, TaskConfig
from closer.tasks.paths import SuitePaths, TaskPaths


@pytest.fixture(scope="module")
def task_a(tmp_path_factory) -> TaskPaths:
    out = tmp_path_factory.mktemp("suite")
    generate_suite("gcd", out, kinds=None, budgets=["low"])
    return SuitePaths(out).task("gcd-A-low")


def _workspace(task: TaskPaths, dest: Path) -> Path:
    shutil.copytree(task.workspace, dest)
    return dest


def hard_coded_gcd(task: TaskPaths) -> str:
    """A gcd that answers from a table of the public seeds' requests (and 0 otherwise)."""
    config = TaskConfig.model_validate_json(task.config.read_text())
    sys.path.insert(0, str(task.workspace / "tests"))
    try:
        from gcd_stimulus import operand_pairs
    finally:
        sys.path.pop(0)
    width = int(config.parameters[config.config]["WIDTH"])
    import math
    rows = {}
    for seed in config.public.seeds:
        for a, b in operand_pairs(seed, config.public.count, width):
            rows[(a << width) | b] = math.gcd(a, b)
    cases = "\n".join(f"                    {2 * width}'h{k:x}: result <= {width}'d{v};" for k, v in sorted(rows.items()))
    return f"""module gcd #(parameter WIDTH = 16) (
    input wire clk, input wire reset, input wire req_val, output wire req_rdy,
    input wire [2*WIDTH-1:0] req_msg, output wire resp_val, input wire resp_rdy,
    output wire [WIDTH-1:0] resp_msg);
    reg busy;
    reg [WIDTH-1:0] result;
    assign req_rdy = !busy;
    assign resp_val = busy;
    assign resp_msg = result;
    always @(posedge clk) begin
        if (reset) begin busy <= 1'b0; result <= 0; end
        else if (!busy && req_val) begin
            busy <= 1'b1;
            case (req_msg)
{cases}
                    default: result <= 0;
            endcase
        end else if (busy && resp_rdy) busy <= 1'b0;
    end
endmodule
"""


@pytest.mark.parametrize("locked_file", ["tests/test_gcd.py", "spec.md", "constraints/gcd.sdc"])
def test_locked_file_edit_is_rejected_and_recorded(task_a: TaskPaths, tmp_path: Path, locked_file: str) -> None:
    ws = _workspace(task_a, tmp_path / "ws")
    shutil.copyfile(task_a.hidden.solution / "rtl" / "gcd.v", ws / "rtl" / "gcd.v")
    with open(ws / locked_file, "a") as fh:
        fh.write("\n# weakened\n")
    record = evaluate(ws, task_a.root, tmp_path / "eval")
    assert not record.accepted and not record.scored and record.reward == 0.0
    assert [(v.path, v.problem) for v in record.locked_violations] == [(locked_file, "changed")]
    assert (tmp_path / "eval" / "evaluation.json").is_file()


def test_locked_check_two_way(task_a: TaskPaths, tmp_path: Path) -> None:
    locked = LockedManifest.model_validate_json(task_a.locked.read_text())
    config = TaskConfig.model_validate_json(task_a.config.read_text())
    ws = _workspace(task_a, tmp_path / "ws")
    (ws / "rtl" / "gcd.v").write_text("// edited surface file\n")
    (ws / "notes.txt").write_text("an added file outside the surface is ignored\n")
    violations, ignored = check_locked(ws, locked, config.edit_surface)
    assert violations == [] and ignored == ["notes.txt"]
    (ws / "tests" / "gcd_stimulus.py").unlink()
    violations, _ = check_locked(ws, locked, config.edit_surface)
    assert [(v.path, v.problem) for v in violations] == [("tests/gcd_stimulus.py", "deleted")]


def test_only_the_surface_reaches_the_pristine_tree(task_a: TaskPaths, tmp_path: Path) -> None:
    config = TaskConfig.model_validate_json(task_a.config.read_text())
    ws = _workspace(task_a, tmp_path / "ws")
    (ws / "rtl" / "gcd.v").write_text("// candidate\n")
    (ws / "rtl" / "extra.v").write_text("// candidate helper\n")
    (ws / "tests" / "helper.py").write_text("print('not taken')\n")
    taken = build_tree(task_a.workspace, ws, config.edit_surface, tmp_path / "tree")
    assert sorted(taken) == ["rtl/extra.v", "rtl/gcd.v"]
    assert not (tmp_path / "tree" / "tests" / "helper.py").exists()
    assert (tmp_path / "tree" / "tests" / "test_gcd.py").read_bytes() == (task_a.workspace / "tests" / "test_gcd.py").read_bytes()


def test_hard_coded_public_outputs_fail_on_hidden_seeds(task_a: TaskPaths, tmp_path: Path) -> None:
    ws = _workspace(task_a, tmp_path / "ws")
    (ws / "rtl" / "gcd.v").write_text(hard_coded_gcd(task_a))
    record = evaluate(ws, task_a.root, tmp_path / "eval")
    assert record.accepted and record.scored
    assert record.public.failed == 0 and record.public.tests > 0  # it passes every public test
    assert record.hidden.failed > 0
    assert record.reward == 0.0 and "func" in record.failing_gates
    assert record.func_pass_gap > 0.5


@pytest.fixture(scope="module")
def task_b(task_a: TaskPaths) -> TaskPaths:
    return TaskPaths(task_a.root.parent / "gcd-B-low")


@pytest.mark.slow
@pytest.mark.parametrize("sdc_edit", ["delete_clock", "false_path_everything"])
def test_unconstrained_path_audit_catches_sdc_gaming(task_b: TaskPaths, tmp_path: Path, sdc_edit: str) -> None:
    ws = _workspace(task_b, tmp_path / "ws")
    # the reference RTL: its layout is quicker than the weak start's, and the SDC is what is gamed
    shutil.copyfile(task_b.hidden.solution / "rtl" / "gcd.v", ws / "rtl" / "gcd.v")
    sdc = ws / "constraints" / "gcd.sdc"
    if sdc_edit == "delete_clock":
        sdc.write_text("\n".join(l for l in sdc.read_text().splitlines()
                                 if "create_clock" not in l and "-clock" not in l) + "\n")
    else:
        sdc.write_text(sdc.read_text() + "set_false_path -from [all_inputs]\nset_false_path -to [all_outputs]\n"
                       "set_false_path -from [all_registers] -to [all_registers]\n")
    record = evaluate(ws, task_b.root, tmp_path / "eval")
    assert record.accepted and record.gates["func"] == "pass"
    assert record.scored and record.reward == 0.0
    if sdc_edit == "false_path_everything":  # closer.sdc refuses the exception before any tool runs
        assert "set_false_path: timing exception 'false_path' is not allowed" in record.flow_error
        return
    assert record.metrics["closer__timing__unconstrained_endpoints"] > 0
    assert "sta" in record.failing_gates


@pytest.fixture(scope="module")
def oracle_b(task_b: TaskPaths, tmp_path_factory):
    """gcd-B-low with the reference RTL, evaluated once through the physical flow."""
    tmp = tmp_path_factory.mktemp("oracle_b")
    ws = _workspace(task_b, tmp / "ws")
    shutil.copyfile(task_b.hidden.solution / "rtl" / "gcd.v", ws / "rtl" / "gcd.v")
    return evaluate(ws, task_b.root, tmp / "eval")


@pytest.mark.slow
def test_oracle_b_runs_the_physical_flow_and_scores_the_signoff_gates(oracle_b) -> None:
    record = oracle_b
    assert record.accepted and record.scored, record.verifier_error
    assert record.flow_error is None
    m = record.metrics
    # every B gate was measured from the merged metadata.json of `closer flow run --to pnr`
    assert set(record.gates) >= {"func", "lec", "gls", "sta", "route", "drc", "lvs"}
    assert all(record.gates[g] == "pass" for g in ("func", "lec", "gls", "sta", "route")), record.gate_reasons
    assert m["closer__lec__result"] == "equivalent"
    assert m["closer__timing__unconstrained_endpoints"] == 0
    for key in ("finish__timing__drv__max_slew", "finish__timing__drv__max_cap", "finish__timing__hold__ws",
                "closer__signoff__lvs_errors", "closer__signoff__drc_errors", "closer__route__unrouted_nets"):
        assert key in m, key
    assert m["finish__design__instance__area"] <= 2400.0  # the B target (designs/gcd/tasks.toml)
    # the physical flow signs the golden gcd off clean (0 unrouted, 0 DRC, LVS clean): the ceiling
    assert record.reward == 1.0, record.reasons
    assert record.failing_gates == [] and record.reasons == []


@pytest.mark.slow
def test_unmodified_weak_b_scores_below_one_with_reasons(task_b: TaskPaths, tmp_path: Path) -> None:
    """The null agent's B result: functionally correct and equivalent, but larger and slower than
    the targets (and, while the physical flow is not clean, failing drc/lvs/route too)."""
    ws = _workspace(task_b, tmp_path / "ws")
    record = evaluate(ws, task_b.root, tmp_path / "eval")
    assert record.accepted and record.scored and record.reward < 1.0
    assert record.gates["func"] == "pass" and record.gates["gls"] == "pass" and record.gates["lec"] == "pass"
    assert record.metrics["closer__timing__unconstrained_endpoints"] == 0
    assert any(r.startswith("target area:") for r in record.reasons), record.reasons
    # (the balanced synthesis default of issue 17 made the weak start meet the execution-time target)


def test_unconstrained_report_parser(tmp_path: Path) -> None:
    from closer.tasks.checks import unconstrained_from_report

    report = tmp_path / "unconstrained.rpt"
    assert unconstrained_from_report(report) is None
    report.write_text("Warning: There are 71 unconstrained endpoints.\n  req_rdy\n  resp_val\n")
    assert unconstrained_from_report(report) == 71
    report.write_text("Warning: There is 1 unconstrained endpoint.\n  tie_lo\n")
    assert unconstrained_from_report(report) == 1
    report.write_text("")
    assert unconstrained_from_report(report) == 0


def test_a_stopped_flow_counts_unconstrained_endpoints_as_a_finished_one(tmp_path: Path) -> None:
    """The STA node's own audit decides (it leaves out tie-cell outputs, as the finished flow's
    metric does); OpenSTA's raw count only when the node wrote no audit."""
    import json

    from closer.tasks.checks import unconstrained_from_sta_node

    reports = tmp_path / "sta" / "reports"
    reports.mkdir(parents=True)
    assert unconstrained_from_sta_node(tmp_path / "sta") is None
    (reports / "unconstrained.rpt").write_text("Warning: There are 42 unconstrained endpoints.\n")
    assert unconstrained_from_sta_node(tmp_path / "sta") == 42
    (reports / "sta.json").write_text(json.dumps({"metrics": {"timing__unconstrained__count": 0.0}}))
    assert unconstrained_from_sta_node(tmp_path / "sta") == 0
    (reports / "sta.json").write_text(json.dumps({"metrics": {"timing__unconstrained__count": 3.0}}))
    assert unconstrained_from_sta_node(tmp_path / "sta") == 3
    (reports / "sta.json").write_text("{not json")
    assert unconstrained_from_sta_node(tmp_path / "sta") == 42


def test_below_one_reasons_name_failing_gates_and_unmet_targets() -> None:
    from closer.reward import compute_reward, metrics_from_mapping, targets_from_dict
    from closer.tasks.evaluate import below_one_reasons

    targets = targets_from_dict({"gates": {"required": ["func", "lvs"]},
                                 "targets": [{"name": "area", "metric": "finish__design__instance__area",
                                              "target": 2400.0, "weight": 1.0}]}, "test")
    clean = {"closer__func__tests_failed": 0, "closer__signoff__lvs_errors": 0,
             "finish__design__instance__area": 2387.29}
    assert below_one_reasons(compute_reward(metrics_from_mapping(clean, "clean"), targets)
                             .model_dump(mode="json")) == []
    worse = clean | {"closer__signoff__lvs_errors": 1, "finish__design__instance__area": 2950.33}
    reasons = below_one_reasons(compute_reward(metrics_from_mapping(worse, "worse"), targets).model_dump(mode="json"))
    assert reasons[0].startswith("gate lvs: fail: closer__signoff__lvs_errors = 1")
    assert reasons[1].startswith("target area: finish__design__instance__area = 2950.33 > target 2400")
