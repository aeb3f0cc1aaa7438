"""`closer task generate|run|export-harbor` and `closer evaluate`: options -> models -> library."""

from __future__ import annotations

import json
from pathlib import Path

import click

from closer.clitypes import POSITIVE

from closer.tasks.models import BUDGET_TIERS, TaskKind


def _csv(values: str | None, allowed: list[str], what: str) -> list[str] | None:
    if values is None:
        return None
    items = [v.strip() for v in values.split(",") if v.strip()]
    unknown = [v for v in items if v not in allowed]
    if unknown:
        raise click.BadParameter(f"unknown {what} {unknown}; known: {', '.join(allowed)}")
    return items


@click.group("task")
def task_group() -> None:
    """Stage-paired tasks: generate, run an agent, export to Harbor."""


@task_group.command("generate")
@click.argument("design")
@click.option("--kinds", default=None, help="Comma list of A,B,C (default all).")
@click.option("--budgets", default=None, help="Comma list of low,medium,high (default all).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--unchecked", is_flag=True,
              help="Generate although the design's current content has no passing `closer design check` "
                   "(suite.json records 'unchecked').")
@click.option("--replace", is_flag=True, help="Rewrite tasks of OUT whose content changed (else refused).")
def generate_command(design: str, kinds: str | None, budgets: str | None, out: Path, unchecked: bool,
                     replace: bool) -> None:
    """Generate the A/B/C x budget tasks of DESIGN (a name on the design search path or a folder)
    into OUT (tasks/, hidden/, suite.json). DESIGN must have passed `closer design check`."""
    from closer.tasks.generate import generate_suite

    kind_list = _csv(kinds, [k.value for k in TaskKind], "kind")
    manifest = generate_suite(design, out, [TaskKind(k) for k in kind_list] if kind_list else None,
                              _csv(budgets, list(BUDGET_TIERS), "budget"), require_check=not unchecked,
                              replace=replace)
    for entry in manifest.tasks:
        click.echo(f"{entry.task_id:<20} {entry.checksum[:16]}  {out / entry.path}")
    click.echo(f"suite {manifest.suite_version}: {len(manifest.tasks)} tasks; manifest {out / 'suite.json'}")


@click.command("evaluate")
@click.argument("workspace", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--task", "task_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Evaluation folder (default: WORKSPACE/../evaluation).")
@click.option("--json", "as_json", is_flag=True)
def evaluate_command(workspace: Path, task_dir: Path, out: Path | None, as_json: bool) -> None:
    """Score WORKSPACE on a pristine copy of TASK under the hidden conditions."""
    from closer.tasks.evaluate import evaluate

    out = out or workspace.resolve().parent / "evaluation"
    record = evaluate(workspace, task_dir, out)
    if as_json:
        click.echo(record.model_dump_json(indent=2))
        return
    click.echo(f"task {record.task_id}: accepted {record.accepted}, scored {record.scored}, "
               f"reward {record.reward}, gates {json.dumps(record.gates)}")
    if record.verifier_error:
        click.echo(f"  {record.verifier_error}")
    if record.refused_files:
        from closer.tasks.intake import refused_text

        click.echo(f"  refused (not taken): {refused_text(record.refused_files)}")
    if record.failing_gates:
        click.echo(f"  failing gates: {', '.join(record.failing_gates)}")
    click.echo(f"record {out / 'evaluation.json'}")


@task_group.command("run")
@click.argument("task_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--agent", required=True, help="null | oracle | sweep | a command line with {workspace} and "
                                             "{instructions} placeholders")
@click.option("--label", default=None, help="Agent label for a command agent (default: the program name).")
@click.option("--backend", default=None, help="Backend label of a command agent (e.g. the LLM server).")
@click.option("--model", default=None, help="Model label of a command agent.")
@click.option("--quantization", default=None, help="Quantization label of a command agent.")
@click.option("--trials", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--trial", "only", default=None, type=click.IntRange(min=1),
              help="Run only trial N (its folder trial-N), instead of trials 1..--trials.")
@click.option("--start-rtl", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Start from the RTL files of this folder instead of the task's start (e.g. an A trial's "
                   "final rtl/; recorded in the record's `start`).")
@click.option("--budget", "budget_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A TOML file whose [budget] table replaces the task's (closer.budget.BudgetOverride).")
@click.option("--wall-s", type=POSITIVE, default=None, help="Override the tier's wall clock (seconds).")
@click.option("--network", multiple=True, metavar="HOST:PORT",
              help="An endpoint the agent's sandbox may reach (e.g. its model's API); repeatable. "
                   "Default: no network.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--resume", is_flag=True, help="Continue an earlier run into OUT: recorded trials are kept as they "
              "are, a killed trial is finished from where its progress.json says it stopped "
              "(docs/run-states.md#killed-runs-and---resume), missing trials are run.")
def run_command(task_dir: Path, agent: str, label: str | None, backend: str | None, model: str | None,
                quantization: str | None, trials: int, only: int | None, start_rtl: Path | None,
                budget_file: Path | None, wall_s: float | None, network: tuple[str, ...], out: Path,
                resume: bool) -> None:
    """Run AGENT on TASK_DIR for N trials, each in its own sandbox (docs/security.md); one JSON
    record per trial and a Markdown summary in OUT."""
    from closer.agents import resolve_agent
    from closer.tasks.runner import TrialStart, load_budget_override, run_trials

    spec = resolve_agent(agent, label=label, backend=backend, model=model, quantization=quantization,
                         network=list(network))
    start = TrialStart(rtl=start_rtl.resolve() if start_rtl else None,
                       budget=load_budget_override(budget_file) if budget_file else None)
    records = run_trials(task_dir, spec, trials, out, wall_s=wall_s, resume=resume, only=only, start=start)
    from closer.tasks.runner import feasible_label

    for rec in records:
        gates = f"; failing gates {', '.join(rec.failing_gates)}" if rec.failing_gates else ""
        resumed = f", resumed from {rec.resumed_from}" if rec.resumed_from else ""
        click.echo(f"{rec.task_id} trial {rec.trial} [{rec.agent}] state {rec.run_state}{resumed}, feasible "
                   f"{feasible_label(rec)}: reward {rec.reward}{gates} ({rec.run_state_reason})")
    feasible = sum(1 for rec in records if rec.is_feasible)
    click.echo(f"feasible: {feasible} of {len(records)} trials")
    click.echo(f"records in {out}")


@task_group.command("export-harbor")
@click.argument("task_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
def export_harbor_command(task_dir: Path, out: Path) -> None:
    """Write TASK_DIR as a Harbor task folder in OUT (validated against the task.toml schema)."""
    from closer.tasks.harbor import export_harbor

    written = export_harbor(task_dir, out)
    click.echo(f"harbor task {written}")
