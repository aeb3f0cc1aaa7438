"""Adding a design (docs/adding-a-design.md): lookup by path and $CLOSER_DESIGN_PATH, the
scaffold, `design show`, the cheap stages of `design check` (each accepts the scaffold and names
the cause of a perturbation), and what `task generate` and `report` refuse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from closer.cli import cli
from closer.designs import check
from closer.designs.model import SEARCH_PATH_ENV, design_dir, list_designs, load_design
from closer.designs.scaffold import new_design
from closer.errors import InputError
from closer.tasks.models import DesignTasks
from closer.tomlio import load_toml_model

SMALL = {"count = 300": "count = 30", "seeds = [101, 202, 303]": "seeds = [101]",
         "count = 100\n": "count = 40\n", "gls_count = 100": "gls_count = 20"}


def _closer(*args: str) -> tuple[int, str]:
    """The real command line (exit codes and messages as a user sees them)."""
    done = subprocess.run([sys.executable, "-m", "closer", *args], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def _edit(path: Path, **replacements: str) -> None:
    text = path.read_text()
    for old, new in replacements.items():
        assert old in text, f"{old!r} not in {path}"
        text = text.replace(old, new)
    path.write_text(text)


@pytest.fixture
def scaffolded(tmp_path: Path, monkeypatch) -> Path:
    """A scaffolded design `acc` on the search path, with small workloads (the check's stages run
    the real simulator on it)."""
    monkeypatch.setenv(SEARCH_PATH_ENV, str(tmp_path / "mine"))
    monkeypatch.setenv("CLOSER_CACHE_DIR", str(tmp_path / "cache"))
    folder = new_design("acc", tmp_path / "mine")
    text = (folder / "tasks.toml").read_text()
    for old, new in SMALL.items():
        text = text.replace(old, new)
    (folder / "tasks.toml").write_text(text)
    return folder


def _context(folder: Path, tmp_path: Path) -> check.CheckContext:
    design, dpaths = load_design(folder)
    tasks = load_toml_model(folder / "tasks.toml", DesignTasks, "{path}")
    work = tmp_path / "work"
    work.mkdir(parents=True, exist_ok=True)
    return check.CheckContext(design, dpaths, tasks, work)


def test_design_found_by_name_on_search_path_and_by_path(scaffolded: Path) -> None:
    assert design_dir("acc") == scaffolded.resolve()
    assert design_dir(scaffolded) == scaffolded.resolve()
    assert "acc" in list_designs() and "gcd" in list_designs()
    design, paths = load_design("acc")
    assert design.oracle is not None and paths.resolve(design.oracle.testbench).is_file()
    with pytest.raises(InputError, match=rf"unknown design 'nosuch'.*{SEARCH_PATH_ENV}"):
        load_design("nosuch")
    with pytest.raises(InputError, match=r"design folder .*nowhere: no .*design\.toml"):
        load_design(scaffolded.parent / "nowhere")


def test_new_refuses_existing_folder_and_bad_names(scaffolded: Path) -> None:
    with pytest.raises(InputError, match="already exists"):
        new_design("acc", scaffolded.parent)
    for bad in ("Acc", "1acc", "a-b", "../x", "a" * 41):
        with pytest.raises(InputError, match="design name"):
            new_design(bad, scaffolded.parent)
    code, output = _closer("design", "new", "../x", "--in", str(scaffolded.parent))
    assert code == 2 and "design name '../x'" in output and "Traceback" not in output


def test_show_prints_the_resolved_configuration(scaffolded: Path) -> None:
    result = CliRunner().invoke(cli, ["design", "show", "acc"])
    assert result.exit_code == 0, result.output
    assert "[physical]" in result.output and "core_utilization = 0.3" in result.output
    assert f'oracle_testbench = "{scaffolded.resolve()}/oracle/test_acc.py"' in result.output
    assert "task-targets.toml" in result.output  # the missing targets file is named, not a traceback


def test_lint_stage_accepts_scaffold_and_names_a_weak_lint_error(scaffolded: Path, tmp_path: Path) -> None:
    assert check.lint(_context(scaffolded, tmp_path)).ok
    _edit(scaffolded / "weak" / "rtl" / "acc.v", **{"acc  <= over ? {WIDTH{1'b1}} : twice[WIDTH-1:0];":
                                                   "acc  <= over ? {WIDTH{1'b1}} : twice;"})
    outcome = check.lint(_context(scaffolded, tmp_path))
    assert not outcome.ok and outcome.stage == "lint"
    assert "weak RTL" in outcome.detail and "%Warning-WIDTH" in outcome.detail


def test_lint_stage_lints_a_macro_config_as_the_flow_does(tmp_path: Path, pdk_paths, monkeypatch) -> None:
    """The check lints with the flow's lint command: firdma's `full` config instantiates the SRAM
    macro, which only the black box made from its LEF defines; without it Verilator refuses."""
    design, dpaths = load_design("firdma")
    tasks = load_toml_model(dpaths.root / "tasks.toml", DesignTasks, "{path}")
    ctx = check.CheckContext(design, dpaths, tasks, tmp_path)
    assert check._verilator_lint(ctx, ctx.golden(), "full", tmp_path / "lint" / "full.log") is None
    import closer.flow.direct.lint as lint
    monkeypatch.setattr(lint, "write_blackboxes", lambda folder, lefs: [])
    error = check._verilator_lint(ctx, ctx.golden(), "full", tmp_path / "lint" / "bare.log")
    assert error is not None and "sky130_sram_2kbyte_1rw1r_32x512_8" in error


@pytest.mark.slow
def test_oracle_stage_two_way(scaffolded: Path, tmp_path: Path) -> None:
    outcome = check.oracle(_context(scaffolded, tmp_path))
    assert outcome.ok, outcome.detail
    assert "skeleton/public fails" in outcome.detail and "weak/hidden passes" in outcome.detail
    # a golden that wraps around instead of saturating: the oracle fails it, named
    _edit(scaffolded / "rtl" / "acc.v", **{"next[WIDTH] ? {WIDTH{1'b1}} : next[WIDTH-1:0]": "next[WIDTH-1:0]"})
    outcome = check.oracle(_context(scaffolded, tmp_path / "2"))
    assert not outcome.ok and "the oracle fails the golden RTL on the public conditions" in outcome.detail


@pytest.mark.slow
def test_oracle_that_checks_nothing_is_refused(scaffolded: Path, tmp_path: Path) -> None:
    _edit(scaffolded / "oracle" / "test_acc.py", **{'    assert not wrong, "; ".join(wrong[:5])\n': ""})
    outcome = check.oracle(_context(scaffolded, tmp_path))
    assert not outcome.ok and "passes the skeleton" in outcome.detail


def test_run_stages_stops_at_the_first_failure_and_names_it(scaffolded: Path, tmp_path: Path) -> None:
    calls = []

    def failing(ctx):
        raise InputError("tasks.toml: key spec: missing")

    stages = [("one", lambda ctx: calls.append(1) or check.StageOutcome(stage="one", ok=True, detail="")),
              ("two", failing), ("three", lambda ctx: calls.append(3))]
    outcomes = list(check.run_stages(_context(scaffolded, tmp_path), stages))
    assert [o.stage for o in outcomes] == ["one", "two"] and calls == [1]
    assert outcomes[1].detail == "tasks.toml: key spec: missing"


def _write_targets(folder: Path, area: float) -> None:
    (folder / "task-targets.toml").write_text("".join(
        f'[[targets.{k}]]\nname = "area"\nmetric = "{m}"\ntarget = {area}\nweight = 1.0\n'
        for k, m in (("A", "synth__design__instance__area__stdcell"), ("B", "finish__design__instance__area"),
                     ("C", "finish__design__instance__area"))))


@pytest.mark.slow
def test_generate_refuses_unchecked_and_tracks_content(scaffolded: Path, tmp_path: Path) -> None:
    _write_targets(scaffolded, 500.0)
    out = tmp_path / "suite"
    code, output = _closer("task", "generate", "acc", "--kinds", "A", "--budgets", "low", "--out", str(out))
    assert code == 2 and "has no passing `closer design check`" in output and "Traceback" not in output
    ok = CliRunner().invoke(cli, ["task", "generate", "acc", "--unchecked", "--kinds", "A", "--budgets",
                                  "low", "--out", str(out)])
    assert ok.exit_code == 0, ok.output
    from closer.tasks.models import SuiteManifest

    first = SuiteManifest.model_validate_json((out / "suite.json").read_text())
    assert first.design_checks == {"acc": "unchecked"}
    instruction = (out / first.tasks[0].path / "instruction.md").read_text()
    assert "40 cycles each" in instruction and "long runs that saturate" in instruction
    assert "operands" not in instruction and "requests" not in instruction
    _write_targets(scaffolded, 400.0)  # hidden targets changed: the task's content changed
    code, output = _closer("task", "generate", "acc", "--unchecked", "--kinds", "A", "--budgets", "low",
                           "--out", str(out))
    assert code == 2 and "would change" in output and "--replace" in output
    replaced = CliRunner().invoke(cli, ["task", "generate", "acc", "--unchecked", "--replace", "--kinds", "A",
                                        "--budgets", "low", "--out", str(out)])
    assert replaced.exit_code == 0, replaced.output
    second = SuiteManifest.model_validate_json((out / "suite.json").read_text())
    assert second.suite_version != first.suite_version
    assert second.tasks[0].hidden_checksum != first.tasks[0].hidden_checksum


def test_report_refuses_trials_of_two_task_revisions() -> None:
    from closer.report.build import task_revisions

    def trial(tid: str, checksum: str | None):
        return SimpleNamespace(record=SimpleNamespace(task_id=tid, task_checksum=checksum))

    same = [trial("x-A-low", "aa"), trial("x-A-low", "aa"), trial("x-B-low", "bb")]
    assert task_revisions(same) == {}
    mixed = [*same, trial("x-A-low", "cc"), trial("x-B-low", None)]
    assert task_revisions(mixed) == {"x-A-low": ["aa", "cc"], "x-B-low": ["bb", "unrecorded"]}


def test_calibrated_targets_file_states_margin_and_weak_values(tmp_path: Path) -> None:
    import tomllib

    from closer.designs.calibrate import Measured, targets_text
    from closer.tasks.models import TaskKind, TaskTargets

    measured = [Measured(TaskKind.A, "area", "synth__design__instance__area__stdcell", 1000.0, 1300.0),
                Measured(TaskKind.B, "execution_time", "execution_time", 2000.0, None)]
    text = targets_text(measured, 0.1, "x")
    parsed = TaskTargets.model_validate(tomllib.loads(text))
    assert parsed.targets[TaskKind.A][0].target == pytest.approx(1100.0)
    assert parsed.targets[TaskKind.B] == parsed.targets[TaskKind.C]
    assert parsed.targets[TaskKind.B][0].target == pytest.approx(2200.0)
    assert "margin 10%" in text and "golden 1000, weak 1300" in text and "weak n/a" in text

