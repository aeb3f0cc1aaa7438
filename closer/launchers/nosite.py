"""Write Closer's commands as launchers that start Python without site.

    python -m closer.launchers.nosite COMMAND DEST [--python PY]     COMMAND: closer-tool or closer

pip writes them as console scripts: `#!PY` with site, so every call first runs the editable
install's finder (pathlib, urllib, ...), 50–70 ms here before a line of ours. The launcher written
instead is `#!PY -SI` over the command's start module (ENTRIES), which answers what it can with
the standard library (a cached status, the command listing) and execs the full command for
everything else. The scripts/bootstrap.sh step runs this after `pip install -e .` (which would put
the console scripts back).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import closer

PACKAGE_ROOT = Path(closer.__file__).resolve().parent.parent  # the folder that holds closer/
# command -> the module whose main() the launcher runs
ENTRIES = {"closer-tool": "closer.metered.quickstatus", "closer": "closer.quickcli"}


def launcher_text(python: str, package_root: Path = PACKAGE_ROOT, command: str = "closer-tool") -> str:
    """-SI is one shebang argument (Linux passes the rest of the line as one): no site, isolated.
    Isolated ignores $PYTHONPATH, so the launcher puts it first itself, as Python would: inside a
    sandbox it names the bound package (closer.sandbox.agent), which may not be the checkout
    written in here; that one comes last, where site's editable finder would. `closer`'s
    launcher carries its listing (closer.quickcli)."""
    argument = repr(command_listing(package_root)) if command == "closer" else ""
    return (f"#!{python} -SI\nimport os, sys\n"
            "sys.path[:0] = [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]"
            f" + [{str(package_root)!r}]\n"
            f"from {ENTRIES[command]} import main\nmain({argument})\n")


def command_listing(package_root: Path) -> dict | None:
    """What click prints for `closer --help` at each width and for `closer --version`, with the
    key they hold for (closer.quickcli.listing_key over `package_root`'s files); None when there
    is no package there (the launcher then always asks click)."""
    import click
    from click.testing import CliRunner

    from closer.cli import COMMANDS, cli
    from closer.quickcli import HELP_WIDTHS, listing_key, site_packages

    specs = [spec for spec, _ in COMMANDS.values()]
    try:
        key = listing_key(str(package_root / "closer"), specs, site_packages())
    except OSError:
        return None
    helps = {}
    for width in HELP_WIDTHS:
        with click.Context(cli, info_name="closer", terminal_width=width) as ctx:
            helps[str(width)] = cli.get_help(ctx) + "\n"
    return {"key": key, "specs": specs,
            "help": helps, "version": CliRunner().invoke(cli, ["--version"], prog_name="closer").output}


def write_launcher(dest: Path, python: str, package_root: Path = PACKAGE_ROOT, command: str = "closer-tool") -> Path:
    """Atomically (a temporary file, then rename), executable."""
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}")
    tmp.write_text(launcher_text(python, package_root, command))
    tmp.chmod(0o755)
    tmp.replace(dest)
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m closer.launchers.nosite")
    parser.add_argument("command", choices=sorted(ENTRIES), help="which command to write")
    parser.add_argument("dest", type=Path, help="where to write it (e.g. .venv/bin/closer-tool)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter it starts")
    args = parser.parse_args()
    print(f"wrote {write_launcher(args.dest, args.python, command=args.command)}")


if __name__ == "__main__":
    main()
