"""The `closer` command line. It only parses options, builds models and calls the library.

Each feature keeps its commands in its own module; they are loaded lazily so that `closer --help`
stays fast (it imports none of them: the listing comes from `COMMANDS`, which a test keeps equal to
the real commands) and one feature's import error does not break the others.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import NoReturn

import click

from closer import __version__
from closer.errors import CloserError
from closer.quickcli import installed

# command name -> ("module:attribute" of a click command or group, its short help as listed)
COMMANDS: dict[str, tuple[str, str]] = {
    "doctor": ("closer.doctor:doctor_command",
               "Report every tool (required/optional), its path and version, the PDK and the backend."),
    "pdk": ("closer.pdk:pdk_group", "Inspect the PDK found through PDK_ROOT."),
    "reward": ("closer.reward.cli:reward_group",
               "Gated log-penalty reward R = G · exp(−Σ w·max(0, log(m/m*))) from ORFS metrics."),
    "trajectory": ("closer.trajectory.cli:trajectory_group",
                   "Measures, plots and replay of metered-tool trajectories."),
    "flow": ("closer.flow.cli:flow_group", "Run the implementation flow on a design."),
    "design": ("closer.designs.cli:design_group",
               "Design folders: designs/ and the folders of $CLOSER_DESIGN_PATH."),
    "mutants": ("closer.mutants.cli:mutants_group",
                "Mutation-based verification scoring: generate mutants, score testbenches by kills."),
    "task": ("closer.tasks.cli:task_group", "Stage-paired tasks: generate, run an agent, export to Harbor."),
    "evaluate": ("closer.tasks.cli:evaluate_command",
                 "Score WORKSPACE on a pristine copy of TASK under the hidden conditions."),
    "report": ("closer.report.cli:report_command",
               "Tables, best-so-far curves, A+B vs C, bootstrap CIs and the invalid-run manifest of RUNS."),
    "matrix": ("closer.matrix.cli:matrix_group",
               "The protocol's experiment: designs x kinds x budgets x agents x trials on Dask."),
    "drc": ("closer.drc.cli:drc_group", "Rule -> KLayout DRC script tasks: generate, import, run, select, report."),
}
PACKAGE_DIR = Path(__file__).resolve().parent


def _load(spec: str) -> click.Command | None:
    module_name, attr = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == module_name or module_name.startswith(exc.name + ".")):
            return None  # feature not built yet
        raise
    return getattr(module, attr)


def _installed(spec: str) -> bool:
    """The command's module is there (a file check: listing imports nothing)."""
    return installed(str(PACKAGE_DIR), spec)


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, (spec, _) in COMMANDS.items() if _installed(spec))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        entry = COMMANDS.get(name)
        return _load(entry[0]) if entry else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click lists them, from the table's short helps instead of the loaded commands."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        # a stand-in command shortens the help exactly as click shortens a real one
        rows = [(name, click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit))
                for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


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
