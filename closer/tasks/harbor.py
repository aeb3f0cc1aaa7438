"""`closer task export-harbor TASK --out DIR`: the Harbor task layout of a generated task
(closer.tasks.harbor_layout draws it; the scripts are in closer.tasks.harbor_scripts).

The task folder is checked first (its checksums against suite.json, then every file the
evaluator reads parsed with its model), so a damaged task is refused with one line naming the
file instead of being packed. tests/ is uploaded only after the agent finishes (Harbor's verifier
contract), so the hidden part and the checksums the verifier trusts travel there and never sit in
the agent's environment. task.toml follows Harbor 0.26.0's TaskConfig (schema_version 1.4).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import tomllib
from pathlib import Path

import jsonschema
import tomli_w

from closer.errors import InputError
from closer.inputs import load_json_model
from closer.metered.config import load_tool_config
from closer.metered.paths import WorkspacePaths
from closer.paths import repo_paths, schema_path
from closer.pdk import pdk
from closer.reward.targets import load_targets
from closer.tasks.evaluate import load_hidden, load_task
from closer.tasks.harbor_layout import HarborPaths
from closer.tasks.harbor_scripts import DOCKERFILE, SOLVE_SH, TEST_SH
from closer.tasks.intake import check_suite_integrity
from closer.tasks.models import KIND_TITLES, HiddenConfig, LockedManifest, SuiteManifest, TaskConfig, TaskKind
from closer.tasks.paths import PUBLIC_TARGETS, TaskPaths, sha256_file

AGENT_TIMEOUT_CAP_SEC = 86400.0
VERIFIER_TIMEOUT_SEC = {TaskKind.A: 1800.0, TaskKind.B: 7200.0, TaskKind.C: 7200.0}
# the Harbor release whose TaskConfig the schema and task.toml follow (recorded in [metadata])
HARBOR_VERSION = "0.26.0"
# The image needs closer's checkout, not its tests or docs: the package, what it reads at run time
# (designs, oracles, platform config, task templates) and what bootstrap.sh installs from.
CHECKOUT_ENTRIES = ("closer", "designs", "oracles", "pdk", "tasks", "scripts",
                    "pyproject.toml", "requirements.lock", "README.md", "Makefile")
NOT_SOURCE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "runs", "sim_build",
                                    "*.vcd", "*.fst", "results.xml", ".pytest_cache")


def harbor_task_toml(task: TaskConfig, hidden_gates: list[str]) -> dict:
    from closer.budget import BudgetOverride, resolve_budget

    budget = resolve_budget(BudgetOverride(tier=task.budget_tier))
    return {
        "schema_version": "1.4",
        "task": {"name": f"closer/{task.task_id}",
                 "description": f"{task.design}: {KIND_TITLES[task.kind]} (budget tier {task.budget_tier})",
                 "authors": [{"name": "Closer"}],
                 "keywords": ["hardware", "verilog", "sky130", f"kind-{task.kind.value}", task.design]},
        "metadata": {"suite_version": task.suite_version, "design": task.design, "kind": task.kind.value,
                     "budget_tier": task.budget_tier, "design_revision": task.design_revision,
                     "required_gates": hidden_gates, "harbor_version": HARBOR_VERSION},
        "verifier": {"timeout_sec": VERIFIER_TIMEOUT_SEC[task.kind]},
        "agent": {"timeout_sec": min(budget.wall_s, AGENT_TIMEOUT_CAP_SEC), "network_mode": "no-network"},
        "environment": {"build_timeout_sec": 3600.0, "cpus": 2, "memory_mb": 8192, "storage_mb": 10240,
                        "network_mode": "no-network"},
    }


def validate_task_toml(path: Path) -> dict:
    data = tomllib.loads(path.read_text())
    schema = json.loads(schema_path("harbor-task").read_text())
    try:
        jsonschema.validate(data, schema)
    except jsonschema.ValidationError as exc:
        where = ".".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise InputError(f"{path}: key {where}: {exc.message}") from exc
    return data


def check_task_folder(task_dir: Path) -> tuple[TaskPaths, TaskConfig, HiddenConfig]:
    """The task, its hidden part and every file the evaluator and the metered tools read, each
    parsed with its model; an InputError naming the first bad file."""
    paths, task = load_task(task_dir)
    if (problem := check_suite_integrity(paths)) is not None:
        raise InputError(f"{paths.root}: cannot export: {problem}")
    hidden = load_hidden(paths)
    tools = WorkspacePaths(paths.workspace).tools_config
    if not tools.is_file():
        raise InputError(f"{tools} does not exist: the workspace has no tool configuration")
    load_tool_config(tools)
    load_json_model(paths.locked, LockedManifest, "locked-file manifest")
    load_targets(paths.hidden.targets)
    load_targets(paths.workspace / PUBLIC_TARGETS)
    if not paths.hidden.solution.is_dir():
        raise InputError(f"{paths.hidden.solution} does not exist: the task has no reference solution")
    return paths, task, hidden


def export_harbor(task_dir: Path, out: Path) -> Path:
    """Write the Harbor task of `task_dir` as `out/<task_id>/`; an existing one is refused."""
    paths, task, hidden = check_task_folder(task_dir)
    out = out.resolve()
    final = out / task.task_id
    if final.exists() or final.is_symlink():
        raise InputError(f"{final} exists: export into another --out (an export is never overwritten)")
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{task.task_id}.", dir=out))
    try:
        _write_layout(HarborPaths(staging), paths, task, hidden)
        staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def _write_layout(hp: HarborPaths, paths: TaskPaths, task: TaskConfig, hidden: HiddenConfig) -> None:
    hp.environment.mkdir(parents=True)
    hp.task_toml.write_text(tomli_w.dumps(harbor_task_toml(task, hidden.gates)))
    validate_task_toml(hp.task_toml)
    shutil.copyfile(paths.instruction, hp.instruction)
    hp.dockerfile.write_text(DOCKERFILE)
    _copy_checkout(hp.closer_src)
    shutil.copytree(pdk().root, hp.pdk, ignore=shutil.ignore_patterns("smoke"))
    shutil.copytree(paths.workspace, hp.workspace)
    shutil.copytree(paths.root, hp.suite / "tasks" / task.task_id)
    shutil.copytree(paths.hidden.root, hp.suite / "hidden" / task.task_id)
    _write_suite_manifest(paths, hp.suite / "suite.json")
    write_checksums(hp.closer_src, hp.installation_sums)
    write_checksums(hp.pdk, hp.pdk_sums)
    _script(hp.test_sh, TEST_SH.replace("@TASK_ID@", task.task_id))
    shutil.copytree(paths.hidden.solution, hp.solution_files)
    _script(hp.solve_sh, SOLVE_SH)


def write_checksums(root: Path, dest: Path) -> None:
    """`sha256sum -c` lines of every regular file under `root`, relative to it."""
    lines = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        lines.append(f"{sha256_file(path)}  {path.relative_to(root).as_posix()}\n")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("".join(lines))


def _write_suite_manifest(paths: TaskPaths, dest: Path) -> None:
    """The suite manifest with this task's entry only: the evaluator re-checks the task's and
    its hidden part's checksums against it (closer.tasks.intake.check_suite_integrity)."""
    manifest = load_json_model(paths.suite.manifest, SuiteManifest, "suite manifest")
    manifest.tasks = [e for e in manifest.tasks if e.task_id == paths.root.name]
    manifest.tasks[0].path = f"tasks/{paths.root.name}"
    dest.write_text(manifest.model_dump_json(indent=2) + "\n")


def _script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def _copy_checkout(dest: Path) -> None:
    repo = repo_paths().root
    dest.mkdir(parents=True)
    for name in CHECKOUT_ENTRIES:
        source = repo / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=NOT_SOURCE)
        else:
            shutil.copyfile(source, dest / name)
