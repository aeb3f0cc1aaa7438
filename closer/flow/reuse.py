"""Reuse of whole flow runs: an unchanged `closer flow` run is served from a content-addressed
cache instead of being run again.

The key is the SHA-256 of everything the run's result depends on: the design folder the flow
reads (every file's path and content: RTL, SDC, design.toml with the physical settings and
conditions), the flow step it runs to, Closer's own code (every file of the package), the PDK's
files (`pdk_digest`: path relative to the PDK and content, so a copy of the PDK elsewhere, such
as a Harbor container's /opt/pdk, is the same PDK) and the tool programs and Python distributions
the flow runs (resolved path, size, modification time, version). Only a run that finished and is
deterministic for its inputs is stored: a failed or stopped run, or one whose router or repair
was cut by its time budget (`TIME_CUT_FLAGS`: the result depends on the machine's load), is
never served again.

An entry is the run's output folder, its log and `entry.json` (`Entry`, which also lists the
folders the run's files name by absolute path: its output and design folders, the PDK, the
checkout; a restore elsewhere rewrites them to the restoring run's, `rewrite_paths`), written to
a temporary folder and renamed into place, so concurrent writers of one key leave one complete
entry and a reader never sees a partial one. While a process runs a key it holds
that key's lock (`FlowCache.first_run`): a second process asking for the same key meanwhile
waits for the entry instead of running the same flow beside it.

Where the cache lives: closer.flow.cachedir (`cache_dir`, re-exported here).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from itertools import chain
from contextlib import contextmanager
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from closer.flow.cache import (cache_root, environment_fingerprint, file_sha256, key_digest, read_json, stat_key,
                               write_json)
from closer.flow.cachedir import CACHE_ENV, DISABLED, RUN_CACHE, cache_dir  # noqa: F401  (re-exported)
from closer.flow.paths import ATTEMPTS_ASIDE
from closer.pdk import PdkPaths, default_pdk_root
from closer.toolchain import QROUTER_PREFIX_ENV

FORMAT = "2"
ENTRY_FILE = "entry.json"
LOG_FILE = "flow.log"
OUTPUT_DIR = "flow"
# metadata flags of a run a time budget cut short (the router's wall seconds, the repair's CPU seconds or
# a reroute's wall-timed passes): another run of the same inputs may differ
TIME_CUT_FLAGS = ("closer__route__time_limited", "closer__repair__out_of_time", "closer__flow__deadline_cut")
LOCK_POLL_S = 0.5
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
# the programs the flow runs, by name on the flow's PATH
PROGRAMS = ("yosys", "verilator", "sta", "klayout", "qrouter-1.4.88", "iverilog", "vvp")


class Entry(BaseModel):
    """entry.json of a cache entry."""

    model_config = ConfigDict(extra="forbid")
    format: str = FORMAT
    key: str
    created_at: str
    source: str  # the output folder of the run that was stored
    result: dict[str, JsonValue] = {}  # what the step returned besides its folder (LEC: its verdict)
    # the folders the stored files name by absolute path (`run_locations`: name -> its spellings
    # there, as given and resolved); a restore rewrites them to the restoring run's
    locations: dict[str, list[str]] = {}


def active() -> FlowCache | None:
    """The cache of this process's flows: $CLOSER_FLOW_CACHE (set by whoever started it)."""
    shared = os.environ.get(CACHE_ENV)
    return FlowCache(Path(shared)) if shared and shared != DISABLED else None


def folder_digest(folder: Path, skip_dirs: tuple[str, ...] = ()) -> str:
    """SHA-256 over every regular file's relative path and content (symlinks by their target's
    content; a symlinked folder is not entered), in the order of their path parts."""
    digest = hashlib.sha256()
    for parts in sorted(_file_parts(str(folder), skip_dirs)):
        relative = "/".join(parts)
        digest.update(relative.encode() + b"\0" + file_sha256(folder / relative).encode() + b"\n")
    return digest.hexdigest()


