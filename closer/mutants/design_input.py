"""The part of `designs/<name>/design.toml` that mutation scoring needs.

Read here with `tomllib` (the full Design model lives in `closer.designs`); every error names the
file and the key. The optional `[oracle] testbench` key names the design's reference cocotb test
module, relative to the design folder; without it the convention is
`oracles/<name>/test_<name>.py`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from closer.tomlio import load_toml
from closer.errors import InputError
from closer.paths import repo_paths


@dataclass(frozen=True)
class DesignUnderTest:
    name: str
    top: str
    root: Path  # the design folder
    sources: list[str]  # relative to source_root, compile order
    include_dirs: list[str]
    config: str
    parameters: dict[str, object]
    oracle: Path | None  # reference cocotb test module
    source_root: Path = None  # type: ignore[assignment]  # the design folder, or a fetched tree

    def __post_init__(self) -> None:
        if self.source_root is None:
            object.__setattr__(self, "source_root", self.root)

    def source_paths(self) -> list[Path]:
        return [self.source_root / s for s in self.sources]

    def include_paths(self) -> list[Path]:
        return [self.source_root / d for d in self.include_dirs]

    def revision(self) -> str:
        """sha256 over the source texts, the top and the configuration's parameters."""
        digest = hashlib.sha256()
        for rel in self.sources:
            digest.update(rel.encode() + b"\0" + (self.source_root / rel).read_bytes() + b"\0")
        digest.update(f"{self.top}\0{sorted(self.parameters.items())}".encode())
        return digest.hexdigest()


def resolve_design_dir(design: str) -> Path:
    """A design is a folder path or a name on the design search path (closer.designs.model)."""
    from closer.designs.model import design_dir

    return design_dir(design)


def load_design(design: str, config: str = "default") -> DesignUnderTest:
    root = resolve_design_dir(design)
    toml_path = root / "design.toml"
    data = load_toml(toml_path, "{path} does not exist", "design.toml")

    def need(table: str, key: str, kind: type):
        value = data.get(table, {}).get(key)
        if not isinstance(value, kind):
            raise InputError(f"{toml_path}: [{table}] {key} is missing or not a {kind.__name__}")
        return value

    name = need("design", "name", str)
    top = need("design", "top", str)
    sources = need("sources", "rtl", list)
    source_root = root
    if not sources and "fetch" in data:  # upstream RTL fetched into the cache (`closer design fetch`)
        source_root, sources = _fetched_sources(name, data, toml_path)
    if not sources or not all(isinstance(s, str) for s in sources):
        raise InputError(f"{toml_path}: [sources] rtl must be a non-empty list of paths")
    for rel in sources:
        if not (source_root / rel).is_file():
            raise InputError(f"{toml_path}: [sources] rtl names {rel}, which does not exist in {source_root}")
    include_dirs = data.get("sources", {}).get("include_dirs", [])
    configs = data.get("configs", {"default": {"parameters": {}}})
    if config not in configs:
        raise InputError(f"{toml_path}: no [configs.{config}] (have: {', '.join(sorted(configs))})")
    parameters = configs[config].get("parameters", {})
    if not isinstance(parameters, dict):
        raise InputError(f"{toml_path}: [configs.{config}] parameters must be a table")
    return DesignUnderTest(name, top, root, list(sources), list(include_dirs), config,
                           dict(parameters), _find_oracle(root, name, data, toml_path), source_root)


def _fetched_sources(name: str, data: dict, toml_path: Path) -> tuple[Path, list]:
    from closer.designs.fetch import local_source_available, unavailable_reason

    src = local_source_available(name)
    if src is None:
        raise InputError(f"{toml_path}: {unavailable_reason(name)}")
    return src, list(data["fetch"].get("rtl", []))


def _find_oracle(root: Path, name: str, data: dict, toml_path: Path) -> Path | None:
    declared = data.get("oracle", {}).get("testbench")
    if declared is not None:
        path = (root / declared).resolve()
        if not path.is_file():
            raise InputError(f"{toml_path}: [oracle] testbench names {declared}, which does not exist")
        return path
    conventional = repo_paths().oracles / name / f"test_{name}.py"
    return conventional if conventional.is_file() else None
