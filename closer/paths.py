"""Paths of the repository layout. No other module builds these paths by hand."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class RepoPaths:
    """The checkout::

        <root>/
          closer/        the package (closer/schemas/ holds JSON Schemas)
          designs/<name>/design.toml, RTL, SDC, targets
          flows/         flow definitions
          pdk/           platform config for sky130hd
          oracles/       cocotb testbenches, reference models, mutants
          tasks/         task templates
          docs/, bench/, tests/
          .venv/         created by scripts/bootstrap.sh
    """

    root: Path

    @property
    def designs(self) -> Path:
        return self.root / "designs"

    @property
    def flows(self) -> Path:
        return self.root / "flows"

    @property
    def pdk_config(self) -> Path:
        return self.root / "pdk"

    @property
    def oracles(self) -> Path:
        return self.root / "oracles"

    @property
    def tasks(self) -> Path:
        return self.root / "tasks"

    @property
    def docs(self) -> Path:
        return self.root / "docs"

    @property
    def venv(self) -> Path:
        return self.root / ".venv"

    @property
    def schemas(self) -> Path:
        return _PACKAGE_DIR / "schemas"

    def design_dir(self, name: str) -> Path:
        return self.designs / name


def repo_paths() -> RepoPaths:
    """The checkout this package was installed from (editable install)."""
    return RepoPaths(_PACKAGE_DIR.parent)


def default_pdk_root() -> Path:
    """`$PDK_ROOT`, else `../shared/pdk` beside the checkout (here, not in closer.pdk, so that a
    metered call finds the PDK without importing the PDK checks)."""
    env = os.environ.get("PDK_ROOT")
    if env:
        return Path(env)
    return (repo_paths().root.parent / "shared" / "pdk").resolve()


def schema_path(name: str) -> Path:
    """Path of a JSON Schema shipped in `closer/schemas/`, e.g. `schema_path("targets")`."""
    return _PACKAGE_DIR / "schemas" / f"{name}.schema.json"


CACHE_ENV = "CLOSER_CACHE_DIR"  # overrides the platformdirs user cache root (tests, CI)


def user_cache_root() -> Path:
    """Closer's cache folder outside any checkout or run: `$CLOSER_CACHE_DIR`, else the platformdirs
    user cache (`~/.cache/closer` on Linux)."""
    import os

    import platformdirs

    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else platformdirs.user_cache_path("closer")
