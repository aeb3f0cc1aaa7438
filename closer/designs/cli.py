"""`closer design ...`: list and show design folders; `fetch` comes from closer.designs.fetch."""

from __future__ import annotations

import importlib
import json

import click

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


def _fetch_command() -> click.Command | None:
    """The `fetch` slot: `fetch_command` from closer.designs.fetch, or a thin wrapper over its
    `fetch_design`, or nothing while that module does not exist."""
    try:
        fetch = importlib.import_module("closer.designs.fetch")
    except ModuleNotFoundError:
        return None
    if hasattr(fetch, "fetch_command"):
        return fetch.fetch_command

    @click.command("fetch")
    @click.argument("name")
    @click.option("--from", "from_path", default=None, help="Local clone or mirror to fetch from.")
    @click.option("--refresh", is_flag=True, help="Fetch again even when cached.")
    def fetch_command(name: str, from_path: str | None, refresh: bool) -> None:
        """Fetch a design's upstream source at its pinned commit into the cache."""
        click.echo(str(fetch.fetch_design(name, from_path=from_path, refresh=refresh)))

    return fetch_command


_fetch = _fetch_command()
if _fetch is not None:
    design_group.add_command(_fetch, "fetch")
