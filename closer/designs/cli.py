"""`closer design ...`: list, show, new, check and calibrate design folders; `fetch` comes from
closer.designs.fetch. Every DESIGN is a name on the design search path ($CLOSER_DESIGN_PATH, then
designs/) or a path to a design folder."""

from __future__ import annotations

import json
from pathlib import Path

import click

from closer.designs.fetch import fetch_command
from closer.designs.model import SEARCH_PATH_ENV, list_designs


@click.group("design")
def design_group() -> None:
    """Design folders: designs/ and the folders of $CLOSER_DESIGN_PATH."""


@design_group.command("list")
def list_command() -> None:
    """Names of the designs on the search path ($CLOSER_DESIGN_PATH, then designs/)."""
    for name in list_designs():
        click.echo(name)


@design_group.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the resolved configuration as JSON.")
def show_command(name: str, as_json: bool) -> None:
    """Validate NAME's design.toml (and tasks.toml) and print the resolved configuration: every
    table with its defaults filled in, and the absolute files it names."""
    from closer.designs.resolved import resolved_config, resolved_text

    config = resolved_config(name)
    click.echo(json.dumps(config, indent=1) if as_json else resolved_text(config))


@design_group.command("new")
@click.argument("name")
@click.option("--in", "parent", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Folder to create NAME/ in (put it on $" + SEARCH_PATH_ENV + ").")
def new_command(name: str, parent: Path) -> None:
    """Write a complete design folder NAME/ (design.toml, rtl/, spec.md, constraints/, weak/,
    oracle/ with a reference model, tasks.toml, targets.toml) holding a working example to replace."""
    from closer.designs.scaffold import new_design

    dest = new_design(name, parent)
    click.echo(f"design {name}: {dest}")
    click.echo(f"next: `closer design calibrate {dest}`, then `closer design check {dest}` "
               "(docs/adding-a-design.md)")


@design_group.command("check")
@click.argument("name")
@click.option("--quick", is_flag=True, help="Only lint, oracle and mutants (no synthesis or physical flow); "
                                            "a quick record does not let `closer task generate` through.")
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the scratch files (logs, the generated suite, evaluations) in this folder.")
@click.option("--jobs", type=click.IntRange(1, 4), default=1, show_default=True,
              help="Evaluations (oracle agent on A, B, C; the weak on B) run at once.")
def check_command(name: str, quick: bool, keep: Path | None, jobs: int) -> None:
    """Check that design NAME is ready to become tasks: lint, oracle against golden/weak/skeleton,
    mutants, the oracle agent at 1.0 on A, B and C (the full flow), the weak missing a target.
    Exit 1 at the first failing stage, named with its cause."""
    from closer.designs.runcheck import check_design

    record, path = check_design(name, quick=quick, keep=keep, jobs=jobs,
                                progress=lambda line: click.echo(line))
    click.echo(f"{'PASS' if record.passed else 'FAIL'}{' (quick)' if quick else ''}: design "
               f"{record.design}, content {record.content_checksum[:12]}; record {path}")
    if not record.passed:
        raise SystemExit(1)


@design_group.command("calibrate")
@click.argument("name")
@click.option("--margin", type=click.FloatRange(0.0, 1.0), default=0.05, show_default=True,
              help="Each target is the golden value times (1 + margin).")
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the scratch files in this folder.")
@click.option("--jobs", type=click.IntRange(1, 4), default=1, show_default=True,
              help="Evaluations (golden and weak on A and B) run at once.")
def calibrate_command(name: str, margin: float, keep: Path | None, jobs: int) -> None:
    """Measure NAME's golden (and weak) RTL on A and B and write the tasks' targets file
    (tasks.toml targets_file) with the margin stated and the weak's values beside them."""
    from closer.designs.runcheck import calibrate_design

    path, measured = calibrate_design(name, margin, keep=keep, jobs=jobs, progress=lambda line: click.echo(line))
    for m in measured:
        weak = f"{m.weak:.6g}" if m.weak is not None else "n/a"
        click.echo(f"{m.kind.value} {m.name:<15} golden {m.golden:<12.6g} target "
                   f"{m.golden * (1 + margin):<12.6g} weak {weak}")
    click.echo(f"targets {path}")


design_group.add_command(fetch_command, "fetch")
