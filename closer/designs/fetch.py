"""`closer design fetch NAME`: bring a design's upstream source into the user cache.

Upstream code is never committed to this repository. A design that is used "as upstream wrote it"
(PicoRV32) declares a `[fetch]` table in its `design.toml`::

    [fetch]
    url = "https://github.com/YosysHQ/picorv32.git"
    commit = "87c89acc..."                 # pinned; nothing else is accepted
    source_env = "CLOSER_PICORV32_SRC"     # optional local clone/mirror to use instead of url
    rtl = ["picorv32.v"]                   # files the flow reads, relative to the fetched tree
    [fetch.package]                        # optional: a registry package that ships the same tree
    name = "pythondata-cpu-picorv32"       # distribution, pinned in requirements.lock
    version = "1.0.post218"
    module = "pythondata_cpu_picorv32"     # its `data_location` is the tree, `data_git_hash` the commit
    [fetch.sha256]
    "picorv32.v" = "0836..."               # checked after copying or checkout

Where the tree comes from, first match wins: `--from PATH` (a local clone), the design's
`source_env` variable, the installed package (`--source package`, the default when the design
names one), the upstream URL (`--source git`). Every route checks the pinned commit (the git
checkout, or the package's `data_git_hash`) and every SHA-256 of `[fetch.sha256]`.

The fetched tree lands in `FetchPaths` (one class for the cache layout)::

    <user cache>/closer/<name>/<commit>/
        src/              the upstream tree at the pinned commit (no .git)
        fetch.json        where it came from, when, the checked hashes
        debug/            fault-injected copies made from patches of our own (if the design has
                          designs/<name>/tasks/debug/faults/*.patch)

Fetching is atomic: the tree is built in a temporary sibling directory and renamed into place, so
an interrupted fetch never leaves a half tree that looks finished.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import os
import shutil
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import click
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from closer.errors import InputError, ToolError
from closer.paths import CACHE_ENV, user_cache_root  # noqa: F401  (CACHE_ENV: tests set it)
from closer.procs import Command, run



class PackageSource(BaseModel):
    """`[fetch.package]`: a Python package (pythondata style) that ships the upstream tree."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="Distribution name, as pinned in requirements.lock")
    version: str = Field(description="The only accepted installed version")
    module: str = Field(description="Import name; `data_location` is the tree, `data_git_hash` its commit")

    @property
    def label(self) -> str:
        return f"pypi:{self.name}=={self.version}"


class FetchSpec(BaseModel):
    """The `[fetch]` table of a design.toml."""

    url: str = Field(description="Upstream git URL, used when no local source is given")
    commit: str = Field(description="Pinned 40-hex commit; the only revision accepted")
    source_env: str | None = Field(None, description="Environment variable naming a local clone")
    rtl: list[str] = Field(description="Fetched RTL files, relative to the fetched tree")
    package: PackageSource | None = Field(None, description="Registry package with the same tree")
    sha256: dict[str, str] = Field(description="Expected SHA-256 of fetched files")

    @field_validator("commit")
    @classmethod
    def _full_sha(cls, value: str) -> str:
        if len(value) != 40 or any(c not in "0123456789abcdef" for c in value):
            raise ValueError("must be a full 40-character lowercase hex commit id")
        return value


@dataclass(frozen=True)
class FetchPaths:
    root: Path  # <cache>/closer/<name>/<commit>

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def record(self) -> Path:
        return self.root / "fetch.json"

    @property
    def debug(self) -> Path:
        return self.root / "debug"

    def is_complete(self) -> bool:
        return self.record.is_file() and self.src.is_dir()


def cache_root() -> Path:
    return user_cache_root()


def design_toml(name: str) -> Path:
    from closer.designs.model import design_dir

    return design_dir(name) / "design.toml"


def load_fetch_spec(name: str) -> FetchSpec:
    path = design_toml(name)
    if not path.is_file():
        raise InputError(f"unknown design {name!r}: {path} does not exist")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from exc
    if "fetch" not in data:
        raise InputError(f"{path}: design {name!r} has no [fetch] table; its sources are in the repo")
    try:
        return FetchSpec.model_validate(data["fetch"])
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise InputError(f"{path}: key fetch.{key}: {first['msg']}") from exc


def fetch_paths(name: str, spec: FetchSpec | None = None) -> FetchPaths:
    spec = spec or load_fetch_spec(name)
    return FetchPaths(cache_root() / name / spec.commit)


SOURCES = ("package", "git")


@dataclass(frozen=True)
class Source:
    """Where a fetch takes the tree from: a package's data folder, or a git URL / local clone."""

    kind: str  # "package" | "git"
    location: str  # the package's data folder, or the clone's URL / path
    label: str  # what fetch.json records

    @property
    def is_package(self) -> bool:
        return self.kind == "package"


