"""What the evaluator takes in (issue 16): RTL file I/O and outside includes rejected, the oracle's
reports read strictly, symlinks/special/oversize files refused, the suite's checksums re-checked.
Each attack next to the honest equivalent; one full gcd-A evaluation (the honest one, ~35 s), the
others stop before or right after the simulations."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from closer.metered.runstate import AgentExit, RunEvidence, RunState, classify_run
from closer.tasks import intake, oracle_reports
from closer.tasks.evaluate import evaluate
from closer.tasks.generate import generate_suite
from closer.tasks.models import SuiteManifest, TaskKind
from closer.tasks.paths import SuitePaths, TaskPaths, tree_checksum

TASK = "gcd-A-low"


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> SuitePaths:
    out = tmp_path_factory.mktemp("suite")
    generate_suite("gcd", out, kinds=[TaskKind.A], budgets=["low"])
    return SuitePaths(out)


@pytest.fixture
def task(suite: SuitePaths) -> TaskPaths:
    return suite.task(TASK)


def _golden_workspace(task: TaskPaths, dest: Path) -> Path:
    shutil.copytree(task.workspace, dest)
    shutil.copyfile(task.hidden.solution / "rtl" / "gcd.v", dest / "rtl" / "gcd.v")
    return dest


def _suite_copy(suite: SuitePaths, dest: Path) -> SuitePaths:
    shutil.copytree(suite.root, dest)
    return SuitePaths(dest)


def _run_state(record) -> RunState:
    """The run state `closer task run` derives from an evaluation record."""
    return classify_run(RunEvidence(agent_exit=AgentExit.FINISHED, workspace_scoreable=record.accepted,
                                    score_produced=record.scored, verifier_error=record.verifier_error)).state


# --- the honest answer keeps its reward ---

def test_honest_golden_with_header_and_editor_symlink_scores_1(task: TaskPaths, tmp_path: Path) -> None:
    """The golden gcd with its widths from a header of its own (`include "gcd_defs.vh"`), and an
    editor lock file (a symlink) lying in rtl/: the header is taken by simulation, flow and GLS,
    the symlink is refused and recorded, the reward is 1.0."""
    ws = _golden_workspace(task, tmp_path / "ws")
    golden = (ws / "rtl" / "gcd.v").read_text()
    (ws / "rtl" / "gcd_defs.vh").write_text("`ifndef GCD_DEFS_VH\n`define GCD_DEFS_VH\n`define GCD_TWO 2\n`endif\n")
    assert "2*WIDTH" in golden
    (ws / "rtl" / "gcd.v").write_text('`include "gcd_defs.vh"\n' + golden.replace("2*WIDTH", "`GCD_TWO*WIDTH"))
    (ws / "rtl" / ".#gcd.v").symlink_to("root@host.1234:1700000000")
    record = evaluate(ws, task.root, tmp_path / "eval")
    assert record.accepted and record.scored and record.reward == 1.0, record.reasons or record.verifier_error
    assert record.rtl_violations == []
    assert sorted(record.surface_files) == ["rtl/gcd.v", "rtl/gcd_defs.vh"]
    assert [(r.path, r.reason.split(" (")[0]) for r in record.refused_files] == [("rtl/.#gcd.v", "a symlink")]
    assert record.hidden.cycles and record.hidden.cycles > 0 and record.gls.failed == 0


# --- attack: the design writes the oracle's reports ---

FOPEN_ATTACK = """
    // the attack of issue 16: write a short cycle count where the oracle's reports go
    integer report;
    initial begin
        report = $fopen("reports/seed_1.json", "w");
        $fwrite(report, "{\\"test\\": \\"seed_1\\", \\"cycles\\": 1}");
        $fclose(report);
    end
