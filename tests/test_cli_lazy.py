"""`closer --help` lists the commands from the table in closer.cli without importing their modules;
the table cannot drift from the real commands, and `closer CMD --help` is still the full help. The `closer` launcher
(closer.launchers.nosite, `python -SI` over closer.quickcli) prints the same without site or click."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from closer.cli import COMMANDS, _load, cli
from closer.launchers.nosite import write_launcher

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


NO_SITE_LISTING = """
import json, sys
launcher = sys.argv[1]
sys.argv = ["closer", "--help"]
try:
    exec(compile(open(launcher).read(), launcher, "exec"))
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _closer(argv: list[str], command: list[str], columns: str = "100") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([*command, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=env | {"COLUMNS": columns})


def _same(fast: subprocess.CompletedProcess, slow: subprocess.CompletedProcess) -> bool:
    return (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)


def test_the_launcher_lists_without_click_and_hands_the_rest_to_the_full_command(tmp_path):
    launcher = str(write_launcher(tmp_path / "closer", sys.executable, ROOT, command="closer"))
    full = [sys.executable, "-m", "closer"]
    for argv, columns in ((["--help"], "100"), (["--help"], "61"), (["--help"], "30"), (["--version"], "100"),
                          ([], "100"), (["trajectory", "--help"], "100"), (["no-such-command"], "100")):
        assert _same(_closer(argv, [launcher], columns), _closer(argv, full, columns)), (argv, columns)
    probe = subprocess.run([sys.executable, "-SI", "-c", NO_SITE_LISTING, launcher], capture_output=True, text=True,
                           timeout=60, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    report = json.loads(probe.stderr.splitlines()[-1])
    assert report["code"] == 0 and "Commands:" in probe.stdout
    commands = {spec.split(":")[0] for spec, _ in COMMANDS.values()}
    assert not ({"site", "click", "pydantic"} | commands) & set(report["modules"])


def test_a_listing_whose_key_no_longer_holds_is_not_used(tmp_path):
    """The perturbed listings: with its key it is printed (it is what the launcher serves); with
    another key (a changed cli.py, click or set of installed commands) click answers instead."""
    text = write_launcher(tmp_path / "closer", sys.executable, ROOT, command="closer").read_text()
    key = re.search(r"'key': '([0-9a-f]{64})'", text).group(1)
    served, stale = tmp_path / "served", tmp_path / "stale"
    served.write_text(text.replace("Commands:", "Listed:"))
    stale.write_text(text.replace("Commands:", "Listed:").replace(key, "0" * 64))
    for launcher in (served, stale):
        launcher.chmod(0o755)
    assert "Listed:" in _closer(["--help"], [str(served)]).stdout
    assert _same(_closer(["--help"], [str(stale)]), _closer(["--help"], [sys.executable, "-m", "closer"]))


def test_the_launcher_without_its_package_fails_rather_than_running_another(tmp_path):
    launcher = str(write_launcher(tmp_path / "closer", sys.executable, tmp_path / "no-such-checkout",
                                  command="closer"))
    lost = _closer(["--help"], [launcher])
    assert lost.returncode != 0 and "closer" in lost.stderr