def resolve_source(spec: FetchSpec, from_path: Path | str | None, source: str | None = None) -> Source:
    """`--from PATH`, else the design's source environment variable, else the installed package
    (when the design names one and `source` is not "git"), else the upstream URL."""
    if source is not None and source not in SOURCES:
        raise InputError(f"--source {source!r}: known sources are {', '.join(SOURCES)}")
    if from_path is not None:
        path = Path(from_path)
        if not path.exists():
            raise InputError(f"--from {path}: no such directory")
        return Source("git", str(path), str(path))
    if spec.source_env and os.environ.get(spec.source_env):
        path = Path(os.environ[spec.source_env])
        if not path.exists():
            raise InputError(f"${spec.source_env}={path}: no such directory")
        return Source("git", str(path), str(path))
    if source == "package" or (source is None and spec.package is not None):
        if spec.package is None:
            raise InputError("--source package: the design's [fetch] table names no package")
        return Source("package", str(package_tree(spec.package, spec.commit)), spec.package.label)
    return Source("git", spec.url, spec.url)


def package_tree(package: PackageSource, commit: str) -> Path:
    """The data folder of the installed package, after checking its version and pinned commit."""
    try:
        installed = importlib.metadata.version(package.name)
    except importlib.metadata.PackageNotFoundError as exc:
        raise InputError(f"package {package.name}=={package.version} is not installed: run "
                         "scripts/bootstrap.sh (it is pinned in requirements.lock), or give "
                         "--from PATH / --source git") from exc
    if installed != package.version:
        raise InputError(f"package {package.name} is {installed}, the design pins {package.version} "
                         "(design.toml key fetch.package.version)")
    module = importlib.import_module(package.module)
    git_hash = getattr(module, "data_git_hash", None)
    if git_hash != commit:
        raise InputError(f"package {package.name}=={installed} ships commit {git_hash}, the design "
                         f"pins {commit} (design.toml key fetch.commit)")
    tree = Path(getattr(module, "data_location", ""))
    if not tree.is_dir():
        raise InputError(f"package {package.name}=={installed}: data_location {tree} is not a folder")
    return tree


def local_source_available(name: str) -> Path | None:
    """The fetched tree (`<cache>/.../src`) when it is complete, else None (callers say to run
    `closer design fetch NAME`, or skip with that reason)."""
    paths = fetch_paths(name)
    return paths.src if paths.is_complete() else None


def unavailable_reason(name: str) -> str:
    spec = load_fetch_spec(name)
    hint = f" or set ${spec.source_env} to a local clone" if spec.source_env else ""
    return (f"upstream source of {name!r} (commit {spec.commit[:12]}) is not fetched: run "
            f"`closer design fetch {name}` (or `--from PATH`){hint}")


