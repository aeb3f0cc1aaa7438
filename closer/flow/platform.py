"""The sky130hd platform as SiliconCompiler objects, built from `pdk/sky130hd/platform.toml` and
files under PDK_ROOT (no lambdapdk, no network).

`Platform` is the typed form of platform.toml; `sc_library(platform, pdk_paths)` returns the
SiliconCompiler StdCellLibrary (with its PDK attached) the flowgraph's tasks read.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from siliconcompiler import PDK
from siliconcompiler.tools.openroad import OpenROADPDK, OpenROADStdCellLibrary
from siliconcompiler.tools.yosys import YosysStdCellLibrary

from closer.errors import InputError
from closer.flow.liberty_prep import cached_liberty_cells
from closer.paths import repo_paths
from closer.pdk import CORNERS, PdkPaths, pdk

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


def sc_library(platform: Platform | None = None, pdk_paths: PdkPaths | None = None):
    """The SiliconCompiler StdCellLibrary for the sky130hd platform, its PDK attached."""
    return Sky130HdLibrary(platform, pdk_paths)


def _resolve(platform: Platform | None, pdk_paths: PdkPaths | None) -> tuple[Platform, PdkPaths]:
    return platform or load_platform(), pdk_paths or pdk()


# SiliconCompiler pickles these objects into node processes and re-creates them from manifests by
# class path, so they are module-level classes whose constructors take no required arguments.
class Sky130HdPdk(OpenROADPDK, PDK):
    def __init__(self, platform: Platform | None = None, pdk_paths: PdkPaths | None = None) -> None:
        super().__init__()
        platform, pdk_paths = _resolve(platform, pdk_paths)
        info = platform.platform
        self.set_name(f"{info.name}_pdk")
        self.set_foundry("skywater")
        self.set_stackup(info.stackup)
        self.set_node(info.node_nm)
        self.set_dataroot("pdk_root", str(pdk_paths.root))
        with self.active_dataroot("pdk_root"), self.active_fileset("views.lef"):
            self.add_file(str(pdk_paths.tech_lef.relative_to(pdk_paths.root)), filetype="lef")
            self.add_aprtechfileset("openroad")
        self.set_aprroutinglayers(min="met1", max="met5")


class Sky130HdLibrary(YosysStdCellLibrary, OpenROADStdCellLibrary):
    def __init__(self, platform: Platform | None = None, pdk_paths: PdkPaths | None = None) -> None:
        super().__init__()
        platform, pdk_paths = _resolve(platform, pdk_paths)
        info = platform.platform
        lib_rel = Path(info.pdk) / "libs.ref" / info.library
        self.set_name(info.name)
        self.add_asic_pdk(Sky130HdPdk(platform, pdk_paths))
        self.add_asic_site(info.site)
        self.set_dataroot("pdk_root", str(pdk_paths.root))
        with self.active_dataroot("pdk_root"):
            for corner in platform.corners:
                with self.active_fileset(f"models.timing.{corner}.{info.delay_model}"):
                    self.add_file(str(lib_rel / "lib" / f"{info.library}__{corner}.lib"),
                                  filetype="liberty")
                    self.add_asic_libcornerfileset(corner, info.delay_model)
            with self.active_fileset("models.physical"):
                self.add_file(str(pdk_paths.cell_lef.relative_to(pdk_paths.root)), filetype="lef")
                self.add_file(str(pdk_paths.gds.relative_to(pdk_paths.root)), filetype="gds")
                self.add_asic_aprfileset()
            with self.active_fileset("models.sim"):
                for model in pdk_paths.verilog_models:
                    self.add_file(str(model.relative_to(pdk_paths.root)), filetype="verilog")
        for kind, cells in platform.cells.items():
            self.add_asic_celllist(kind, cells)
        self.add_asic_celllist("dontuse", dont_use_cells(pdk_paths, info.name))
        syn = platform.synthesis
        self.set_yosys_driver_cell(syn.driver_cell)
        self.set_yosys_buffer_cell(*syn.buffer_cell)
        self.set_yosys_tielow_cell(*syn.tielow_cell)
        self.set_yosys_tiehigh_cell(*syn.tiehigh_cell)
        self.set_yosys_abc(syn.abc_clock_multiplier, syn.abc_load_ff)
