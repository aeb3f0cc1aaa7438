"""`closer trajectory summarize|plot|replay|schemas`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from closer.budget import ToolClass
from closer.clitypes import POSITIVE, REWARD
from closer.metered.paths import WorkspacePaths
from closer.trajectory.measures import TrajectorySummary

_PATH = click.Path(exists=True, path_type=Path)


def _budget_options(f):
    for option in reversed([
        click.option("--tier", default=None, help="take B and windows from this tier instead of run.json"),
        click.option("--wall-budget-s", type=POSITIVE, default=None, help="B of the wall-clock axis (s)"),
        click.option("--cost-budget", type=POSITIVE, default=None, help="B of the weighted-cost axis (units)"),
        click.option("--window-calls", type=click.IntRange(min=1), default=None, help="stagnation window W (calls)"),
        click.option("--window-cost", type=POSITIVE, default=None, help="stagnation window C (cost units)"),
        click.option("--threshold", "thresholds", type=REWARD, multiple=True, help="report time to this reward"),
        click.option("--kind", type=click.Choice(["A", "B", "C"]), default=None,
                     help="count only the calls that evaluate this task kind's full gate set "
                          "(needed for trajectories recorded before partial_reward existed)"),
    ]):
        f = option(f)
    return f


def _summary(path: Path, tier, wall_budget_s, cost_budget, window_calls, window_cost, thresholds,
             kind) -> TrajectorySummary:
    from closer.trajectory.summary import load_run_header, resolve_params, summarize_trajectory, trajectory_files

    trajectory, run_json = trajectory_files(path)
    params = resolve_params(run_json, tier, wall_budget_s, cost_budget, window_calls, window_cost, list(thresholds),
                            _full_gate_tools(kind))
    run_id = load_run_header(run_json).run_id if run_json is not None else None
    return summarize_trajectory(trajectory, params, run_id)


def _full_gate_tools(kind: str | None) -> dict[ToolClass, list[str]] | None:
    if kind is None:
        return None
    from closer.tasks.estimator import full_gate_tools  # the task models: imported only when asked for

    return full_gate_tools(kind)


@click.group("trajectory")
def trajectory_group() -> None:
    """Measures, plots and replay of metered-tool trajectories."""


@trajectory_group.command("summarize")
@click.argument("path", type=_PATH)
@_budget_options
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
def summarize_command(path: Path, as_json: bool, **opts) -> None:
    """Final/best reward, AUC over wall clock and weighted cost, milestones, stagnation, rollbacks.

    PATH is a trajectory.jsonl, a workspace's .closer/ folder, or the workspace.
    """
    summary = _summary(path, **opts)
    if as_json:
        click.echo(summary.model_dump_json(indent=2))
        return
    _print_summary(summary)


def _print_summary(s: TrajectorySummary) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False)
    for line in s.bad_lines:
        console.print(f"[yellow]warning:[/] {escape(line)}")
    table = Table(title=escape(f"trajectory {s.path} (run {s.run_id})"), show_header=False)
    rows = [
        ("records", str(s.records)),
        ("B (wall s / cost units)", f"{s.params.wall_s:g} / {s.params.cost_units:g}  [{s.params.source}]"),
        ("final / best reward (full-gate calls)", f"{s.final_reward} / {s.best_reward}  "
                                                 f"[{s.full_gate_calls} full-gate calls]"),
        ("best partial estimate (informational)", f"{s.best_partial_reward}"),
        ("AUC wall / AUC cost", f"{s.auc_wall:.6f} / {s.auc_cost:.6f}"),
        ("elapsed s / cost units", f"{s.elapsed_s:.1f} / {s.cost_units:g}"),
        ("calls by tool", ", ".join(f"{k} {v}" for k, v in s.calls_by_tool.items())),
        ("outcomes", ", ".join(f"{k} {v}" for k, v in s.outcomes.items() if v)),
        ("pnr calls (fraction)", f"{s.pnr_calls} ({'-' if s.pnr_fraction is None else f'{s.pnr_fraction:.3f}'})"),
        ("first feasible", _milestone(s.first_feasible)),
    ]
    rows += [(f"time to reward >= {h.threshold:g}", _milestone(h.reached)) for h in s.thresholds]
    recovered = sum(1 for e in s.stagnation if e.recovered)
    rows.append(("stagnation episodes (recovered)", f"{len(s.stagnation)} ({recovered})"))
    rows.append(("cross-stage rollbacks (with gain)", f"{len(s.rollbacks)} ({sum(1 for r in s.rollbacks if r.gain > 0)})"))
    for k, v in rows:
        table.add_row(k, escape(v))
    console.print(table)
    for e in s.stagnation:
        console.print(escape(f"  stagnation from call {e.start_seq} (detected {e.detected_seq}) to {e.end_seq}: "
                      f"{e.calls} calls, {e.cost_units:g} units, recovered={e.recovered}, gain={e.gain}, "
                      f"first edit after: {_layers(e.first_layers_after)}"))
    for r in s.rollbacks:
        console.print(escape(f"  rollback at call {r.seq}: edited {_layers(r.layers)} after {r.after_feedback_from.value} "
                      f"feedback; best {r.best_before} -> {r.best_after} (gain {r.gain:g})"))


def _milestone(m) -> str:
    return "never" if m is None else f"call {m.seq}, {m.elapsed_s:.1f} s, {m.cost_units:g} units"


def _layers(layers) -> str:
    return "-" if not layers else "+".join(layer.value for layer in layers)


@trajectory_group.command("plot")
@click.argument("path", type=_PATH)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="PNG to write")
@_budget_options
def plot_command(path: Path, out: Path, **opts) -> None:
    """Step plot of the best-so-far reward over wall clock and weighted cost."""
    from closer.trajectory.plot import plot_summary

    summary = _summary(path, **opts)
    click.echo(f"wrote {plot_summary(summary, out)}")


@trajectory_group.command("replay")
@click.argument("run", type=_PATH)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def replay_command(ctx: click.Context, run: Path, as_json: bool) -> None:
    """Re-run every recorded call on its snapshot; exit 1 if any public result differs."""
    from closer.trajectory.replay import ReplayStatus, replay_run

    results = replay_run(WorkspacePaths.locate(run))
    if as_json:
        click.echo(json.dumps([r.model_dump(mode="json") for r in results], indent=2))
    else:
        for r in results:
            tool = r.tool.value if r.tool else "-"
            click.echo(f"call {r.seq:4d} {tool:6s} {r.status.value:10s} {r.note}")
            for d in r.differences:
                click.echo(f"      {d}")
        counts = {s: sum(1 for r in results if r.status is s) for s in ReplayStatus}
        click.echo(", ".join(f"{n} {s.value}" for s, n in counts.items()))
    if any(r.status in (ReplayStatus.MISMATCH, ReplayStatus.UNREADABLE) for r in results):
        ctx.exit(1)


@trajectory_group.command("rescore")
@click.argument("run", type=_PATH)
@click.option("--jobs", type=click.IntRange(min=1), default=2, show_default=True, help="evaluations in parallel")
@click.option("--calls", "calls", default=None, help="only the snapshots of these tool classes, e.g. verify,pnr")
@click.option("--last", type=click.IntRange(min=1), default=None, help="only the last K selected calls")
@click.option("--suite", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="the suite the trials ran from (for records without paths.task)")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="evaluation cache shared by trials (default: <trial>/rescore-cache)")
def rescore_command(run: Path, jobs: int, calls: str | None, last: int | None, suite: Path | None,
                    cache: Path | None) -> None:
    """Score each distinct snapshot of the trial(s) in RUN with the pristine evaluator on the hidden
    conditions; write the hidden best-so-far curve beside the public one to <trial>/rescore.json.

    RUN is a trial folder (with record.json) or a runs root.
    """
    from closer.tasks.rescore import Selection, find_trials, rescore_trial

    selection = Selection(calls=_tool_list(calls), last=last)
    for trial in find_trials(run):
        rescore_trial(trial, selection, jobs, suite=suite, cache=cache, progress=click.echo)


def _tool_list(text: str | None) -> list[ToolClass] | None:
    if text is None:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    known = [t.value for t in ToolClass]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise click.BadParameter(f"unknown tool class(es) {unknown or [text]}; known: {', '.join(known)}",
                                 param_hint="--calls")
    return [ToolClass(n) for n in names]


@trajectory_group.command("schemas")
def schemas_command() -> None:
    """Regenerate the JSON Schemas of the trajectory files from the models."""
    from closer.trajectory.record import export_schemas

    for path in export_schemas():
        click.echo(f"wrote {path}")
