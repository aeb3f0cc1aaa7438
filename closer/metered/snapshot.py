"""Content-addressed snapshots of the edit surface.

Each file is stored once under `objects/` by its sha256; a snapshot is a manifest (relative POSIX
path -> blob digest) stored under `snapshots/` by the sha256 of its canonical JSON, which is the
`surface_digest` a trajectory record carries.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from typing import TYPE_CHECKING

from closer.errors import InputError
from closer.hashing import sha256
from closer.inputs import load_json
from closer.metered.paths import CONTROL_DIR, RESULTS_DIR, WorkspacePaths
from closer.trajectory.fastrecord import FileChangesView

if TYPE_CHECKING:
    from closer.metered.config import SurfaceConfig
    from closer.metered.views import SurfaceView

ALWAYS_EXCLUDED_DIRS = {CONTROL_DIR, RESULTS_DIR}
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Snapshot:
    digest: str
    files: dict[str, str]  # relative path -> blob sha256
    refused: tuple[str, ...] = ()  # "path: reason" of surface entries that were not taken


@dataclass(frozen=True)
class SurfaceScan:
    files: list[str]  # relative POSIX paths of the regular files taken, sorted
    refused: list[str]  # "path: reason" for symlinks, special files and files over the limits


def surface_files(root: Path, surface: SurfaceConfig | SurfaceView) -> list[str]:
    """Relative POSIX paths of the regular files on the edit surface, sorted."""
    return scan_surface(root, surface).files


def scan_surface(root: Path, surface: SurfaceConfig | SurfaceView) -> SurfaceScan:
    """The edit surface's regular files within the size limits; everything else on the surface
    (symlinks, fifos, sockets, devices, oversize files) is refused with its reason. Symlinked
    directories are never followed."""
    found: list[str] = []
    refused: list[str] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir == Path("."):
            dirnames[:] = [d for d in dirnames if d not in ALWAYS_EXCLUDED_DIRS]
        dirnames.sort()
        for name in [*sorted(filenames), *(d for d in dirnames if (Path(dirpath) / d).is_symlink())]:
            rel = (rel_dir / name).as_posix()
            if not (_matches(rel, surface.include) and not _matches(rel, surface.exclude)):
                continue
            reason = _refusal(Path(dirpath) / name, surface, total)
            if reason:
                refused.append(f"{rel}: {reason}")
                continue
            found.append(rel)
            total += (Path(dirpath) / name).stat().st_size
    return SurfaceScan(sorted(found), refused)


def _refusal(path: Path, surface: SurfaceConfig | SurfaceView, total: int) -> str | None:
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        return "a symlink (only regular files are taken)"
    if not stat.S_ISREG(mode):
        return "not a regular file (only regular files are taken)"
    size = path.lstat().st_size
    if size > surface.max_file_bytes:
        return f"{size} bytes, over the {surface.max_file_bytes}-byte limit per file"
    if total + size > surface.max_total_bytes:
        return f"the edit surface would exceed its {surface.max_total_bytes}-byte total limit"
    return None


def _matches(rel: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(rel, p) for p in patterns)


def take_snapshot(ws: WorkspacePaths, surface: SurfaceConfig | SurfaceView) -> Snapshot:
    scan = scan_surface(ws.root, surface)
    files = {}
    for rel in scan.files:
        try:
            files[rel] = _store_blob(ws, ws.root / rel)
        except OSError as exc:  # changed under us (deleted, replaced by a symlink): not taken
            scan.refused.append(f"{rel}: unreadable while the snapshot was taken ({exc.strerror})")
    manifest = json.dumps(files, sort_keys=True, separators=(",", ":")).encode()
    digest = sha256(manifest).hexdigest()
    target = ws.snapshot(digest)
    if not target.exists():
        _atomic_write(target, manifest)
    return Snapshot(digest, files, tuple(scan.refused))


def copy_pristine(ws: WorkspacePaths) -> None:
    """Keep the workspace as the run starts (without its control dir and results): every call's
    tree is built on it, so files outside the edit surface always come from here."""
    shutil.copytree(ws.root, ws.pristine, symlinks=True,
                    ignore=lambda d, names: [n for n in names if Path(d) == ws.root and n in ALWAYS_EXCLUDED_DIRS])


def materialize(ws: WorkspacePaths, snapshot: Snapshot, surface: SurfaceConfig | SurfaceView, dest: Path) -> None:
    """The tree a call runs on: the pristine workspace with its edit-surface files replaced by
    the snapshot's (a file the agent deleted is absent)."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(ws.pristine, dest, symlinks=True)
    for rel in surface_files(dest, surface):
        (dest / rel).unlink()
    restore_snapshot(ws, snapshot, dest)


def load_snapshot(ws: WorkspacePaths, digest: str) -> Snapshot:
    path = ws.snapshot(digest)
    if not path.exists():
        raise InputError(f"snapshot {digest} not found ({path})")
    files = load_json(path, "snapshot manifest")
    if not isinstance(files, dict) or not all(
            isinstance(k, str) and _safe_relative(k) and isinstance(v, str) and _DIGEST.match(v)
            for k, v in files.items()):
        raise InputError(f"{path}: snapshot manifest must map relative paths to sha256 digests")
    return Snapshot(digest, files)


_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def _safe_relative(rel: str) -> bool:
    parts = PurePosixPath(rel).parts
    return bool(parts) and not rel.startswith("/") and ".." not in parts and "\0" not in rel


def restore_snapshot(ws: WorkspacePaths, snapshot: Snapshot, dest: Path) -> None:
    """Write the snapshot's files under `dest` (empty, or a pristine copy without its surface)."""
    for rel, blob in snapshot.files.items():
        source = ws.object(blob)
        if not source.is_file():
            raise InputError(f"snapshot {snapshot.digest}: blob {blob} of {rel} missing ({source})")
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def diff(before: dict[str, str], after: dict[str, str]) -> FileChangesView:
    return FileChangesView(
        added=sorted(p for p in after if p not in before),
        modified=sorted(p for p in after if p in before and before[p] != after[p]),
        deleted=sorted(p for p in before if p not in after),
    )


def _store_blob(ws: WorkspacePaths, path: Path) -> str:
    h = sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    digest = h.hexdigest()
    target = ws.object(digest)
    if not target.exists():
        import tempfile  # only for a new blob: an unchanged surface's call does without it

        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        os.close(fd)
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)
    return digest


def _atomic_write(target: Path, data: bytes) -> None:
    import tempfile  # only for a new snapshot: an unchanged surface's call does without it

    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
