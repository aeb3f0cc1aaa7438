"""The `closer` command line. It only parses options, builds models and calls the library.

Each feature keeps its commands in its own module; they are loaded lazily so that `closer --help`
stays fast and one feature's import error does not break the others.
"""

from __future__ import annotations

import importlib
import sys
from typing import NoReturn

import click

from closer import __version__
from closer.errors import CloserError

# command name -> "module:attribute" of a click command or group
COMMANDS: dict[str, str] = {
    "doctor": "closer.doctor:doctor_command",
    "pdk": "closer.pdk:pdk_group",
    "reward": "closer.reward.cli:reward_group",
    "trajectory": "closer.trajectory.cli:trajectory_group",
    "flow": "closer.flow.cli:flow_group",
    "design": "closer.designs.cli:design_group",
    "mutants": "closer.mutants.cli:mutants_group",
    "task": "closer.tasks.cli:task_group",
    "evaluate": "closer.tasks.cli:evaluate_command",
    "report": "closer.report.cli:report_command",
    "matrix": "closer.matrix.cli:matrix_group",
    "drc": "closer.drc.cli:drc_group",
}


def _load(spec: str) -> click.Command | None:
    module_name, attr = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == module_name or module_name.startswith(exc.name + ".")):
            return None  # feature not built yet
        raise
    return getattr(module, attr)


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, spec in COMMANDS.items() if _load(spec) is not None)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        spec = COMMANDS.get(name)
        return _load(spec) if spec else None


@click.group(cls=LazyGroup)
@click.version_option(__version__, prog_name="closer")
def cli() -> None:
    """Closer: stage-paired hardware-design closure tasks under a budget."""


def run_cli(command: click.Command, prog: str) -> NoReturn:
    """Run a click command and exit: CloserError -> its message and exit 2, click's own errors as
    click shows them; an integer a command returns is the exit code."""
    try:
        code = command.main(prog_name=prog, standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except CloserError as exc:
        click.echo(f"{prog}: error: {exc}", err=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


def main() -> None:
    run_cli(cli, "closer")


if __name__ == "__main__":
    main()
