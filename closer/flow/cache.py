"""A cache outside every run directory for what the flow derives from inputs that rarely change:
the prepared synthesis Liberty (closer.flow.liberty_prep), tool versions
(closer.flow.tool_versions) and the Python package list (closer.flow.records).

Entries are keyed by content (SHA-256) or by a file's path, size and mtime, never by a run, so a
changed input is a new entry and an old entry is never wrong. Writers put a temporary file next to
the entry and rename it into place, so concurrent runs never read a half-written entry. The root
is closer's user cache (closer.paths.user_cache_root: `$CLOSER_CACHE_DIR`, else `~/.cache/closer`)
under `flow/`; where it cannot be created (a read-only home in a sandbox) the flow computes
everything in place, as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from closer.paths import user_cache_root


def cache_root() -> Path | None:
    """The flow's cache folder, created if needed; None when it cannot be created or written."""
    root = user_cache_root() / "flow"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return root if os.access(root, os.W_OK | os.X_OK) else None


def write_atomic(target: Path, write: Callable[[Path], None]) -> None:
    """Call `write(tmp)` on a temporary file beside `target`, then rename it onto `target`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)   # mkstemp's 0600 would hide the entry from other users
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> object | None:
    """A cache entry's JSON, or None when it is absent or unreadable (then it is rebuilt)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_json(path: Path, value: object) -> None:
    write_atomic(path, lambda tmp: tmp.write_text(json.dumps(value, indent=1) + "\n"))


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def stat_key(path: Path) -> str:
    """A file's resolved path, size and mtime: changes whenever the file is replaced."""
    real = Path(os.path.realpath(path))
    stat = real.stat()
    return f"{real}\0{stat.st_size}\0{stat.st_mtime_ns}"


def environment_fingerprint() -> str:
    """SHA-256 (16 hex) over the installed distributions' metadata folders (names carry the
    versions; mtimes change on reinstall) in the interpreter's site directories: a pip install or
    upgrade changes it. Only those directories: the working directory and $PYTHONPATH differ
    between processes of one environment (a checkout holds its own `*.egg-info`), and a
    fingerprint that followed them would give the same flow another cache key in each. Nor the
    path the interpreter was started through: a venv reached through a symlinked folder (the
    Harbor layout's `/opt/closer/.venv`) has that path as its `sys.prefix`, but is the same
    environment, so the folders are taken by their resolved paths."""
    import sysconfig

    digest = hashlib.sha256(os.path.realpath(sys.prefix).encode())
    paths = sysconfig.get_paths()
    for entry in dict.fromkeys(os.path.realpath(paths[name]) for name in ("purelib", "platlib")):
        try:
            names = sorted(os.listdir(entry))
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info", ".egg-link", ".pth")):
                try:
                    mtime = os.stat(os.path.join(entry, name)).st_mtime_ns
                except OSError:
                    continue
                digest.update(f"{entry}\0{name}\0{mtime}\0".encode())
    return digest.hexdigest()[:16]


def key_digest(*parts: str) -> str:
    """SHA-256 (24 hex) of the key parts: a file name for a cache entry."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]
