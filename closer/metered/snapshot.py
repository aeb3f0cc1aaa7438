"""Content-addressed snapshots of the edit surface.

Each file is stored once under `objects/` by its sha256; a snapshot is a manifest (relative POSIX
path -> blob digest) stored under `snapshots/` by the sha256 of its canonical JSON, which is the
`surface_digest` a trajectory record carries.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from closer.errors import InputError
from closer.metered.config import SurfaceConfig
from closer.metered.paths import CONTROL_DIR, RESULTS_DIR, WorkspacePaths
from closer.trajectory.record import FileChanges

ALWAYS_EXCLUDED_DIRS = {CONTROL_DIR, RESULTS_DIR}
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Snapshot:
    digest: str
    files: dict[str, str]  # relative path -> blob sha256


def surface_files(root: Path, surface: SurfaceConfig) -> list[str]:
    """Relative POSIX paths of the regular files on the edit surface, sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir == Path("."):
            dirnames[:] = [d for d in dirnames if d not in ALWAYS_EXCLUDED_DIRS]
        dirnames.sort()
        for name in filenames:
            full = Path(dirpath) / name
            if full.is_symlink() or not full.is_file():
                continue
            rel = (rel_dir / name).as_posix()
            if _matches(rel, surface.include) and not _matches(rel, surface.exclude):
                found.append(rel)
    return sorted(found)


def _matches(rel: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(rel, p) for p in patterns)


def take_snapshot(ws: WorkspacePaths, surface: SurfaceConfig) -> Snapshot:
    files = {rel: _store_blob(ws, ws.root / rel) for rel in surface_files(ws.root, surface)}
    manifest = json.dumps(files, sort_keys=True, separators=(",", ":")).encode()
    digest = hashlib.sha256(manifest).hexdigest()
    target = ws.snapshot(digest)
    if not target.exists():
        _atomic_write(target, manifest)
    return Snapshot(digest, files)


def load_snapshot(ws: WorkspacePaths, digest: str) -> Snapshot:
    path = ws.snapshot(digest)
    try:
        files = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise InputError(f"snapshot {digest} not found ({path})") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"snapshot manifest {path} is not valid JSON: {exc}") from exc
    return Snapshot(digest, files)


def restore_snapshot(ws: WorkspacePaths, snapshot: Snapshot, dest: Path) -> None:
    """Write the snapshot's files under `dest` (which should be empty)."""
    for rel, blob in snapshot.files.items():
        source = ws.object(blob)
        if not source.is_file():
            raise InputError(f"snapshot {snapshot.digest}: blob {blob} of {rel} missing ({source})")
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def diff(before: dict[str, str], after: dict[str, str]) -> FileChanges:
    return FileChanges(
        added=sorted(p for p in after if p not in before),
        modified=sorted(p for p in after if p in before and before[p] != after[p]),
        deleted=sorted(p for p in before if p not in after),
    )


def _store_blob(ws: WorkspacePaths, path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    digest = h.hexdigest()
    target = ws.object(digest)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        os.close(fd)
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)
    return digest


def _atomic_write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
