"""`closer design calibrate NAME`: measure the golden design and write the tasks' targets.

The golden RTL (the oracle agent's submission) is evaluated on a suite generated without targets:
A through synthesis and the gate-level run, B through the full physical flow (C has the same
golden and the same flow, so it gets B's targets). Each target is the golden's value times
(1 + margin); the weak variant's value (the B start, and on A) is written beside it, so an
author sees how much there is to close. The file is tasks.toml's `targets_file`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tomli_w

from closer.designs.check import (CheckContext, evaluate_submission, gate_failure, numeric, start_evaluations,
                                  tasks_stage)
from closer.errors import InputError
from closer.tasks.models import TargetSpec, TaskKind

DEFAULT_MARGIN = 0.05
# lower-is-better metrics each kind is scored on
METRICS = {
    TaskKind.A: {"area": "synth__design__instance__area__stdcell", "cycles": "closer__sim__cycles"},
    TaskKind.B: {"area": "finish__design__instance__area", "execution_time": "execution_time"},
}


@dataclass(frozen=True)
class Measured:
    kind: TaskKind
    name: str
    metric: str
    golden: float
    weak: float | None


# the weak variant's submission: its RTL copied onto A's skeleton workspace; B starts from it
WEAK_SUBMISSION = {TaskKind.A: "weak-rtl", TaskKind.B: "start"}
SUBMISSIONS = [(kind, s) for kind in METRICS for s in ("oracle", WEAK_SUBMISSION[kind])]  # golden, weak


def measured_as(kind: TaskKind) -> TaskKind:
    """The kind whose evaluation measures `kind`'s targets: C has B's golden and flow."""
    return TaskKind.A if kind is TaskKind.A else TaskKind.B


def measuring_targets() -> dict[TaskKind, list[TargetSpec]]:
    """Weight-0 targets of the metrics to measure: they cost nothing, and the reward library
    reports each term's value (derived ones such as execution_time included)."""
    return {kind: [TargetSpec(name=name, metric=metric, target=1.0, weight=0.0) for name, metric in
                   METRICS[measured_as(kind)].items()] for kind in TaskKind}


def measure(ctx: CheckContext) -> list[Measured]:
    ctx.tasks = ctx.tasks.model_copy(update={"targets": measuring_targets(), "targets_file": None})
    tasks_stage(ctx)
    start_evaluations(ctx, SUBMISSIONS if ctx.tasks.weak is not None else SUBMISSIONS[::2])
    out = []
    for kind, metrics in METRICS.items():
        golden = _metrics(ctx, kind, "oracle", "oracle")
        weak = _metrics(ctx, kind, WEAK_SUBMISSION[kind], "weak") if ctx.tasks.weak is not None else {}
        for name, metric in metrics.items():
            if not isinstance(golden.get(metric), (int, float)) or golden[metric] <= 0:
                raise InputError(f"calibrate {ctx.design.name}: the golden RTL's {kind.value} evaluation "
                                 f"measured no {metric} (is the oracle writing its cycle reports?)")
            out.append(Measured(kind, name, metric, float(golden[metric]), numeric(weak).get(metric)))
    return out


def _metrics(ctx: CheckContext, kind: TaskKind, submission: str, label: str) -> dict:
    rec = evaluate_submission(ctx, kind, submission)
    if rec.failing_gates or not rec.scored:
        raise InputError(f"calibrate {ctx.design.name}: the {label} RTL does not pass the "
                         f"{kind.value} gates: {gate_failure(rec)}"[:600])
    terms = ((rec.reward_result or {}).get("terms") or {}).values()
    return {t["metric"]: t.get("value") for t in terms if isinstance(t, dict) and "metric" in t}


def targets_text(measured: list[Measured], margin: float, design: str) -> str:
    lines = [f"# Targets of {design}'s tasks, written by `closer design calibrate {design}` "
             f"(margin {margin:.0%} over the golden RTL's value).",
             "# Lower is better for each; weight 1. C uses B's targets (same golden, same flow).", ""]
    for kind in (TaskKind.A, TaskKind.B, TaskKind.C):
        for m in (m for m in measured if m.kind is measured_as(kind)):
            weak = f"{m.weak:.6g}" if m.weak is not None else "n/a"
            lines.append(f"# {m.name}: golden {m.golden:.6g}, weak {weak}")
            table = {"name": m.name, "metric": m.metric, "target": round(m.golden * (1 + margin), 3),
                     "weight": 1.0}
            lines += [f"[[targets.{kind.value}]]", tomli_w.dumps(table).strip()]
            lines.append("")
    return "\n".join(lines)


def write_targets(path: Path, text: str) -> Path:
    """The targets file, replaced whole (its old content is kept beside it as .previous)."""
    if path.is_file():
        path.with_name(path.name + ".previous").write_text(path.read_text())
    path.write_text(text)
    return path
