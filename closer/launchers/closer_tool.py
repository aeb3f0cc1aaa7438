"""Write the `closer-tool` command as a launcher that starts Python without site.

    python -m closer.launchers.closer_tool DEST [--python PY]

pip writes `closer-tool` as a console script: `#!PY` with site, so every call first runs the
editable install's finder (pathlib, urllib, ...), 60–70 ms here before a line of ours. The
launcher written instead is `#!PY -SI` over closer.metered.quickstatus, which answers a cached
status with the standard library and execs the full command for everything else. The scripts/
bootstrap.sh step runs this after `pip install -e .` (which would put the console script back).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import closer

PACKAGE_ROOT = Path(closer.__file__).resolve().parent.parent  # the folder that holds closer/


def launcher_text(python: str, package_root: Path = PACKAGE_ROOT) -> str:
    """-SI is one shebang argument (Linux passes the rest of the line as one): no site, isolated.
    Isolated ignores $PYTHONPATH, so the launcher puts it first itself, as Python would: inside a
    sandbox it names the bound package (closer.sandbox.agent), which may not be the checkout
    written in here; that one comes last, where site's editable finder would."""
    return (f"#!{python} -SI\nimport os, sys\n"
            "sys.path[:0] = [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]"
            f" + [{str(package_root)!r}]\n"
            "from closer.metered.quickstatus import main\nmain()\n")


def write_launcher(dest: Path, python: str, package_root: Path = PACKAGE_ROOT) -> Path:
    """Atomically (a temporary file, then rename), executable."""
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}")
    tmp.write_text(launcher_text(python, package_root))
    tmp.chmod(0o755)
    tmp.replace(dest)
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m closer.launchers.closer_tool")
    parser.add_argument("dest", type=Path, help="where to write the command (e.g. .venv/bin/closer-tool)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter it starts")
    args = parser.parse_args()
    print(f"wrote {write_launcher(args.dest, args.python)}")


if __name__ == "__main__":
    main()
