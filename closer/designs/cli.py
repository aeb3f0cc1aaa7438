"""`closer design ...`: list and show design folders; `fetch` comes from closer.designs.fetch."""

from __future__ import annotations

import json

import click

from closer.designs.fetch import fetch_command
from closer.designs.model import list_designs, load_design


@click.group("design")
def design_group() -> None:
    """Design folders under designs/."""


@design_group.command("list")
def list_command() -> None:
    """Names of the designs in designs/."""
    for name in list_designs():
        click.echo(name)


@design_group.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the validated design.toml as JSON.")
def show_command(name: str, as_json: bool) -> None:
    """Validate designs/NAME/design.toml and print it."""
    design, paths = load_design(name, check_files=False)
    if as_json:
        click.echo(json.dumps(design.model_dump(mode="json"), indent=1))
        return
    click.echo(f"{design.name}: top {design.top}, clock {design.clock.port} "
               f"{design.clock.period_ns} ns, configs {', '.join(design.configs)}")
    click.echo(f"  folder {paths.root}")


design_group.add_command(fetch_command, "fetch")
