"""The whole loop on the default design: generate -> run (`sweep`, evaluated) -> rescore -> report.

    python -m closer.tasks.demo [--out DIR] [--task gcd-B-low]

Prints where the report is. The sweep is a machinery baseline; its record is labeled as such.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from closer.inputs import load_json_model
from closer.agents import resolve_agent
from closer.budget import ToolClass
from closer.paths import repo_paths
from closer.report.build import build_report
from closer.tasks.evaluate import EvaluationRecord
from closer.tasks.generate import generate_suite
from closer.tasks.paths import SuitePaths
from closer.tasks.rescore import Selection, Trial, rescore_trial
from closer.tasks.runner import run_trials


@click.command()
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Demo folder (default build/demo-tasks in the checkout; replaced).")
@click.option("--design", default="gcd", show_default=True)
@click.option("--task", "task_id", default=None, help="Task the sweep runs on (default DESIGN-B-low).")
def main(out: Path | None, design: str, task_id: str | None) -> None:
    out = (out or repo_paths().root / "build" / "demo-tasks").resolve()
    shutil.rmtree(out, ignore_errors=True)
    manifest = generate_suite(design, out / "suite", budgets=["low"])
    click.echo(f"generate: {len(manifest.tasks)} tasks (suite {manifest.suite_version}) in {out / 'suite'}")
    task = SuitePaths(out / "suite").task(task_id or f"{design}-B-low")
    [record] = run_trials(task.root, resolve_agent("sweep"), 1, out / "runs")
    click.echo(f"run: {record.task_id} sweep (machinery): state {record.run_state}, calls {record.calls_by_tool}, "
               f"feasible {record.is_feasible}, reward {record.reward}, AUC wall (public) {record.auc_wall_public}, "
               f"AUC cost (public) {record.auc_cost_public}, public-private gap {record.public_private_gap}")
    # the hidden curve of the verify/pnr snapshots (the last one is the trial's own evaluation)
    rescore = rescore_trial(Trial(Path(record.paths["trial"]), record),
                            Selection(calls=[ToolClass.VERIFY, ToolClass.PNR], last=None), jobs=2, progress=click.echo)
    click.echo(f"rescore: AUC wall public {rescore.auc_wall_public:.4f} / hidden {rescore.auc_wall_hidden:.4f}, "
               f"best public {rescore.best_public_reward} / hidden {rescore.best_hidden_reward}")
    # the trial's own evaluation (pristine tree, hidden conditions, in its sandbox)
    evaluation = load_json_model(Path(record.paths["evaluation"]), EvaluationRecord, "evaluation record")
    click.echo(f"evaluate: accepted {evaluation.accepted}, scored {evaluation.scored}, reward {evaluation.reward}, "
               f"gates {evaluation.gates}")
    if evaluation.verifier_error:
        click.echo(f"  {evaluation.verifier_error}")
    report = build_report(out / "runs", out / "report")
    click.echo(f"report: {report} (HTML {report.parent / 'index.html'})")


if __name__ == "__main__":
    main()
