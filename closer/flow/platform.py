"""The sky130hd platform: `Platform`, the typed form of `pdk/sky130hd/platform.toml`, and its
dont-use cells. SiliconCompiler's objects for it are in closer.flow.sc_library."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from closer.errors import InputError
from closer.flow.liberty_prep import cached_liberty_cells
from closer.paths import repo_paths
from closer.pdk import CORNERS, PdkPaths

CHECKS = ("setup", "hold", "power")


class PlatformInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    pdk: str
    library: str
    stackup: str
    node_nm: float
    site: str
    delay_model: str
    dont_use_file: Path


class CornerChecks(BaseModel):
    model_config = ConfigDict(extra="forbid")
    checks: list[str] = Field(description="setup, hold and/or power")


class SynthesisSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    corner: str
    driver_cell: str
    buffer_cell: tuple[str, str, str]
    tielow_cell: tuple[str, str]
    tiehigh_cell: tuple[str, str]
    abc_clock_multiplier: float
    abc_load_ff: float


class Platform(BaseModel):
    model_config = ConfigDict(extra="forbid")
    platform: PlatformInfo
    corners: dict[str, CornerChecks]
    synthesis: SynthesisSettings
    cells: dict[str, list[str]]

    def corners_with(self, check: str) -> list[str]:
        return [name for name, c in self.corners.items() if check in c.checks]


def platform_dir(name: str = "sky130hd") -> Path:
    return repo_paths().pdk_config / name


def load_platform(name: str = "sky130hd") -> Platform:
    path = platform_dir(name) / "platform.toml"
    if not path.is_file():
        raise InputError(f"no platform {name!r}: {path} does not exist")
    try:
        platform = Platform.model_validate(tomllib.loads(path.read_text()))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(f"key {'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                             for e in exc.errors())
        raise InputError(f"{path}: {problems}") from exc
    for corner, checks in platform.corners.items():
        if corner not in CORNERS:
            raise InputError(f"{path}: key corners.{corner}: not a PDK corner ({', '.join(CORNERS)})")
        for check in checks.checks:
            if check not in CHECKS:
                raise InputError(f"{path}: key corners.{corner}.checks: unknown check {check!r}")
    if platform.synthesis.corner not in platform.corners:
        raise InputError(f"{path}: key synthesis.corner: {platform.synthesis.corner!r} is not a "
                         f"[corners] entry")
    return platform


def dont_use_patterns(name: str = "sky130hd") -> list[str]:
    path = platform_dir(name) / load_platform(name).platform.dont_use_file
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


@lru_cache(maxsize=8)
def liberty_cells(liberty: Path) -> tuple[str, ...]:
    """Cell names declared in a Liberty file, scanned once per file content (the scan of 11 MB
    takes 0.2-0.5 s; the cache entry is keyed by the file's SHA-256, closer.flow.liberty_prep)."""
    return cached_liberty_cells(liberty, scan_liberty_cells)


def scan_liberty_cells(liberty: Path) -> list[str]:
    """Cell names declared in a Liberty file (a bytes scan)."""
    names = re.findall(rb'\n\s*cell\s*\(\s*"?([^")\s]+)', liberty.read_bytes())
    return [n.decode() for n in names]


def dont_use_cells(pdk_paths: PdkPaths, name: str = "sky130hd") -> list[str]:
    """The dont-use globs expanded against the tt Liberty; a glob matching nothing is an error."""
    cells = liberty_cells(pdk_paths.liberty("tt_025C_1v80"))
    chosen: list[str] = []
    for pattern in dont_use_patterns(name):
        matched = fnmatch.filter(cells, pattern)
        if not matched:
            raise InputError(f"{platform_dir(name) / 'dont_use.txt'}: pattern {pattern!r} matches "
                             f"no cell of {pdk_paths.liberty('tt_025C_1v80')}")
        chosen.extend(m for m in matched if m not in chosen)
    return chosen
