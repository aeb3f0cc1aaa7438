"""The matrix's trials: the plain ones from the spec, and the A+B compositions that follow from
each finished A trial. A job is plain data (it crosses to a Dask worker)."""

from __future__ import annotations

import heapq
from itertools import product
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from closer.budget import BudgetOverride, ToolClass, resolve_budget
from closer.matrix.paths import MatrixPaths
from closer.matrix.spec import AgentEntry, MatrixSpec
from closer.metered.config import load_tool_config
from closer.tasks.models import TaskKind
from closer.tasks.paths import TaskPaths
from closer.tasks.runner import RunRecord
from closer.trajectory.reader import TrajectoryReader

COMPOSED = "AB"


class TrialJob(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    key: str
    role: str  # "trial" | "ab"
    design: str
    kind: str
    budget_tier: str
    agent: AgentEntry
    agent_label: str
    trial: int
    task_dir: Path
    runs: Path
    suite_version: str
    start_rtl: Path | None = None
    budget_file: Path | None = None
    composed_from: str | None = None
    a_task: Path | None = None  # C trials of a composing matrix: the A task their checkpoint is found on
    layout_points: bool = False  # B, C and A+B trials of a composing matrix: score start and first feasible

    @property
    def trial_dir(self) -> Path:
        return self.runs / TaskPaths(self.task_dir).root.name / self.agent_label / f"trial-{self.trial}"


def trial_key(task_id: str, label: str, trial: int) -> str:
    return f"{task_id}/{label}/trial-{trial}"


def composed_key(design: str, tier: str, label: str, trial: int) -> str:
    return f"{COMPOSED}:{design}-{tier}/{label}/trial-{trial}"


def submission_priority(job: TrialJob) -> int:
    """Higher is handed to a worker first (`JobQueue`): every cell's trial 1 before any cell's
    trial 2, and so on. A repeat of a deterministic baseline then finds the first trial's flows
    in the shared flow cache instead of holding a worker while it waits for the same flow running
    beside it (closer.flow.reuse.FlowCache.first_run)."""
    return -job.trial


class JobQueue:
    """The jobs not yet handed to a worker, highest `submission_priority` first, then in the order
    they were added."""

    def __init__(self, jobs: list[TrialJob]) -> None:
        self._heap: list[tuple[int, int, TrialJob]] = []
        self._added = 0
        for job in jobs:
            self.push(job)

    def push(self, job: TrialJob) -> None:
        heapq.heappush(self._heap, (-submission_priority(job), self._added, job))
        self._added += 1

    def pop(self) -> TrialJob:
        return heapq.heappop(self._heap)[2]

    def __len__(self) -> int:
        return len(self._heap)


def plain_jobs(spec: MatrixSpec, tasks: dict[tuple[str, str, str], Path], suite_versions: dict[str, str],
               paths: MatrixPaths) -> list[TrialJob]:
    """Every trial x design x kind x budget x agent, trial-major (`submission_priority`); `tasks`
    maps (design, kind, tier) -> task folder."""
    jobs = []
    for trial, design, kind, tier, entry in product(range(1, spec.trials + 1), spec.designs, spec.kinds,
                                                    spec.budgets, spec.agents):
        task_dir = tasks[(design, kind.value, tier)]
        label = entry.resolve().label
        jobs.append(TrialJob(
            key=trial_key(task_dir.name, label, trial), role="trial", design=design, kind=kind.value,
            budget_tier=tier, agent=entry, agent_label=label, trial=trial, task_dir=task_dir, runs=paths.runs,
            suite_version=suite_versions[design],
            a_task=tasks[(design, TaskKind.A.value, tier)] if spec.compose and kind is TaskKind.C else None,
            layout_points=spec.compose and kind in (TaskKind.B, TaskKind.C)))
    return jobs


def remaining_budget(c_task: Path, a_record: RunRecord) -> BudgetOverride:
    """C's budget minus what the A trial spent: calls per class, wall clock and cost units (from the
    A trial's trajectory, the metered layer's own accounting)."""
    c_budget = resolve_budget(load_tool_config(TaskPaths(c_task).workspace / ".closer" / "tools.toml").budget)
    trajectory = Path(a_record.paths.get("trajectory", ""))
    calls = list(TrajectoryReader(trajectory)) if trajectory.is_file() else []
    used = {tool: sum(1 for c in calls if c.tool is tool and c.cost.counted) for tool in ToolClass}
    spent_units = sum(c.cost.units for c in calls)
    caps = {tool.value: None if c_budget.caps.get(tool) is None else max(0, c_budget.caps[tool] - used[tool])
            for tool in ToolClass}
    return BudgetOverride(
        tier=a_record.budget_tier, **{k: v for k, v in caps.items() if v is not None},
        wall_s=max(1.0, c_budget.wall_s - a_record.agent_wall_s),
        cost_units=max(1.0, c_budget.cost_units - spent_units))


def composed_job(a_job: TrialJob, a_record: RunRecord, b_task: Path, c_task: Path, paths: MatrixPaths) -> TrialJob:
    """The B trial that starts from the A trial's final RTL with the rest of C's budget."""
    import tomli_w

    key = composed_key(a_job.design, a_job.budget_tier, a_job.agent_label, a_job.trial)
    budget = remaining_budget(c_task, a_record)
    budget_file = paths.budget(key)
    budget_file.parent.mkdir(parents=True, exist_ok=True)
    if not budget_file.exists():  # a resumed composition keeps the budget it was first given
        budget_file.write_text(tomli_w.dumps({"budget": budget.model_dump(exclude_none=True, mode="json",
                                                                          exclude={"weights", "stagnation"})}))
    return a_job.model_copy(update={
        "key": key, "role": "ab", "kind": TaskKind.B.value, "task_dir": b_task, "runs": paths.runs_ab,
        "start_rtl": Path(a_record.paths["workspace"]) / "rtl", "budget_file": budget_file,
        "composed_from": a_job.key, "a_task": None, "layout_points": True})
