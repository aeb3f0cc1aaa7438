"""`closer` started without site (the launcher's `python -SI`, closer.launchers.nosite).

`closer --help` and `closer --version` are answered from the launcher's listing: what click
printed for them when the launcher was written, for every width click formats help at (it caps
the terminal's columns to 50..78). It is used only while its key still holds, the SHA-256 of
closer/cli.py (the command table, the group's help and options), closer/__init__.py (the version),
click's own files (size, mtime) and which command modules are installed; importing click alone
costs more than the 100 ms the listing may take here. A listing that no longer holds, or any other
command line, goes to click: the listing in this process (`closer`, `closer --help`, `closer
--version`, with click from site-packages: no .pth file is needed by it), everything else exec'd
as the full command (`python -m closer`, with site: same process, same argv and exit code).
"""

from __future__ import annotations

import os
import sys

try:  # the C class itself: hashlib's Python layer costs more to import than the listing
    from _sha256 import sha256  # Python 3.11
except ImportError:  # pragma: no cover - 3.12 and later
    from hashlib import sha256

LISTING_ARGV = ([], ["--help"], ["--version"])
HELP_WIDTHS = range(50, 79)  # click.formatting.HelpFormatter: max(min(columns, 80) - 2, 50)


def site_packages() -> list[str]:
    """The site-packages folders site would add: a venv's (found as site.venv finds it, by the
    pyvenv.cfg beside or above the interpreter; without site sys.prefix is the base one's), then
    the base interpreter's only if the venv includes them."""
    exe_dir = os.path.dirname(os.path.abspath(sys.executable))
    prefixes = [sys.prefix, sys.exec_prefix]
    for conf in (os.path.join(exe_dir, "pyvenv.cfg"), os.path.join(os.path.dirname(exe_dir), "pyvenv.cfg")):
        if os.path.isfile(conf):
            with open(conf, encoding="utf-8") as handle:
                settings = dict(line.split("=", 1) for line in handle.read().splitlines() if "=" in line)
            shared = {k.strip(): v.strip() for k, v in settings.items()}.get("include-system-site-packages")
            prefixes = [os.path.dirname(exe_dir)] + (prefixes if shared == "true" else [])
            break
    libdirs = [sys.platlibdir] + (["lib"] if sys.platlibdir != "lib" else [])
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    folders = [os.path.join(prefix, libdir, version, "site-packages")
               for prefix in dict.fromkeys(prefixes) for libdir in libdirs]
    return [folder for folder in folders if os.path.isdir(folder)]


def installed(package_dir: str, spec: str) -> bool:
    """The command's module ("closer.x.y:attr") is there: a file check, nothing imported."""
    relative = os.path.join(*spec.split(":")[0].split(".")[1:])
    base = os.path.join(package_dir, relative)
    return os.path.isfile(base + ".py") or os.path.isfile(os.path.join(base, "__init__.py"))


def listing_key(package_dir: str, specs: list[str], folders: list[str]) -> str:
    """What the listing is a function of (besides the width): see the module's docstring."""
    digest = sha256(b"closer-listing-1\0")
    for name in ("cli.py", "__init__.py"):
        with open(os.path.join(package_dir, name), "rb") as handle:
            digest.update(handle.read() + b"\0")
    for folder in folders:
        click_dir = os.path.join(folder, "click")
        if os.path.isdir(click_dir):
            for name in sorted(os.listdir(click_dir)):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(click_dir, name))
                    digest.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
            break
    digest.update("".join("1" if installed(package_dir, spec) else "0" for spec in specs).encode())
    return digest.hexdigest()


def help_width() -> int:
    """The width click formats help at (shutil.get_terminal_size's columns, as click reads them)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return max(min(columns or 80, 80) - 2, 50)


def listed(argv: list[str], listing: dict | None) -> str | None:
    """The launcher's answer to `argv`, None when click must answer."""
    if not listing or argv not in (["--help"], ["--version"]):
        return None
    package_dir = os.path.dirname(os.path.abspath(sys.modules["closer"].__file__))
    try:
        if listing_key(package_dir, listing["specs"], site_packages()) != listing["key"]:
            return None
    except OSError:
        return None
    return listing["version"] if argv == ["--version"] else listing["help"].get(str(help_width()))


def main(listing: dict | None = None) -> None:
    argv = sys.argv[1:]
    if (text := listed(argv, listing)) is not None:
        sys.stdout.write(text)
        sys.exit(0)
    if argv in LISTING_ARGV:
        sys.path.extend(folder for folder in site_packages() if folder not in sys.path)
        from closer.cli import main as listing_main

        listing_main()
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "closer", *argv])
