"""The metered public tools of a task workspace (`.closer/tools.toml` runs these):

    python -m closer.tasks.public_check sim|synth|verify --workspace W --results R --metrics M

* sim:    the public functional tests (tests/, public seeds and configs) on the workspace RTL
* synth:  `closer flow` to STA on the workspace RTL and SDC (area, power, timing)
* verify: sim, synth and a gate-level run of the synthesized netlist, all on public conditions

Metrics go to M (JSON); a summary goes to stdout. Failing tests are feedback (exit 0); a tool or
build failure exits 1. Nothing hidden is read: only the workspace's task.json and tests/.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from closer import __version__
from closer.errors import CloserError
from closer.tasks import checks
from closer.tasks.models import TaskConfig


def _task(workspace: Path) -> TaskConfig:
    path = workspace / "task.json"
    try:
        return TaskConfig.model_validate_json(path.read_text())
    except FileNotFoundError as exc:
        raise CloserError(f"{path} does not exist: not a task workspace") from exc


def public_sim(ws: Path, task: TaskConfig, results: Path) -> tuple[dict, list[str]]:
    sources = [ws / rel for rel in task.rtl]
    func = checks.run_functional(sources, task.top, ws / "tests", task.test_module, task.public,
                                 task.parameters, task.config, results / "sim")
    lines = [f"public functional tests: {func.tests - func.failed} of {func.tests} passed"]
    lines += [f"  {r['run']}: {r['tests'] - r['failed']}/{r['tests']} passed; results {r['results_xml']}"
              for r in func.runs]
    lines += func.errors
    return checks.func_metrics(func), lines


def public_synth(ws: Path, task: TaskConfig, results: Path) -> tuple[dict, list[str], checks.FlowOutcome]:
    folder = checks.write_design_folder(ws, task, {task.config: task.parameters[task.config]},
                                        results / "design" / task.design)
    outcome = checks.run_synthesis(folder, task, results / "flow")
    if outcome.error:
        return {}, [outcome.error], outcome
    keep = {k: v for k, v in outcome.metrics.items()
            if isinstance(v, (int, float)) and not k.startswith("run__")}
    lines = [f"synthesis: area {keep.get('synth__design__instance__area__stdcell')} um^2, "
             f"setup WS {keep.get('synth__timing__setup__ws')} ns, metadata {outcome.metadata}"]
    return keep, lines, outcome


@click.command()
@click.argument("tool", type=click.Choice(["sim", "synth", "verify"]), required=False)
@click.option("--workspace", type=click.Path(file_okay=False, path_type=Path))
@click.option("--results", type=click.Path(file_okay=False, path_type=Path))
@click.option("--metrics", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--version", "show_version", is_flag=True)
def main(tool: str | None, workspace: Path | None, results: Path | None, metrics: Path | None,
         show_version: bool) -> None:
    if show_version:
        click.echo(f"closer public checks {__version__}")
        return
    if tool is None or workspace is None or results is None or metrics is None:
        raise click.UsageError("need TOOL, --workspace, --results and --metrics")
    ws = workspace.resolve()
    task = _task(ws)
    results.mkdir(parents=True, exist_ok=True)
    out: dict = {}
    lines: list[str] = []
    failed_tool = False
    if tool in ("sim", "verify"):
        m, text = public_sim(ws, task, results)
        out.update(m)
        lines += text
    if tool in ("synth", "verify"):
        m, text, outcome = public_synth(ws, task, results)
        out.update(m)
        lines += text
        failed_tool = outcome.error is not None
        if tool == "verify" and outcome.netlist is not None:
            cond = task.public.model_copy(update={"gls_seeds": task.public.gls_seeds or task.public.seeds[:1]})
            gls = checks.run_gate_level(outcome.netlist, task.top, ws / "tests", task.test_module, cond,
                                        task.parameters[task.config], results / "gls")
            out.update(checks.gls_metrics(gls))
            lines.append(f"gate-level tests: {gls.tests - gls.failed} of {gls.tests} passed")
            lines += gls.errors
    metrics.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    click.echo("\n".join(lines))
    sys.exit(1 if failed_tool else 0)


if __name__ == "__main__":
    try:
        main(standalone_mode=True)
    except CloserError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
