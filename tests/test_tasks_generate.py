"""closer task generate on gcd: nine tasks, manifests, checksums, hidden part outside, schemas."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from closer.errors import InputError
from closer.paths import schema_path
from closer.tasks.generate import generate_suite, skeleton
from closer.tasks.models import SUITE_VERSION, TaskKind, load_design_tasks
from closer.tasks.paths import PUBLIC_TARGETS, SuitePaths, sha256_file, tree_checksum, workspace_files
from closer.tasks.schemas import all_models, schema_text


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> SuitePaths:
    out = tmp_path_factory.mktemp("suite")
    generate_suite("gcd", out)
    return SuitePaths(out)


def test_nine_tasks_with_manifest_and_checksums(suite: SuitePaths) -> None:
    manifest = json.loads(suite.manifest.read_text())
    assert manifest["suite_version"].startswith(SUITE_VERSION + "+")
    ids = sorted(t["task_id"] for t in manifest["tasks"])
    assert ids == sorted(f"gcd-{k}-{b}" for k in "ABC" for b in ("low", "medium", "high"))
    for entry in manifest["tasks"]:
        task = suite.task(entry["task_id"])
        assert task.is_valid() and task.instruction.is_file() and task.edit_surface.is_file()
        assert tree_checksum(task.root) == entry["checksum"]
        assert tree_checksum(suite.hidden(entry["task_id"]).root) == entry["hidden_checksum"]


def test_locked_manifest_covers_everything_outside_the_surface(suite: SuitePaths) -> None:
    task = suite.task("gcd-A-low")
    locked = json.loads(task.locked.read_text())
    paths = {f["path"] for f in locked["files"]}
    assert {"tests/test_gcd.py", "tests/gcd_stimulus.py", "spec.md", "constraints/gcd.sdc",
            "task.json"} <= paths
    assert not any(p.startswith(".closer/") for p in paths)  # the harness's, moved out at run time
    assert "rtl/gcd.v" not in paths  # the edit surface of A
    for f in locked["files"]:
        assert sha256_file(task.workspace / f["path"]) == f["sha256"]
    b_locked = {f["path"] for f in json.loads(suite.task("gcd-B-low").locked.read_text())["files"]}
    assert "constraints/gcd.sdc" not in b_locked and "flow/settings.toml" not in b_locked


def test_hidden_part_is_outside_and_absent_from_workspaces(suite: SuitePaths, repo) -> None:
    tasks = load_design_tasks(repo.designs / "gcd" / "tasks.toml")
    hidden_seeds = {str(s) for s in tasks.hidden.seeds}
    for kind in TaskKind:
        task = suite.task(f"gcd-{kind.value}-medium")
        hidden = task.hidden
        assert hidden.targets.is_file() and hidden.config.is_file() and hidden.solution.is_dir()
        assert not str(hidden.root).startswith(str(task.root))
        config_text = (task.workspace / "task.json").read_text()
        assert not any(f'"{s}"' in config_text or f" {s}," in config_text or f"[{s}" in config_text
                       for s in hidden_seeds)
        for rel in workspace_files(task.workspace):
            # the one targets file: the public projection's, in the locked control dir
            assert ("targets" not in rel or rel == PUBLIC_TARGETS) and "solution" not in rel
        assert "w8" not in config_text  # the hidden width config


def test_starting_points(suite: SuitePaths, repo) -> None:
    a_rtl = (suite.task("gcd-A-low").workspace / "rtl" / "gcd.v").read_text()
    assert "module gcd" in a_rtl and "TODO" in a_rtl and "always" not in a_rtl
    weak = (repo.designs / "gcd" / "weak" / "rtl" / "gcd.v").read_text()
    assert (suite.task("gcd-B-low").workspace / "rtl" / "gcd.v").read_text() == weak
    assert "TODO" in (suite.task("gcd-C-low").workspace / "rtl" / "gcd.v").read_text()
    golden = (repo.designs / "gcd" / "rtl" / "gcd.v").read_text()
    assert (suite.hidden("gcd-C-low").solution / "rtl" / "gcd.v").read_text() == golden


def test_instruction_names_budget_and_tools(suite: SuitePaths) -> None:
    text = suite.task("gcd-A-high").instruction.read_text()
    assert "closer-tool sim" in text and "closer-tool verify" in text and "tier `high`" in text
    assert "uncapped" in text  # high tier: sim is uncapped
    assert "rtl/*" in text and "spec.md" in text


def test_files_validate_against_exported_schemas(suite: SuitePaths) -> None:
    for name, model in all_models().items():
        assert schema_path(name).read_text() == schema_text(model), f"run python -m closer.tasks.schemas ({name})"
    task = suite.task("gcd-B-high")
    jsonschema.validate(json.loads(task.config.read_text()), json.loads(schema_path("task-config").read_text()))
    jsonschema.validate(json.loads(task.locked.read_text()), json.loads(schema_path("task-locked").read_text()))
    jsonschema.validate(json.loads(suite.manifest.read_text()), json.loads(schema_path("task-suite").read_text()))
    jsonschema.validate(json.loads(task.hidden.config.read_text()), json.loads(schema_path("task-hidden").read_text()))


def test_cli_subset_and_errors(tmp_path: Path) -> None:
    from closer.cli import cli

    result = CliRunner().invoke(cli, ["task", "generate", "gcd", "--unchecked", "--kinds", "A", "--budgets", "low",
                                      "--out", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert "gcd-A-low" in result.output and "1 tasks" in result.output
    bad = CliRunner().invoke(cli, ["task", "generate", "gcd", "--kinds", "D", "--out", str(tmp_path / "t")])
    assert bad.exit_code != 0 and "unknown kind" in bad.output


def test_bad_tasks_toml_names_file_and_key(tmp_path: Path, repo) -> None:
    text = (repo.designs / "gcd" / "tasks.toml").read_text().replace('count = 12', 'count = -1', 1)
    path = tmp_path / "tasks.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=r"tasks\.toml: key public\.count"):
        load_design_tasks(path)


def test_skeleton_needs_an_ansi_header(tmp_path: Path) -> None:
    src = tmp_path / "old.v"
    src.write_text("module gcd(clk);\ninput clk;\nendmodule\n")
    assert "module gcd(clk);" in skeleton(src, "gcd")
    with pytest.raises(InputError, match="no ANSI-style header of module 'other'"):
        skeleton(src, "other")
