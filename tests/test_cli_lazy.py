"""`closer --help` lists the commands from the table in closer.cli without importing their modules;
the table cannot drift from the real commands, and `closer CMD --help` is still the full help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from closer.cli import COMMANDS, _load, cli

ROOT = Path(__file__).resolve().parents[1]

LIST_IMPORTS = """
import json, runpy, sys
sys.argv = ["closer", "--help"]
try:
    runpy.run_module("closer", run_name="__main__")
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def test_the_table_matches_every_real_command():
    for name, (spec, short_help) in COMMANDS.items():
        command = _load(spec)
        assert isinstance(command, click.Command), spec
        assert command.name == name, f"{spec} is named {command.name!r}, listed as {name!r}"
        assert command.get_short_help_str(10**6) == short_help, f"short help of {name} in closer.cli.COMMANDS"


def test_the_listing_is_what_click_would_print_from_the_loaded_commands():
    eager = click.Group("closer", help=cli.help, params=cli.params,
                        commands={name: _load(spec) for name, (spec, _) in COMMANDS.items()})
    lazy = CliRunner().invoke(cli, ["--help"], prog_name="closer")
    loaded = CliRunner().invoke(eager, ["--help"], prog_name="closer")
    assert lazy.exit_code == 0
    assert lazy.output == loaded.output


def test_the_listing_imports_no_command_module():
    done = subprocess.run([sys.executable, "-c", LIST_IMPORTS], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["code"] == 0
    assert "Commands:" in done.stdout and "trajectory" in done.stdout
    loaded = {spec.split(":")[0] for spec, _ in COMMANDS.values()} & set(report["modules"])
    assert not loaded, f"`closer --help` imported {sorted(loaded)}"
    assert "pydantic" not in report["modules"]


def test_a_command_help_is_still_its_full_help():
    result = CliRunner().invoke(cli, ["trajectory", "--help"], prog_name="closer")
    assert result.exit_code == 0
    assert "summarize" in result.output and "replay" in result.output
    unknown = CliRunner().invoke(cli, ["no-such-command"], prog_name="closer")
    assert unknown.exit_code == 2 and "No such command" in unknown.output
