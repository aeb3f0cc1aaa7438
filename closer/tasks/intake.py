"""What the evaluator takes in, checked before anything runs.

* `check_suite_integrity(paths)`: the task folder and its hidden part still have the checksums
  `suite.json` recorded when the suite was generated (an overwritten oracle, targets file or
  locked manifest refuses the evaluation).
* `take_surface(candidate, surface, tree, limits)`: copies the candidate's edit-surface files onto
  the pristine tree, regular files only. Every path is opened relative to an already-opened
  folder with `O_NOFOLLOW`, so a symlink anywhere on the way (a file, or a folder such as `rtl`
  itself) is refused, not followed; so are special files (FIFOs, sockets, devices), hard-linked
  files (a second name for a file elsewhere) and files over the size limits. Each refusal is
  returned with its reason; refused files are not taken.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from closer.tasks.models import SuiteManifest
from closer.tasks.paths import TaskPaths, in_surface, is_runtime, tree_checksum

_CHUNK = 1 << 20


class SurfaceLimits(BaseModel):
    """Size limits on what the evaluator copies from a candidate's edit surface."""

    model_config = ConfigDict(extra="forbid")
    max_file_bytes: int = Field(8 << 20, gt=0, description="largest single edit-surface file taken")
    max_total_bytes: int = Field(64 << 20, gt=0, description="largest sum of the edit-surface files taken")
    max_files: int = Field(2000, gt=0, description="most edit-surface files taken")


class RefusedFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="workspace-relative path")
    reason: str


def check_suite_integrity(paths: TaskPaths) -> str | None:
    """None when the task folder and its hidden folder match suite.json, else why not."""
    suite = paths.suite
    if not suite.manifest.is_file():
        return f"{suite.manifest} does not exist: the task's checksums cannot be checked"
    try:
        manifest = SuiteManifest.model_validate_json(suite.manifest.read_text())
    except ValueError as exc:
        return f"{suite.manifest}: not a suite manifest: {_first_line(exc)}"
    entry = next((e for e in manifest.tasks if e.task_id == paths.root.name), None)
    if entry is None:
        return f"{suite.manifest}: key tasks: no entry for task {paths.root.name}"
    if not paths.hidden.root.is_dir():
        return f"{paths.hidden.root} does not exist: the task's hidden part is missing"
    found = tree_checksum(paths.hidden.root)
    if found != entry.hidden_checksum:
        return (f"{paths.hidden.root}: the hidden part changed since the suite was generated "
                f"(checksum {found[:12]}, suite.json hidden_checksum {entry.hidden_checksum[:12]})")
    found = tree_checksum(paths.root)
    if found != entry.checksum:
        return (f"{paths.root}: the task folder changed since the suite was generated "
                f"(checksum {found[:12]}, suite.json checksum {entry.checksum[:12]})")
    return None


def take_surface(candidate: Path, surface: dict | list[str], tree: Path,
                 limits: SurfaceLimits | None = None) -> tuple[dict[str, str], list[RefusedFile]]:
    """Copy the candidate's edit-surface regular files into `tree` (whose own surface files were
    removed by the caller). Returns (taken: path -> SHA-256, refused)."""
    limits = limits or SurfaceLimits()
    taken: dict[str, str] = {}
    refused: list[RefusedFile] = []
    total = 0
    root_fd = os.open(candidate, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for rel, fd, st in _walk(root_fd, "", surface, refused):
            try:
                if len(taken) >= limits.max_files:
                    refused.append(RefusedFile(path=rel, reason=f"more than {limits.max_files} edit-surface files"))
                    continue
                if st.st_size > limits.max_file_bytes:
                    refused.append(RefusedFile(path=rel, reason=f"{st.st_size} bytes: over the per-file limit "
                                                                f"of {limits.max_file_bytes} bytes"))
                    continue
                if total + st.st_size > limits.max_total_bytes:
                    refused.append(RefusedFile(path=rel, reason=f"{st.st_size} bytes: the edit surface would exceed "
                                                                f"its total limit of {limits.max_total_bytes} bytes"))
                    continue
                digest = _copy_fd(fd, tree / rel, limits.max_file_bytes)
                if digest is None:
                    refused.append(RefusedFile(path=rel, reason="grew over the per-file limit while it was read"))
                    (tree / rel).unlink(missing_ok=True)
                    continue
                total += st.st_size
                taken[rel] = digest
            finally:
                os.close(fd)
    finally:
        os.close(root_fd)
    return taken, refused


def _walk(dir_fd: int, prefix: str, surface, refused: list[RefusedFile]):
    """(rel, open fd, stat) of each regular surface file under dir_fd, never following a symlink."""
    for name in sorted(os.listdir(dir_fd)):
        rel = f"{prefix}{name}"
        if is_runtime(rel):
            continue
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError as exc:
            if in_surface(rel, surface):
                refused.append(RefusedFile(path=rel, reason=f"cannot be read: {exc.strerror}"))
            continue
        if stat.S_ISLNK(st.st_mode) and not in_surface(rel, surface) and in_surface(rel + "/-", surface):
            # a symlinked folder the surface reaches into (e.g. `rtl -> /elsewhere` for `rtl/*`)
            refused.append(RefusedFile(path=rel + "/", reason=f"a symlinked folder (to "
                                                              f"{os.readlink(name, dir_fd=dir_fd)}): not entered"))
            continue
        if stat.S_ISDIR(st.st_mode):
            try:
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            except OSError as exc:
                refused.append(RefusedFile(path=rel + "/", reason=f"cannot be read: {exc.strerror}"))
                continue
            try:
                yield from _walk(sub, rel + "/", surface, refused)
            finally:
                os.close(sub)
            continue
        if not in_surface(rel, surface):
            continue
        if stat.S_ISLNK(st.st_mode):
            refused.append(RefusedFile(path=rel, reason=f"a symlink (to {os.readlink(name, dir_fd=dir_fd)}): "
                                                        "only regular files are taken"))
            continue
        if not stat.S_ISREG(st.st_mode):
            refused.append(RefusedFile(path=rel, reason=f"a special file ({_kind(st.st_mode)}): only regular "
                                                        "files are taken"))
            continue
        if st.st_nlink > 1:
            refused.append(RefusedFile(path=rel, reason=f"a hard link ({st.st_nlink} names for one file): only "
                                                        "files with one name are taken"))
            continue
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
        except OSError as exc:
            refused.append(RefusedFile(path=rel, reason=f"cannot be opened: {exc.strerror}"))
            continue
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
            os.close(fd)
            refused.append(RefusedFile(path=rel, reason="changed while it was read"))
            continue
        yield rel, fd, opened


def _copy_fd(fd: int, dest: Path, max_bytes: int) -> str | None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    with open(dest, "wb") as out:
        while chunk := os.read(fd, _CHUNK):
            size += len(chunk)
            if size > max_bytes:
                return None
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "not a regular file"


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def refused_text(refused: list[RefusedFile], limit: int = 5) -> str:
    text = "; ".join(f"{r.path} ({r.reason})" for r in refused[:limit])
    return text + (f"; and {len(refused) - limit} more" if len(refused) > limit else "")