def fetch_design(name: str, from_path: Path | str | None = None, refresh: bool = False,
                 timeout_s: float = 600.0, source: str | None = None) -> Path:
    """Fetch design `name` at its pinned commit into the cache and return the tree (`.../src`).

    A complete cached tree is re-verified (hashes) and returned without cloning unless `refresh`.
    """
    spec = load_fetch_spec(name)
    paths = fetch_paths(name, spec)
    if paths.is_complete() and not refresh:
        verify_hashes(paths.src, spec)
        ensure_debug_copy(name, paths)
        return paths.src
    origin = resolve_source(spec, from_path, source)
    paths.root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{spec.commit[:12]}-", dir=paths.root.parent))
    try:
        if origin.is_package:
            shutil.copytree(origin.location, staging / "src", ignore=shutil.ignore_patterns("__pycache__"))
        else:
            _clone_at(origin.location, spec.commit, staging / "src", staging / "logs", timeout_s)
        verify_hashes(staging / "src", spec)
        _apply_debug_faults(name, staging)
        record = {"design": name, "commit": spec.commit, "source": origin.label, "source_kind": origin.kind,
                  "fetched_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "sha256": spec.sha256}
        (staging / "fetch.json").write_text(json.dumps(record, indent=1) + "\n")
        if paths.root.exists():
            _keep_derived(paths.root, staging)
            shutil.rmtree(paths.root)
        try:
            staging.rename(paths.root)
        except OSError:
            if not paths.is_complete():  # else a concurrent fetch finished first: use its tree
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return paths.src


FETCH_OWNED = {"src", "debug", "logs", "fetch.json"}


def _keep_derived(old_root: Path, staging: Path) -> None:
    """A refresh replaces only what fetching makes; anything else kept beside the tree (e.g. a
    generated mutant store) moves to the new tree instead of being lost."""
    for child in old_root.iterdir():
        if child.name not in FETCH_OWNED:
            child.rename(staging / child.name)


def _clone_at(source: str, commit: str, dest: Path, logs: Path, timeout_s: float) -> None:
    clone = Command(["git", "clone", "--quiet", "--no-checkout", source, str(dest)],
                    timeout_s=timeout_s, env={"GIT_TERMINAL_PROMPT": "0"})
    done = run(clone, logs / "clone.log", check=False)
    if not done.ok:
        raise ToolError(f"cannot clone {source}: the source is unavailable "
                        f"(give a local mirror with --from PATH or the design's source variable)\n"
                        f"{done.log_tail(5)}")
    checkout = Command(["git", "-c", "advice.detachedHead=false", "checkout", "--quiet", commit],
                       cwd=dest, timeout_s=timeout_s)
    done = run(checkout, logs / "checkout.log", check=False)
    if not done.ok:
        raise ToolError(f"{source} does not contain the pinned commit {commit}\n{done.log_tail(5)}")
    shutil.rmtree(dest / ".git")


def verify_hashes(tree: Path, spec: FetchSpec) -> None:
    for rel, expected in spec.sha256.items():
        path = tree / rel
        if not path.is_file():
            raise InputError(f"fetched tree {tree} has no {rel} (listed in [fetch.sha256])")
        actual = hashlib.sha256(path.read_bytes()).hexdigest()
        if actual != expected:
            raise InputError(f"{path}: SHA-256 {actual} does not match the pinned {expected} "
                             f"(design.toml key fetch.sha256.{rel!r})")


def fault_patches(name: str) -> list[Path]:
    """The debug task's fault patches (ours), in application order."""
    from closer.designs.model import design_dir

    faults = design_dir(name) / "tasks" / "debug" / "faults"
    return sorted(faults.glob("*.patch")) if faults.is_dir() else []


def _patches_digest(patches: list[Path]) -> str:
    digest = hashlib.sha256()
    for patch in patches:
        digest.update(patch.name.encode() + b"\0" + patch.read_bytes())
    return digest.hexdigest()


def ensure_debug_copy(name: str, paths: FetchPaths) -> None:
    """Rebuild `debug/` of a cached tree when the fault patches changed since it was made."""
    patches = fault_patches(name)
    stamp = paths.debug / "faults.sha256"
    if not patches or (stamp.is_file() and stamp.read_text().strip() == _patches_digest(patches)):
        return
    staging = Path(tempfile.mkdtemp(prefix=".debug-", dir=paths.root))
    try:
        (staging / "src").symlink_to(paths.src)
        _apply_debug_faults(name, staging)
        if paths.debug.exists():
            shutil.rmtree(paths.debug)
        (staging / "debug").rename(paths.debug)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _apply_debug_faults(name: str, staging: Path) -> None:
    """Make `debug/` as a copy of the RTL with every fault patch applied (the debug task's start)."""
    patches = fault_patches(name)
    if not patches:
        return
    debug = staging / "debug"
    for rel in load_fetch_spec(name).rtl:
        (debug / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(staging / "src" / rel, debug / rel)
    for patch in patches:
        apply_patch(patch, debug, staging / "logs" / f"{patch.stem}.log")
    (debug / "faults.sha256").write_text(_patches_digest(patches) + "\n")


def apply_patch(patch: Path, tree: Path, log: Path) -> None:
    """Apply one of our unified-diff patches (paths relative to the tree, `-p1`) exactly."""
    done = run(Command(["patch", "-p1", "--forward", "--no-backup-if-mismatch", "-F0", "-i",
                        str(patch)], cwd=tree), log, check=False)
    if not done.ok:
        raise ToolError(f"fault patch {patch} does not apply to {tree}\n{done.log_tail(10)}")


@click.command("fetch")
@click.argument("name")
@click.option("--from", "from_path", default=None, type=click.Path(),
              help="Local git clone or mirror to fetch from (else $CLOSER_<NAME>_SRC, else the "
                   "installed package, else the URL).")
@click.option("--source", type=click.Choice(SOURCES), default=None,
              help="package: the pinned registry package (default when the design names one); "
                   "git: clone the upstream URL.")
@click.option("--refresh", is_flag=True, help="Fetch again even when the cache is complete.")
def fetch_command(name: str, from_path: str | None, source: str | None, refresh: bool) -> None:
    """Fetch NAME's upstream source at its pinned commit into the user cache; print the tree."""
    click.echo(str(fetch_design(name, from_path=from_path, refresh=refresh, source=source)))
