"""The generated suite layout. No other module builds these paths by hand."""

from __future__ import annotations

import fnmatch
import hashlib
from dataclasses import dataclass
from pathlib import Path

from closer.errors import InputError

# workspace-relative: the targets the public projection is scored with (= the evaluator's
# public_reward); in the control dir, locked, never part of the edit surface
PUBLIC_TARGETS = ".closer/public_targets.toml"


@dataclass(frozen=True)
class SuitePaths:
    """The output of `closer task generate`::

        <root>/
          suite.json                 SuiteManifest: every task, its checksum, the suite version
          tasks/<task_id>/           TaskPaths (what an agent may be shown)
          hidden/<task_id>/          HiddenPaths (evaluator only; never copied into a workspace)
    """

    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / "suite.json"

    @property
    def tasks(self) -> Path:
        return self.root / "tasks"

    def task(self, task_id: str) -> "TaskPaths":
        return TaskPaths(self.tasks / task_id)

    def hidden(self, task_id: str) -> "HiddenPaths":
        return HiddenPaths(self.root / "hidden" / task_id)


@dataclass(frozen=True)
class TaskPaths:
    """One task folder::

        <suite>/tasks/<task_id>/
          task.json                  TaskConfig
          instruction.md             what to do, the metered commands, the budget
          workspace/                 the starting workspace (copied for every run)
            spec.md, rtl/, constraints/, tests/ (public oracle), task-public.json
            .closer/tools.toml       metered tool configuration (locked)
          manifests/
            edit_surface.json        pattern -> layer
            locked.json              LockedManifest: SHA-256 of every file outside the surface
    """

    root: Path

    @property
    def config(self) -> Path:
        return self.root / "task.json"

    @property
    def instruction(self) -> Path:
        return self.root / "instruction.md"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def manifests(self) -> Path:
        return self.root / "manifests"

    @property
    def edit_surface(self) -> Path:
        return self.manifests / "edit_surface.json"

    @property
    def locked(self) -> Path:
        return self.manifests / "locked.json"

    @property
    def suite(self) -> SuitePaths:
        return SuitePaths(self.root.parent.parent)

    @property
    def hidden(self) -> "HiddenPaths":
        return self.suite.hidden(self.root.name)

    def is_valid(self) -> bool:
        return self.config.is_file() and self.workspace.is_dir() and self.locked.is_file()

    def require(self) -> "TaskPaths":
        if not self.is_valid():
            raise InputError(f"{self.root} is not a generated task folder (needs task.json, "
                             "workspace/ and manifests/locked.json; see `closer task generate`)")
        return self


@dataclass(frozen=True)
class HiddenPaths:
    """The hidden part of one task::

        <suite>/hidden/<task_id>/
          hidden.json                HiddenConfig: hidden conditions and required gates
          targets.toml               the hidden objective (closer.reward targets)
          oracle/                    the functional oracle (test module and stimulus)
          solution/                  the reference solution (edit-surface paths)
    """

    root: Path

    @property
    def config(self) -> Path:
        return self.root / "hidden.json"

    @property
    def targets(self) -> Path:
        return self.root / "targets.toml"

    @property
    def oracle(self) -> Path:
        return self.root / "oracle"

    @property
    def solution(self) -> Path:
        return self.root / "solution"


@dataclass(frozen=True)
class EvalPaths:
    """One evaluation (`closer evaluate`)::

        <out>/
          tree/                      pristine task workspace + the candidate's edit-surface files
          hidden/ public/            one scoring each (closer.tasks.score): design/<name>/, flow/,
                                     sim/func/<config>/, sim/gls/, lec/, metrics.json
          shared-runs/               flow runs the two scorings share (only while it runs)
          metrics.json               all raw metrics the (hidden) reward read
          reward.json                closer.reward result on the hidden conditions
          evaluation.json            EvaluationRecord
    """

    root: Path

    @property
    def tree(self) -> Path:
        return self.root / "tree"

    def scoring(self, label: str) -> Path:
        return self.root / label

    @property
    def shared_runs(self) -> Path:
        """Flow runs the two scorings share while the evaluation runs (removed after it)."""
        return self.root / "shared-runs"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics.json"

    @property
    def reward(self) -> Path:
        return self.root / "reward.json"

    @property
    def record(self) -> Path:
        return self.root / "evaluation.json"


# Files in a workspace that belong to the harness, not to the task: never surface, never locked.
# The metered run's control dir is the harness's (under `closer task run` it is moved out of the
# workspace before the agent starts), and results/ is the tools' output: neither is the agent's work.
RUNTIME_PATTERNS = (".closer/*", "results/*", "*__pycache__*", "*.pyc")


def in_surface(rel: str, surface: dict[str, object] | list[str]) -> bool:
    return any(fnmatch.fnmatchcase(rel, pattern) for pattern in surface)


def is_runtime(rel: str) -> bool:
    return any(fnmatch.fnmatchcase(rel, pattern) for pattern in RUNTIME_PATTERNS)


def workspace_files(root: Path) -> list[str]:
    """Workspace-relative POSIX paths of every regular file, runtime files excluded, sorted."""
    out = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            rel = path.relative_to(root).as_posix()
            if not is_runtime(rel):
                out.append(rel)
    return out


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_checksum(root: Path) -> str:
    """SHA-256 over (path, content digest) of every file under root, in path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if "__pycache__" in rel:
            continue
        digest.update(rel.encode() + b"\0" + sha256_file(path).encode() + b"\n")
    return digest.hexdigest()
