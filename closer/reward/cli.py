"""`closer reward`: score a metrics file against a targets file; `closer reward pareto`.

The command builds everything before printing anything, so an error leaves no partial output.
Exit 0 whenever a reward was computed (also when it is 0); 2 on invalid input.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from closer.reward.compute import compute_reward
from closer.reward.metrics_file import load_metrics
from closer.reward.models import RewardResult, result_json
from closer.reward.pareto import ParetoSet, load_result, pareto_set
from closer.reward.targets import load_targets


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.6g}"


def _render(*tables: Table) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=140, no_color=True, highlight=False)
    for table in tables:
        console.print(table)
    return buffer.getvalue()


def render_result(result: RewardResult) -> str:
    gates = Table(title="gates", title_justify="left")
    for column in ("gate", "status", "observed", "reason"):
        gates.add_column(column)
    for name, status in result.gates.items():
        detail = result.gate_details[name]
        gates.add_row(name, status.value, detail.observed, detail.reason)
    terms = Table(title="terms", title_justify="left")
    for column in ("name", "metric", "value", "target", "weight", "penalty", "met"):
        terms.add_column(column, justify="right" if column in ("value", "target", "weight", "penalty") else "left")
    for name, term in result.terms.items():
        met = "—" if term.met is None else ("yes" if term.met else "no")
        terms.add_row(name, term.metric, _num(term.value), _num(term.target), _num(term.weight),
                      _num(term.penalty), met)
    text = _render(gates, terms)
    for name, derived in result.derived.items():
        text += f"derived {name} = {derived.value:.6g} {derived.unit} ({derived.formula}"
        text += f"; {derived.note})\n" if derived.note else ")\n"
    run = result.provenance.run
    platform = run.get("run__flow__platform", "?")
    revision = run.get("run__closer__design_revision", "?")
    corner = run.get("run__closer__pdk_corner", "?")
    text += (f"provenance: platform {platform}, design revision {revision}, corner {corner}, "
             f"closer {result.provenance.closer_version}\n")
    text += f"gate G = {result.gate}   reward R = {result.reward:.6g}\n"
    return text


def render_pareto(front: ParetoSet) -> str:
    table = Table(title="results (lower is better in every objective)", title_justify="left")
    table.add_column("result")
    table.add_column("set")
    table.add_column("reward", justify="right")
    for name, metric in front.objectives.items():
        table.add_column(f"{name}\n{metric}", justify="right")
    groups = (("pareto", front.front), ("dominated", front.dominated),
              ("infeasible", front.infeasible))
    for label, rows in groups:
        for row in rows:
            table.add_row(row.label, label, _num(row.reward),
                          *(_num(row.values[n]) for n in front.objectives))
    return _render(table) + f"Pareto set: {len(front.front)} of {len(front.rows)} results\n"


@click.group(invoke_without_command=True)
@click.option("--metrics", "metrics_paths", multiple=True, type=click.Path(path_type=Path),
              help="ORFS metadata.json, ORFS per-stage log directory or Closer metrics file "
                   "(repeat to merge several).")
@click.option("--targets", "targets_path", type=click.Path(path_type=Path),
              help="Targets TOML ([gates] required = [...], [[targets]] ...).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.pass_context
def reward_group(ctx: click.Context, metrics_paths: tuple[Path, ...], targets_path: Path | None,
                 as_json: bool) -> None:
    """Gated log-penalty reward R = G · exp(−Σ w·max(0, log(m/m*))) from ORFS metrics."""
    if ctx.invoked_subcommand is not None:
        if metrics_paths or targets_path or as_json:
            raise click.UsageError("put --metrics/--targets/--json after the subcommand name")
        return
    if not metrics_paths or targets_path is None:
        raise click.UsageError("closer reward needs --metrics PATH and --targets PATH")
    result = compute_reward(load_metrics(metrics_paths), load_targets(targets_path))
    click.echo(result_json(result) if as_json else render_result(result))


@reward_group.command("batch")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--targets", "targets_path", type=click.Path(path_type=Path), required=True,
              help="Targets TOML to score every input against.")
@click.option("--keep-going", is_flag=True,
              help="Write a bad input as a line {input, error} in its place instead of stopping.")
def batch_command(path: Path, targets_path: Path, keep_going: bool) -> None:
    """Score a directory of metrics files (*.json) or a JSONL of metric records in one call.

    Prints one JSON line per input, in input order: `input` (the file or file:line) and the
    `reward`, `gate`, `penalty_total` and `terms` of `closer reward --json`.
    """
    from closer.reward.batch import score_inputs

    lines = score_inputs(path, load_targets(targets_path), keep_going)
    click.echo((b"\n".join(lines) + b"\n").decode() if lines else "", nl=False)


@reward_group.command("pareto")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--targets", "targets_path", type=click.Path(path_type=Path),
              help="Score FILES (metrics paths) against these targets first; without it FILES "
                   "are `closer reward --json` outputs.")
@click.option("--json", "as_json", is_flag=True, help="Print the Pareto set as JSON.")
def pareto_command(files: tuple[Path, ...], targets_path: Path | None, as_json: bool) -> None:
    """Print the Pareto set of several results over their target metrics, with raw values."""
    if targets_path is not None:
        targets = load_targets(targets_path)
        results = [(str(f), compute_reward(load_metrics(f), targets)) for f in files]
    else:
        results = [(str(f), load_result(f)) for f in files]
    front = pareto_set(results)
    click.echo(json.dumps(front.as_dict(), indent=2) if as_json else render_pareto(front))
