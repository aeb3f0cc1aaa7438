"""The suite manifest: a versioned list of problems with their rule, case counts, file checksums
and verification results (gold matches every label; which perturbations some layout catches)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, Field

from closer.drc.problem import Problem, load_problem
from closer.errors import InputError
from closer.inputs import load_json_model
from closer.procs import Command, run

SCHEMA_VERSION = 1
GENERATOR_VERSION = "sky130-rules-1"


class ProblemEntry(BaseModel):
    id: str
    folder: str  # relative to the suite root
    kind: str = ""
    deck_rule: str = ""
    layouts_pass: int
    layouts_fail: int
    gold_verified: bool
    caught: list[str] = Field(default_factory=list, description="perturbations some layout catches")
    uncaught: list[str] = Field(default_factory=list)
    sha256: dict[str, str] = Field(default_factory=dict, description="file (relative to folder) -> SHA-256")


class SuiteManifest(BaseModel):
    schema_version: int = SCHEMA_VERSION
    suite: str = Field(description="name and version of the suite, e.g. closer-sky130-rule2drc/sky130-rules-1")
    source: str = Field(description="generated | imported")
    root: str = Field(description="the folder holding problems/ (absolute for an import)")
    klayout: str
    problems: list[ProblemEntry]
    verify_wall_s: float = 0.0


def checksums(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def read_manifest(path: Path) -> SuiteManifest:
    file = path / "manifest.json" if path.is_dir() else path
    return load_json_model(file, SuiteManifest, "suite manifest (closer drc generate or import writes one)")


def write_new(path: Path, text: str) -> None:
    """Records are append-only: refuse to overwrite."""
    try:
        with open(path, "x") as out:
            out.write(text)
    except FileExistsError as exc:
        raise InputError(f"{path}: already exists; write to a new folder") from exc


def klayout_version(log: Path) -> str:
    result = run(Command(["klayout", "-v"], timeout_s=60), log)
    return result.log.read_text().splitlines()[-1].strip()


def suite_root(manifest_dir: Path, manifest: SuiteManifest) -> Path:
    root = Path(manifest.root)
    return root if root.is_absolute() else (manifest_dir / root).resolve()


def load_suite(path: Path, check: bool = True) -> tuple[SuiteManifest, list[Problem]]:
    """The manifest and its problems; with `check`, every file's checksum is compared first."""
    manifest = read_manifest(path)
    manifest_dir = path if path.is_dir() else path.parent
    root = suite_root(manifest_dir, manifest)
    problems = []
    for entry in manifest.problems:
        folder = root / entry.folder
        if check and entry.sha256 and checksums(folder) != entry.sha256:
            raise InputError(f"{folder}: files differ from the suite manifest's checksums")
        problems.append(load_problem(folder, root))
    return manifest, problems