def _file_parts(folder: str, skip_dirs: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """The relative path parts of the files under `folder` (os.walk: pathlib's rglob costs a
    call's worth of time on the package's few hundred files)."""
    for top, dirs, files in os.walk(folder):
        relative = os.path.relpath(top, folder)
        base = () if relative == "." else tuple(relative.split(os.sep))
        dirs[:] = [name for name in dirs if name not in skip_dirs and not os.path.islink(os.path.join(top, name))]
        for name in files:
            if name not in skip_dirs and os.path.splitext(name)[1] != ".pyc":
                yield (*base, name)


@lru_cache(maxsize=1)
def code_digest() -> str:
    """Closer's own code: every file of the package and of the repository's platform folder (pdk/)."""
    from closer.paths import repo_paths

    package = folder_digest(Path(__file__).resolve().parents[1], skip_dirs=("__pycache__",))
    platform = repo_paths().root / "pdk"
    return hashlib.sha256((package + (folder_digest(platform) if platform.is_dir() else "")).encode()).hexdigest()


def pdk_digest(root: Path) -> str:
    """The PDK tree the flow reads (`PdkPaths.tree`: every file `closer.pdk` names lies in it), by
    each file's path relative to it and content, wherever the tree lies: a copy elsewhere is the
    same PDK, a file whose content differs is another. The README and checksums beside the tree
    are not read by any tool."""
    tree = PdkPaths(root).tree.resolve()
    files = sorted(p for p in tree.rglob("*") if p.is_file())
    return _tree_digest(tuple((p.relative_to(tree).as_posix(), stat_key(p)) for p in files))


@lru_cache(maxsize=8)
def _tree_digest(files: tuple[tuple[str, str], ...]) -> str:
    """SHA-256 over the relative path and content of `files` ((relative path, `stat_key`) pairs),
    kept in closer's flow cache under their stat keys (closer.flow.cache): a full open_pdks tree is
    gigabytes, hashed once rather than in every process."""
    root = cache_root()
    memo = None if root is None else root / "pdk-digest" / f"{key_digest(*chain.from_iterable(files))}.json"
    if memo is not None and isinstance(stored := read_json(memo), str) and SHA256_HEX.fullmatch(stored):
        return stored
    digest = hashlib.sha256()
    for rel, stat in files:
        real = stat.split("\0", 1)[0]  # stat_key: the resolved path first
        digest.update(f"{rel}\0{file_sha256(Path(real))}\n".encode())
    if memo is not None:
        write_json(memo, digest.hexdigest())
    return digest.hexdigest()


def tools_digest(search_path: str) -> str:
    """The programs on the flow's PATH, the qrouter build `CLOSER_QROUTER_PREFIX` selects, and every
    installed Python distribution (a pip install or upgrade of any of them is a new key)."""
    lines = [environment_fingerprint()]
    for name in PROGRAMS:
        found = shutil.which(name, path=search_path)
        lines.append(f"{name}=" + (stat_key(Path(found)) if found else "absent"))
    prefix = os.environ.get(QROUTER_PREFIX_ENV)
    if prefix:
        library = Path(prefix) / "share" / "qrouter" / "qrouter.so"
        lines.append(f"{QROUTER_PREFIX_ENV}={prefix}:" + (stat_key(library) if library.is_file() else "absent"))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _key(step: str, inputs: str, fields: dict, search_path: str) -> str:
    parts = {
        "format": FORMAT, "step": step, "inputs": inputs, "fields": fields,
        "code": code_digest(),
        "pdk": pdk_digest(Path(os.environ.get("PDK_ROOT") or default_pdk_root())),
        "tools": tools_digest(search_path),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def flow_key(design_folder: Path, argv_tail: list[str], search_path: str) -> str:
    """The cache key of `closer flow run <design_folder> <argv_tail>` (the arguments after the
    folder, without `--out`)."""
    return _key("flow", folder_digest(design_folder), {"arguments": argv_tail}, search_path)


def files_key(step: str, files: list[Path], fields: dict, search_path: str) -> str:
    """The cache key of a step over `files` (in their order, by content) and JSON `fields`."""
    return _key(step, "\n".join(file_sha256(path) for path in files), fields, search_path)


def run_locations(out: Path, design_folder: Path | None = None) -> dict[str, Path]:
    """The folders a run's files name by absolute path and that differ between two runs of one key:
    its output folder, the design folder it read, the PDK and Closer's checkout."""
    from closer.paths import repo_paths

    found = {"out": out, "pdk": Path(os.environ.get("PDK_ROOT") or default_pdk_root()), "checkout": repo_paths().root}
    return found | ({"design": design_folder} if design_folder is not None else {})


def _spellings(path: Path) -> list[str]:
    """A folder's path as given and resolved (tools write either)."""
    return list(dict.fromkeys((str(path), os.path.realpath(path))))


class FlowCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def entry_dir(self, key: str) -> Path:
        return self.root / key[:2] / key

    def lookup(self, key: str) -> Entry | None:
        """The stored entry of `key`, or None (also for an entry that does not read back, or that
        holds anything but regular files and folders: a flow writes no links, and a planted one
        would lead a restored run to files outside it)."""
        path = self.entry_dir(key) / ENTRY_FILE
        try:
            entry = Entry.model_validate_json(path.read_bytes())
        except (OSError, ValidationError):
            return None
        if entry.key != key or entry.format != FORMAT or _holds_links(self.entry_dir(key)):
            return None
        return entry

    @contextmanager
    def first_run(self, key: str, wait_s: float, say: Callable[[str], None] | None = None) -> Iterator[None]:
        """Held while this process looks `key` up, runs it and stores it. A process holding it
        already is running the same flow: wait for it (up to `wait_s`, then go on without the
        lock), so the lookup that follows finds its entry. The lock is a kernel file lock: it
        goes with its holder, however that ends."""
        lock = self.entry_dir(key).parent / f".{key}.lock"
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline, told = time.monotonic() + wait_s, False
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        break
                    if say and not told:
                        say(f"[flow] the same flow run is in progress elsewhere (cache key {key[:12]}): waiting for it")
                        told = True
                    time.sleep(LOCK_POLL_S)
            yield
        finally:
            os.close(fd)

    def restore(self, entry: Entry, out: Path, log: Path | None = None,
                locations: dict[str, Path] | None = None) -> None:
        """The entry's output folder copied to `out` (replacing it) and its log to `log`, headed by
        where it came from. `locations` (`run_locations` of this run): in every text file, each
        folder the stored run named is renamed to this run's, so the files name this run's output,
        design folder, PDK and checkout as a fresh run's would."""
        source = self.entry_dir(entry.key)
        moves = _moves(entry.locations, locations or {})
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(source / OUTPUT_DIR, out, symlinks=True)
        rewrite_paths(out, moves)
        if log is not None:
            header = (f"[closer] reused run {entry.key} (first run {entry.created_at} in {entry.source}); "
                      "its log follows\n")
            stored = source / LOG_FILE
            text = moved_paths(stored.read_bytes(), moves) if stored.is_file() else b""
            log.write_bytes(header.encode() + text)

    def store(self, key: str, out: Path, log: Path | None = None, result: dict | None = None,
              locations: dict[str, Path] | None = None) -> None:
        """A finished, deterministic run kept under `key` (the caller decides it is one), with the
        folders its files name (`run_locations`); a concurrent writer of the same key wins, silently."""
        if self.lookup(key) is not None:
            return
        final = self.entry_dir(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = final.parent / f".staging-{uuid.uuid4().hex}"
        try:
            # the attempts set aside serve reruns in that folder only: a restored run is served whole
            aside = out / ATTEMPTS_ASIDE
            shutil.copytree(out, staging / OUTPUT_DIR, symlinks=True,
                            ignore=lambda folder, names: [aside.name] if Path(folder) == aside.parent else [])
            if log is not None:
                shutil.copyfile(log, staging / LOG_FILE)
            entry = Entry(key=key, created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                          source=str(out), result=result or {},
                          locations={name: _spellings(path) for name, path in (locations or {}).items()})
            (staging / ENTRY_FILE).write_text(entry.model_dump_json(indent=1) + "\n")
            try:
                staging.rename(final)
            except OSError:  # another writer stored this key first
                pass
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _moves(stored: dict[str, list[str]], current: dict[str, Path]) -> dict[str, str]:
    """Old folder path -> new, for each location both runs name (unchanged ones left out)."""
    return {old: str(current[name]) for name, olds in stored.items() if name in current
            for old in olds if old not in _spellings(current[name])}


# a path ends where no file-name character follows it: /a/flow is not a prefix of /a/flow2
_PATH_END = rb"(?![A-Za-z0-9_.+~-])"


def moved_paths(data: bytes, moves: dict[str, str]) -> bytes:
    """`data` with each old folder path in `moves` replaced by its new one (longest first, in one
    pass); binary data (any NUL byte: GDS, ...) as it is: a changed length would break its
    records, and the flow writes no path into one."""
    if not moves or b"\0" in data:
        return data
    new_by_old = {old.encode(): new.encode() for old, new in moves.items()}
    olds = sorted(new_by_old, key=len, reverse=True)
    pattern = re.compile(b"(" + b"|".join(re.escape(old) for old in olds) + b")" + _PATH_END)
    return pattern.sub(lambda match: new_by_old[match.group(1)], data)


def rewrite_paths(folder: Path, moves: dict[str, str]) -> None:
    """`moved_paths` applied to every file under `folder`; the files keep their modification times."""
    if not moves:
        return
    for path in (p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):  # never through a link
        data = path.read_bytes()
        moved = moved_paths(data, moves)
        if moved != data:
            times = path.stat()
            path.write_bytes(moved)
            os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))


def _holds_links(folder: Path) -> bool:
    return any(p.is_symlink() or not (p.is_file() or p.is_dir()) for p in folder.rglob("*"))


def time_cut(metadata: dict) -> bool:
    return any(metadata.get(flag) for flag in TIME_CUT_FLAGS)