endmodule
"""


def test_design_writing_reports_is_rejected_with_file_line_construct(task: TaskPaths, tmp_path: Path) -> None:
    ws = _golden_workspace(task, tmp_path / "ws")
    golden = (ws / "rtl" / "gcd.v").read_text()
    body = golden[:golden.rindex("endmodule")] + FOPEN_ATTACK
    (ws / "rtl" / "gcd.v").write_text(body)
    record = evaluate(ws, task.root, tmp_path / "eval")
    assert not record.accepted and not record.scored and record.reward == 0.0
    line = body.splitlines().index('        report = $fopen("reports/seed_1.json", "w");') + 1
    assert [(v.file, v.line, v.what) for v in record.rtl_violations] == [
        ("rtl/gcd.v", line, "$fopen"), ("rtl/gcd.v", line + 1, "$fwrite"), ("rtl/gcd.v", line + 2, "$fclose")]
    assert record.verifier_error.startswith(f"rejected: RTL policy: rtl/gcd.v:{line}: $fopen: file I/O")
    assert (tmp_path / "eval" / "evaluation.json").is_file() and record.public is None  # nothing simulated
    assert _run_state(record) is RunState.AGENT_FAILURE


def test_include_of_the_hidden_solution_is_rejected(task: TaskPaths, tmp_path: Path) -> None:
    ws = _golden_workspace(task, tmp_path / "ws")
    hidden_rtl = task.hidden.solution / "rtl" / "gcd.v"
    for include in (str(hidden_rtl), os.path.relpath(hidden_rtl, ws / "rtl")):
        (ws / "rtl" / "gcd.v").write_text(f'`include "{include}"\n')
        record = evaluate(ws, task.root, tmp_path / "eval")
        assert not record.accepted and record.reward == 0.0
        assert [(v.file, v.line) for v in record.rtl_violations] == [("rtl/gcd.v", 1)]
        assert "not allowed (only the workspace's own files)" in record.rtl_violations[0].reason


def test_symlinks_into_hidden_and_system_files_are_refused(task: TaskPaths, tmp_path: Path) -> None:
    ws = _golden_workspace(task, tmp_path / "ws")
    (ws / "rtl" / "gcd.v").unlink()
    (ws / "rtl" / "gcd.v").symlink_to(task.hidden.solution / "rtl" / "gcd.v")
    (ws / "rtl" / "x.v").symlink_to("/etc/shadow")
    record = evaluate(ws, task.root, tmp_path / "eval")
    assert {r.path: r.reason.split(" (")[0] for r in record.refused_files} == {
        "rtl/gcd.v": "a symlink", "rtl/x.v": "a symlink"}
    assert "rtl/gcd.v" not in record.surface_files and not (tmp_path / "eval" / "tree" / "rtl" / "gcd.v").exists()
    assert not record.accepted and record.reward == 0.0  # the design's one file is missing
    assert [v.what for v in record.rtl_violations] == ["file"]


# --- evaluator integrity: the suite's checksums ---

def test_overwritten_hidden_oracle_refuses_to_evaluate(suite: SuitePaths, tmp_path: Path) -> None:
    copy = _suite_copy(suite, tmp_path / "suite")
    task = copy.task(TASK)
    assert intake.check_suite_integrity(task) is None  # untouched: evaluated
    ws = _golden_workspace(task, tmp_path / "ws")
    (task.hidden.oracle / "test_gcd.py").write_text("import cocotb\n\n@cocotb.test()\nasync def ok(dut):\n    pass\n")
    record = evaluate(ws, task.root, tmp_path / "eval")
    assert not record.scored and record.reward is None and record.hidden is None
    assert record.verifier_error.startswith(f"refused to evaluate: {task.hidden.root}: the hidden part changed")
    assert json.loads((tmp_path / "eval" / "evaluation.json").read_text())["verifier_error"] == record.verifier_error
    assert _run_state(record) is RunState.VERIFIER_FAILURE


@pytest.mark.parametrize("edit", ["targets", "locked", "suite.json"])
def test_changed_targets_lock_manifest_or_suite_json_refuse(suite: SuitePaths, tmp_path: Path, edit: str) -> None:
    copy = _suite_copy(suite, tmp_path / "suite")
    task = copy.task(TASK)
    if edit == "targets":
        task.hidden.targets.write_text(task.hidden.targets.read_text().replace("2400", "99999") + "# easier\n")
        expected = "the hidden part changed"
    elif edit == "locked":
        task.locked.write_text(task.locked.read_text() + " ")
        expected = "the task folder changed"
    else:
        copy.manifest.write_text("{}")
        expected = "not a suite manifest"
    problem = intake.check_suite_integrity(task)
    assert problem is not None and expected in problem, problem


# --- a malformed report is a verifier failure with a record ---

def test_malformed_oracle_report_is_a_verifier_failure_with_record(suite: SuitePaths, tmp_path: Path) -> None:
    """An oracle whose reports are broken (here: an extra malformed file next to them; the
    suite's checksum updated as its author would) used to crash `closer task run` before any
    record was written; now the evaluation records a verifier failure naming the file."""
    copy = _suite_copy(suite, tmp_path / "suite")
    task = copy.task(TASK)
    oracle = task.hidden.oracle / "test_gcd.py"
    oracle.write_text(oracle.read_text() + "\n\nif REPORT_DIR:\n    Path(REPORT_DIR).mkdir(parents=True, exist_ok=True)\n"
                      "    (Path(REPORT_DIR) / 'extra.json').write_text('{\"cycles\": ')\n")
    manifest = SuiteManifest.model_validate_json(copy.manifest.read_text())
    manifest.tasks[0].hidden_checksum = tree_checksum(task.hidden.root)
    copy.manifest.write_text(manifest.model_dump_json(indent=2))
    ws = _golden_workspace(task, tmp_path / "ws")
    record = evaluate(ws, task.root, tmp_path / "eval")
    assert record.accepted and not record.scored and record.reward is None
    assert record.verifier_error.startswith("verifier failure: the oracle's reports are not valid: default: ")
    assert "extra.json" in record.verifier_error
    assert (tmp_path / "eval" / "evaluation.json").is_file()
    assert _run_state(record) is RunState.VERIFIER_FAILURE


def _reports(folder: Path, files: dict[str, object]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).write_text(content if isinstance(content, str) else json.dumps(content))
    return folder


def test_report_reading_two_way(tmp_path: Path) -> None:
    ok = {"a.json": {"test": "a", "cycles": 10, "requests": 3}, "b.json": {"test": "b", "cycles": 5}}
    outcomes = {"t/a": True, "t/b": True}
    assert oracle_reports.read_cycles(_reports(tmp_path / "ok", ok), outcomes) == 15
    # a failing test that stopped before its report: valid, cycles not summed
    assert oracle_reports.read_cycles(_reports(tmp_path / "short", {"a.json": ok["a.json"]}),
                                      {"t/a": True, "t/b": False}) is None
    bad = {
        "extra": (ok | {"c.json": {"test": "c", "cycles": 1}}, "3 reports for 2 tests"),
        "missing": ({"a.json": ok["a.json"]}, "1 reports, but 2 tests passed"),
        "malformed": ({"a.json": "{\"cycles\": ", "b.json": ok["b.json"]}, "a.json: "),
        "string": ({"a.json": {"test": "a", "cycles": "1"}, "b.json": ok["b.json"]}, "key cycles"),
        "negative": ({"a.json": {"test": "a", "cycles": -9}, "b.json": ok["b.json"]}, "key cycles"),
        "renamed": ({"a.json": {"test": "b", "cycles": 1}, "b.json": ok["b.json"]}, "key test"),
        "other file": (ok | {"notes.txt": "x"}, "unexpected entries notes.txt"),
    }
    for name, (files, expected) in bad.items():
        with pytest.raises(oracle_reports.ReportError, match=expected.replace("(", r"\(")):
            oracle_reports.read_cycles(_reports(tmp_path / name, files), outcomes)
    link = _reports(tmp_path / "link", {"a.json": ok["a.json"]})
    (link / "b.json").symlink_to(tmp_path / "ok" / "b.json")
    with pytest.raises(oracle_reports.ReportError, match="not a regular file"):
        oracle_reports.read_cycles(link, outcomes)


# --- taking the edit surface: regular files only, size limits ---

def test_take_surface_two_way(tmp_path: Path) -> None:
    cand, outside = tmp_path / "cand", tmp_path / "outside"
    (cand / "rtl" / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.v").write_text("secret\n")
    (cand / "rtl" / "a.v").write_text("module a; endmodule\n")
    (cand / "rtl" / "sub" / "b.vh").write_text("`define B 1\n")
    (cand / "notes.md").write_text("outside the surface\n")
    (cand / "rtl" / "link.v").symlink_to(outside / "secret.v")
    (cand / "rtl" / "linkdir").symlink_to(outside, target_is_directory=True)
    os.mkfifo(cand / "rtl" / "fifo.v")
    os.link(outside / "secret.v", cand / "rtl" / "hard.v")
    (cand / "rtl" / "big.v").write_bytes(b"x" * 2000)
    limits = intake.SurfaceLimits(max_file_bytes=1000, max_total_bytes=30)
    tree = tmp_path / "tree"
    taken, refused = intake.take_surface(cand, {"rtl/*": "rtl"}, tree, limits)
    assert sorted(taken) == ["rtl/a.v"]  # b.vh would exceed the total of 30 bytes
    assert (tree / "rtl" / "a.v").read_text() == "module a; endmodule\n" and not (tree / "notes.md").exists()
    reasons = {r.path: r.reason for r in refused}
    assert reasons["rtl/link.v"].startswith("a symlink (to ")
    assert reasons["rtl/linkdir"].startswith("a symlink (to ")
    assert reasons["rtl/fifo.v"] == "a special file (FIFO): only regular files are taken"
    assert reasons["rtl/hard.v"].startswith("a hard link")
    assert reasons["rtl/big.v"] == "2000 bytes: over the per-file limit of 1000 bytes"
    assert reasons["rtl/sub/b.vh"].startswith("12 bytes: the edit surface would exceed its total limit of 30")
    assert len(refused) == 6
    # within the limits and regular: everything is taken
    taken, refused = intake.take_surface(cand, {"rtl/a.v": "rtl", "rtl/sub/*": "rtl"}, tmp_path / "tree2")
    assert sorted(taken) == ["rtl/a.v", "rtl/sub/b.vh"] and refused == []
    # a symlinked folder the surface reaches into is refused, not entered
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "rtl").symlink_to(cand / "rtl", target_is_directory=True)
    taken, refused = intake.take_surface(linked, {"rtl/*": "rtl"}, tmp_path / "tree3")
    assert taken == {} and [r.path for r in refused] == ["rtl/"]
    assert refused[0].reason.startswith("a symlinked folder (to ")
