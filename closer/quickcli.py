"""`closer` started without site (the launcher's `python -SI`, closer.launchers.nosite).

The command listing (`closer`, `closer --help`, `closer --version`) runs here, in this process:
closer.cli lists the commands from its table and imports click alone, which this module finds in
the interpreter's site-packages without running site (no .pth file is needed by click). Every other
command line is handed, unchanged, to the full command (`python -m closer`, exec'd: same process,
same argv and exit code), which starts with site as pip's console script would.
"""

from __future__ import annotations

import os
import sys

LISTING_ARGV = ([], ["--help"], ["--version"])


def site_packages() -> list[str]:
    """The folders site.getsitepackages() would name (venv-aware: sys.prefix is the venv's)."""
    libdirs = [sys.platlibdir] + (["lib"] if sys.platlibdir != "lib" else [])
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    folders = [os.path.join(prefix, libdir, version, "site-packages")
               for prefix in dict.fromkeys((sys.prefix, sys.exec_prefix)) for libdir in libdirs]
    return [folder for folder in folders if os.path.isdir(folder)]


def main() -> None:
    argv = sys.argv[1:]
    if argv in LISTING_ARGV:
        sys.path.extend(folder for folder in site_packages() if folder not in sys.path)
        from closer.cli import main as listing_main

        listing_main()
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "closer", *argv])
