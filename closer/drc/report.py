"""`closer drc report`: success and error rates, pass@N curves, selection accuracy against
Oracle@N and runtime, from saved `results.json` and `selection.json` files. Every row of a
machinery-baseline pool or command is labeled as such."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from closer.drc.evaluate import Outcome
from closer.drc.runs import RunResults
from closer.drc.select import SelectionRun
from closer.errors import InputError
from closer.inputs import load_json_model

MACHINERY = "machinery baseline"


class RunRow(BaseModel):
    run: str
    pool: str
    n: int
    problems: int
    success: float
    wrong: float
    error: float
    timeout: float
    oracle_at_n: float
    error_oracle_at_n: float
    pass_at: dict[int, float]
    wall_s: float


class SelectionRow(BaseModel):
    selection: str
    pool: str
    commands: str
    selector: str
    n: int
    problems: int
    accuracy: float
    oracle_at_n: float
    tests_mean: float
    judge_calls_mean: float
    wall_s_mean: float


def _label(baseline: str) -> str:
    return f"{baseline} ({MACHINERY})" if baseline else "candidates"


def _commands(run: SelectionRun) -> str:
    scripted = "closer.drc.baselines" in run.testgen and "closer.drc.baselines" in run.judge
    return f"scripted prober + scripted judge ({MACHINERY})" if scripted else f"{run.testgen} / {run.judge}"


def run_row(folder: Path) -> RunRow:
    run = load_json_model(folder / "results.json", RunResults, "run results")
    if not run.problems:
        raise InputError(f"{folder / 'results.json'}: no problems to report")
    n = min(p.n for p in run.problems)
    count = len(run.problems)
    return RunRow(run=folder.name, pool=_label(run.baseline), n=n, problems=count,
                  success=run.rate(Outcome.SUCCESS), wrong=run.rate(Outcome.WRONG), error=run.rate(Outcome.ERROR),
                  timeout=run.rate(Outcome.TIMEOUT),
                  oracle_at_n=sum(p.pass_at[n] for p in run.problems) / count,
                  error_oracle_at_n=sum(p.error_at[n] for p in run.problems) / count,
                  pass_at={k: sum(p.pass_at[k] for p in run.problems) / count for k in range(1, n + 1)},
                  wall_s=run.wall_s)


def selection_rows(folder: Path) -> list[SelectionRow]:
    run = load_json_model(folder / "selection.json", SelectionRun, "selection record")
    rows = []
    for selector in dict.fromkeys(r.selector for r in run.records):
        records = [r for r in run.records if r.selector == selector]
        count = len(records)
        rows.append(SelectionRow(
            selection=folder.name, pool=_label(run.baseline), commands=_commands(run), selector=selector,
            n=run.n, problems=count, accuracy=run.accuracy(selector),
            oracle_at_n=sum(r.oracle_success for r in records) / count,
            tests_mean=sum(r.tests for r in records) / count,
            judge_calls_mean=sum(r.judge_calls for r in records) / count,
            wall_s_mean=sum(r.wall_s for r in records) / count))
    return rows


def write_report(runs: list[Path], selections: list[Path], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    run_rows = [run_row(f) for f in runs]
    sel_rows = [row for f in selections for row in selection_rows(f)]
    (out / "report.json").write_text(json.dumps(
        {"runs": [r.model_dump() for r in run_rows], "selections": [r.model_dump() for r in sel_rows]}, indent=2) + "\n")
    _plot_pass_at(run_rows, out / "pass_at_n.png")
    lines = ["# Rule2DRC report", "", f"Pools and commands marked *{MACHINERY}* are harness machinery, not models.", "",
             "## Candidate pools", "",
             "| run | pool | N | problems | success | wrong | error | timeout | Oracle@N | error Oracle@N | wall s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.run} | {r.pool} | {r.n} | {r.problems} | {r.success:.3f} | {r.wrong:.3f} | {r.error:.3f} | "
              f"{r.timeout:.3f} | {r.oracle_at_n:.3f} | {r.error_oracle_at_n:.3f} | {r.wall_s:.0f} |" for r in run_rows]
    lines += ["", "![pass@k](pass_at_n.png)", ""]
    if sel_rows:
        lines += ["## Best-of-N selection", "",
                  "| selection | pool | test generator / judge | selector | N | problems | accuracy | Oracle@N | "
                  "accuracy / Oracle@N | tests | judge calls | s per problem |",
                  "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {r.selection} | {r.pool} | {r.commands} | {r.selector} | {r.n} | {r.problems} | {r.accuracy:.3f} | "
                  f"{r.oracle_at_n:.3f} | {r.accuracy / r.oracle_at_n if r.oracle_at_n else 0:.3f} | {r.tests_mean:.1f} | "
                  f"{r.judge_calls_mean:.1f} | {r.wall_s_mean:.1f} |" for r in sel_rows]
    page = out / "report.md"
    page.write_text("\n".join(lines) + "\n")
    return page


def _plot_pass_at(rows: list[RunRow], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    for row in rows:
        ks = sorted(row.pass_at)
        axes.plot(ks, [row.pass_at[k] for k in ks], marker="o", markersize=3, label=f"{row.run}: {row.pool}")
    axes.set_xlabel("k")
    axes.set_ylabel("pass@k (unbiased)")
    axes.set_ylim(-0.02, 1.02)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
