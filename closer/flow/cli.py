"""`closer flow run DESIGN`: the CLI builds options and calls closer.flow.runner."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from closer.flow.steps import Backend


@click.group("flow")
def flow_group() -> None:
    """Run the implementation flow on a design."""


@flow_group.command("run")
@click.argument("design")
@click.option("--config", default="default", show_default=True, help="Named config in design.toml.")
@click.option("--to", "to", default=None,
              help="Last step to run (lint, elaborate, synth, sta, pnr; default: all).")
@click.option("--backend", type=click.Choice([b.value for b in Backend]), default="auto",
              show_default=True, help="auto: openroad when `openroad` is on PATH, else classic.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Run directory (default runs/DESIGN/CONFIG in the checkout).")
@click.option("--engine", type=click.Choice(["direct", "sc"]), default="direct", show_default=True,
              help="direct: the flow runs each node's tool itself; sc: SiliconCompiler's scheduler "
                   "runs them (the reference; the same netlists and metrics, slower).")
@click.option("--json", "as_json", is_flag=True, help="Print the run record as JSON.")
@click.option("--strict", is_flag=True,
              help="Exit 1 when sign-off fails (or the run stops before pnr): route, DRC, LVS, "
                   "setup/hold/slew/cap at every corner, LEC when run.")
def run_command(design: str, config: str, to: str | None, backend: str, out: Path | None,
                engine: str, as_json: bool, strict: bool) -> int:
    """Run DESIGN through the flow up to --to; writes metrics/ and metadata.json. Progress goes to
    stderr (a live line on a terminal, a line per step otherwise; none with --json); the last
    line is the sign-off verdict."""
    from closer import procs
    from closer.flow.runner import run_flow
    from closer.flow.verdict import verdict

    # SiliconCompiler forks its node processes itself (from this, the main, thread): they die with
    # this command. Armed here, not in run_flow: the hook is process-wide and permanent, and a
    # child's death signal follows the thread that forked it, which a long-lived caller's threads
    # (a test worker, the task runner) would make too eager.
    procs.forked_children_die_with_parent()
    mode = "status" if sys.stderr.isatty() else "lines"
    with _Progress(mode=None if as_json else mode) as progress:
        result = run_flow(design, config=config, to=to, backend=backend, out=out, engine=engine,
                          progress=progress.update if progress.enabled else None)
    signoff = verdict(json.loads(Path(result.metadata).read_text()))
    if as_json:
        from dataclasses import asdict
        click.echo(json.dumps(asdict(result) | {"signoff": {"passed": signoff.passed, "line": signoff.line()}},
                              indent=1))
        return 1 if strict and not signoff.passed else 0
    click.echo(f"{'step':<10} {'state':<7} {'task time':>10} {'peak mem':>9}  tool")
    for step in result.steps:
        state = "reused" if step.reused else "ran"
        mem = f"{step.peak_mem_mb:.0f} MB" if step.peak_mem_mb else "-"
        wall = f"{step.wall_s:.2f} s" if step.wall_s is not None else "-"
        if step.reused:
            wall = f"({wall})"  # the time it took when it ran; nothing ran now
        click.echo(f"{step.name:<10} {state:<7} {wall:>10} {mem:>9}  {step.tool} "
                   f"{step.tool_version}")
    click.echo(f"backend {result.backend}, engine {result.engine}; total {result.wall_s:.2f} s; metadata {result.metadata}")
    click.echo(signoff.line())
    return 1 if strict and not signoff.passed else 0


class _Progress:
    """Progress on stderr: mode `status` a one-line live status (terminal), `lines` one line each
    time the running step (or physical step inside pnr) changes, None nothing."""

    def __init__(self, mode: str | None) -> None:
        self.mode = mode
        self.enabled = mode is not None
        self._status = None
        self._last: str | None = None

    def __enter__(self) -> "_Progress":
        if self.mode == "status":
            from rich.console import Console
            self._status = Console(stderr=True).status("flow: starting")
            self._status.start()
        return self

    def update(self, step: str, elapsed_s: float) -> None:
        if self._status is not None:
            self._status.update(f"flow: {step} ({elapsed_s:.1f} s)")
        elif self.mode == "lines" and step != self._last:
            self._last = step
            click.echo(f"flow: {step} (at {elapsed_s:.1f} s)", err=True)

    def __exit__(self, *exc) -> None:
        if self._status is not None:
            self._status.stop()
