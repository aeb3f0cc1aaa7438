"""`closer-tool`: the one command an agent uses inside a task workspace.

    closer-tool sim|synth|pnr|verify [ARGS...]   run the metered tool class (ARGS go to `{args}`)
    closer-tool status [--json]                  budget left; spends nothing

The run starts on the first call in a workspace whose run nobody started (`.closer/run.json`
absent): its wall clock counts from that call.

Exit codes: 0 ok, 1 tool error, 10 refused (class budget spent), 11 refused (wall clock spent),
12 tool timed out, 13 infrastructure error, 2 bad usage or configuration.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from pathlib import Path

import click

from closer.budget import ToolClass
from closer.cli import run_cli
from closer.metered.client import format_status
from closer.metered.front import metered_call
from closer.metered.ledger import status, workspace_lock
from closer.metered.run import start_run
from closer.metered.paths import WorkspacePaths
from closer.trajectory.record import RunInfo


def _workspace(ctx: click.Context) -> WorkspacePaths:
    ws = WorkspacePaths.locate(Path(ctx.obj or Path.cwd()))
    if (info := start_if_fresh(ws)) is not None:
        click.echo(f"closer-tool: run {info.run_id} started now (the first call on this workspace); "
                   f"the wall clock counts from here", err=True)
    return ws


def start_if_fresh(ws: WorkspacePaths) -> RunInfo | None:
    """Start the run of a workspace nobody started (a Harbor container has no harness to run
    `closer-tool start`): the first call starts it. Under the call lock, so two first calls start
    one run. Returns the new run's header, or None when the run had started."""
    ws.check_layout()
    if not ws.is_valid() or ws.run_info.exists() or ws.run_info.is_symlink():
        return None
    with workspace_lock(ws):
        if ws.run_info.exists() or ws.run_info.is_symlink():
            return None
        return start_run(ws)


@click.group("closer-tool")
@click.option("--workspace", "-w", type=click.Path(file_okay=False, path_type=Path), envvar="CLOSER_WORKSPACE",
              help="task workspace (default: the one containing the current folder)")
@click.pass_context
def tool_group(ctx: click.Context, workspace: Path | None) -> None:
    """Metered hardware-design tools: every call is counted, limited and recorded."""
    ctx.obj = workspace


def _tool_command(tool: ToolClass) -> click.Command:
    @click.command(tool.value, context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    @click.pass_context
    def command(ctx: click.Context, args: tuple[str, ...]) -> None:
        result = metered_call(_workspace(ctx), tool, list(args))
        click.echo(result.feedback)
        ctx.exit(result.exit_code)

    command.help = f"Run the metered `{tool.value}` step on the current workspace (one {tool.value} call)."
    return command


for _tool in ToolClass:
    tool_group.add_command(_tool_command(_tool))


@tool_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.pass_context
def status_command(ctx: click.Context, as_json: bool) -> None:
    """Show the budget left (spends nothing)."""
    st = dataclasses.asdict(status(_workspace(ctx)))
    click.echo(json.dumps(st, indent=2) if as_json else format_status(st))


@tool_group.command("start", hidden=True)
@click.argument("workspace", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--run-id", default=None)
@click.option("--started-at", type=click.DateTime(formats=["%Y-%m-%dT%H:%M:%S%z"]), default=None)
def start_command(workspace: Path, run_id: str | None, started_at: datetime | None) -> None:
    """(harness) Start the run of a prepared workspace: budget, baseline snapshot, provenance."""
    info = start_run(WorkspacePaths(workspace.resolve()), run_id=run_id, started_at=started_at)
    click.echo(f"run {info.run_id} started at {info.started_at.isoformat()} (tier {info.budget.tier})")


def main() -> None:
    run_cli(tool_group, "closer-tool")
