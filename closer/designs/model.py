"""A design folder: `designs/<name>/design.toml`, its RTL, SDC and reward targets.

`Design` is the pydantic model of design.toml (one model per TOML table); `DesignPaths` is the one
class that knows the folder layout; `load_design` reads and validates a folder and names the file
and key of anything wrong.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from closer.errors import InputError
from closer.flow.settings import SynthSettings
from closer.paths import repo_paths
from closer.tomlio import describe_validation_error, load_toml
from closer.sdc.policy import SdcException, SdcPolicy

HDL_SUFFIXES = {".v": "verilog", ".vh": "verilog", ".sv": "systemverilog", ".svh": "systemverilog"}

# Every table: unknown keys refused, no NaN/inf, no type coercion ("10" or true is no period).
_STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
# An HDL identifier (a top module or a port)
_IDENT = r"^[A-Za-z_][A-Za-z0-9_$]*$"


class DesignInfo(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1, description="Design name; equals the folder name")
    top: str = Field(pattern=_IDENT, description="Top module")
    description: str = Field("", description="One line for people")


class Sources(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # paths come as TOML strings
    rtl: list[Path] = Field(default_factory=list,
                            description="RTL files relative to the design folder, in compile order")
    include_dirs: list[Path] = Field(default_factory=list,
                                     description="Include directories relative to the design folder")

    @field_validator("rtl")
    @classmethod
    def _known_language(cls, files: list[Path]) -> list[Path]:
        for f in files:
            if f.suffix not in HDL_SUFFIXES:
                raise ValueError(f"{f}: unknown HDL suffix {f.suffix!r}; "
                                 f"known: {', '.join(sorted(HDL_SUFFIXES))}")
        return files


class Clock(BaseModel):
    model_config = _STRICT
    port: str = Field(pattern=_IDENT, description="Top-level clock input port")
    period_ns: float = Field(gt=0, le=1e6, description="Clock period in ns (the SDC must agree)")


class Constraints(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    sdc: Path = Field(description="SDC file relative to the design folder")
    sdc_exceptions: list[SdcException] = Field(
        default_factory=list, description="timing exceptions the SDC may use (closer.sdc; default none)")

    def sdc_policy(self) -> SdcPolicy:
        return SdcPolicy(allow=frozenset(self.sdc_exceptions))


class MacroOrient(StrEnum):
    """DEF orientations a macro may take: those closer.physical places, draws and checks
    (closer.physical.floorplan.macros.ORIENTS; the rows' own two)."""

    N = "N"     # as drawn
    FS = "FS"   # mirrored about the x axis


class MacroPlacementConfig(BaseModel):
    """[[configs.<name>.macro_placements]]: where the floorplan puts one macro instance
    (closer.physical.floorplan.macros.MacroPlacement)."""

    model_config = _STRICT
    instance: str = Field(min_length=1, description=(
        "the macro's instance name in the synthesized (flattened) netlist, hierarchy joined by "
        "`.`, e.g. `u_buf.u_mem.g_macro.g_bank[0].u_sram`"))
    x_um: float = Field(ge=0, le=1e5, description="lower-left corner x, µm from the core's lower-left corner")
    y_um: float = Field(ge=0, le=1e5, description="lower-left corner y, µm from the core's lower-left corner")
    orient: MacroOrient = Field(MacroOrient.N, strict=False, description="N or FS")
    halo_um: float = Field(10.0, ge=0, le=1e3, description="standard-cell keep-out around the macro, µm")


class DesignConfig(BaseModel):
    """One named configuration: top-level parameters, the PDK macros the RTL instantiates and
    their placement, plus fields other features add."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)
    parameters: dict[str, int | str | bool] = Field(default_factory=dict,
                                                    description="Parameters of the top module")
    macros: list[str] = Field(default_factory=list, description=(
        "hard macros (PDK abstracts: $PDK_ROOT/sky130A/libs.ref/sky130_sram_macros) the RTL "
        "instantiates; synthesis and STA read their Liberty, they stay black-box instances"))
    macro_placements: list[MacroPlacementConfig] = Field(default_factory=list, description=(
        "where the floorplan puts each macro instance (the physical flow places unlisted ones)"))

    @field_validator("macros")
    @classmethod
    def _macro_names(cls, macros: list[str]) -> list[str]:
        import re

        for name in macros:
            if not re.fullmatch(_IDENT, name):
                raise ValueError(f"{name!r} is not a cell name")
        if len(set(macros)) != len(macros):
            raise ValueError("a macro is listed twice")
        return macros

    @model_validator(mode="after")
    def _placements_need_macros(self) -> DesignConfig:
        if self.macro_placements and not self.macros:
            raise ValueError("macro_placements without macros: list the macros the RTL instantiates")
        instances = [p.instance for p in self.macro_placements]
        twice = sorted({i for i in instances if instances.count(i) > 1})
        if twice:
            raise ValueError(f"macro_placements: instance {twice[0]!r} placed twice")
        return self


class Targets(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    file: Path = Field(Path("targets.toml"), description="Reward targets, relative to the folder")


class Physical(SynthSettings):
    """[physical]: the flow settings: synthesis (closer.flow.settings.SynthSettings, inherited)
    and the back half's floorplan and routing knobs (closer.physical.FloorplanConfig, ...)."""

    model_config = _STRICT
    core_utilization: float = Field(0.30, ge=0.05, le=0.9, description="cell area / core area")
    aspect_ratio: float = Field(1.0, gt=0.1, le=10.0, description="core height / width")
    router_passes: int = Field(15, ge=0, le=15, description="qrouter stage2 rip-up passes (its schedule)")
    repair_rounds: int = Field(8, ge=0, le=64, description="search-and-repair batch rounds (0: no repair); "
                               "up to 3x as many single-problem rounds follow")
    timing_repair_rounds: int = Field(2, ge=0, le=4, description=(
        "post-route timing repair rounds (setup and max-slew/max-cap sizing, reroute, sign-off "
        "again; 0: none, also none of the sizing rounds a design of 3,000 instances and more gets "
        "on its routed layout before sign-off, docs/physical.md `RoutedSetupRepair`)"))
    corners: list[str] | None = Field(None, min_length=1, description=(
        "STA corners of the physical flow (closer.pdk.ALL_CORNERS; default: closer.pdk.CORNERS); "
        "a task's physical conditions set it"))
    place_seed: int = Field(0, ge=0, description="placer IO-order seed (0: name order); a task's "
                            "physical conditions set it")

    @field_validator("corners")
    @classmethod
    def _known_corners(cls, corners: list[str] | None) -> list[str] | None:
        from closer.pdk import ALL_CORNERS

        unknown = [c for c in corners or [] if c not in ALL_CORNERS]
        if unknown:
            raise ValueError(f"unknown corner(s) {unknown}; known: {', '.join(ALL_CORNERS)}")
        if corners is not None and "tt_025C_1v80" not in corners:
            raise ValueError("must include the signoff corner tt_025C_1v80")
        return corners


class OracleInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    testbench: Path = Field(description="The reference cocotb test module, relative to the design "
                            "folder (default: oracles/<name>/test_<name>.py)")


class Design(BaseModel):
    """The whole design.toml."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    design: DesignInfo
    sources: Sources = Field(default_factory=Sources)
    clock: Clock
    constraints: Constraints
    configs: dict[str, DesignConfig] = Field(default_factory=lambda: {"default": DesignConfig()})
    targets: Targets = Field(default_factory=Targets)
    physical: Physical = Field(default_factory=Physical)
    oracle: OracleInfo | None = Field(None, description="The reference oracle (mutation scoring)")
    fetch: dict[str, Any] | None = Field(
        None, description="Upstream source recipe (closer.designs.fetch reads it)")

    @field_validator("fetch")
    @classmethod
    def _valid_recipe(cls, fetch: dict[str, Any] | None) -> dict[str, Any] | None:
        from closer.designs.fetch import FetchSpec

        if fetch is not None:
            FetchSpec.model_validate(fetch)  # the pinned commit, the file list and the digests
        return fetch

    @field_validator("configs")
    @classmethod
    def _has_default(cls, configs: dict[str, DesignConfig]) -> dict[str, DesignConfig]:
        if "default" not in configs:
            raise ValueError("needs a [configs.default] table")
        return configs

    @property
    def name(self) -> str:
        return self.design.name

    @property
    def top(self) -> str:
        return self.design.top

    def config(self, name: str) -> DesignConfig:
        if name not in self.configs:
            raise InputError(f"design {self.name!r} has no config {name!r}; "
                             f"known: {', '.join(sorted(self.configs))}")
        return self.configs[name]


@dataclass(frozen=True)
class DesignPaths:
    """A design folder::

        designs/<name>/
          design.toml            the Design model
          rtl/*.v|*.sv           our own RTL (or a [fetch] recipe for upstream RTL)
          constraints/<name>.sdc
          targets.toml           reward targets (`closer reward` reads it)
    """

    root: Path

    @property
    def design_toml(self) -> Path:
        return self.root / "design.toml"

    def resolve(self, relative: Path) -> Path:
        return (self.root / relative).resolve()

    def rtl(self, design: Design) -> list[Path]:
        if design.fetch is not None:
            return self._fetched_rtl(design)
        return [self.resolve(p) for p in design.sources.rtl]

    def include_dirs(self, design: Design) -> list[Path]:
        return [self.resolve(p) for p in design.sources.include_dirs]

    def sdc(self, design: Design) -> Path:
        return self.resolve(design.constraints.sdc)

    def targets(self, design: Design) -> Path:
        return self.resolve(design.targets.file)

    def _fetched_rtl(self, design: Design) -> list[Path]:
        from closer.designs import fetch  # the PicoRV32 engineer's module

        src = fetch.local_source_available(design.name)
        if src is None:
            raise InputError(f"design {design.name!r} uses upstream RTL that is not fetched yet: "
                             f"run `closer design fetch {design.name}`")
        return [src / rel for rel in design.fetch.get("rtl", [])]


SEARCH_PATH_ENV = "CLOSER_DESIGN_PATH"  # os.pathsep-separated folders that hold design folders


def design_search_path() -> list[Path]:
    """Where a bare design name is looked up, first match wins: each folder of
    $CLOSER_DESIGN_PATH in order, then this checkout's designs/."""
    extra = [Path(p).expanduser() for p in os.environ.get(SEARCH_PATH_ENV, "").split(os.pathsep) if p]
    return [*extra, repo_paths().designs]


def looks_like_path(name_or_path: str | Path) -> bool:
    text = str(name_or_path)
    return isinstance(name_or_path, Path) or os.sep in text or text.startswith(".")


def design_dir(name_or_path: str | Path) -> Path:
    """A design folder: a path to a folder holding design.toml, or a bare name looked up in
    design_search_path()."""
    path = Path(name_or_path)
    if (path / "design.toml").is_file():
        return path.resolve()
    if looks_like_path(name_or_path):
        raise InputError(f"design folder {path}: no {path / 'design.toml'}")
    for folder in design_search_path():
        if (folder / str(name_or_path) / "design.toml").is_file():
            return (folder / str(name_or_path)).resolve()
    searched = ", ".join(str(f) for f in design_search_path())
    raise InputError(f"unknown design {str(name_or_path)!r}: no {name_or_path}/design.toml in "
                     f"{searched} (${SEARCH_PATH_ENV} adds folders; known: "
                     f"{', '.join(list_designs()) or 'none'})")


def load_design(name_or_path: str | Path, check_files: bool = True) -> tuple[Design, DesignPaths]:
    """Read and validate a design folder; InputError names the file and key of any problem."""
    paths = DesignPaths(design_dir(name_or_path))
    toml_path = paths.design_toml
    data = load_toml(toml_path, "{path}: missing", "design file")
    try:
        design = Design.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"{toml_path}: {describe_validation_error(exc)}") from None
    if design.design.name != paths.root.name:
        raise InputError(f"{toml_path}: key design.name is {design.design.name!r} but the folder "
                         f"is {paths.root.name!r}")
    if design.fetch is None and not design.sources.rtl:
        raise InputError(f"{toml_path}: key sources.rtl: empty and no [fetch] recipe")
    if check_files:
        _check_files(design, paths)
    return design, paths


def _check_files(design: Design, paths: DesignPaths) -> None:
    toml_path = paths.design_toml
    for i, rel in enumerate(design.sources.rtl):
        if not paths.resolve(rel).is_file():
            raise InputError(f"{toml_path}: key sources.rtl[{i}]: {paths.resolve(rel)} does not exist")
    for i, rel in enumerate(design.sources.include_dirs):
        if not paths.resolve(rel).is_dir():
            raise InputError(f"{toml_path}: key sources.include_dirs[{i}]: "
                             f"{paths.resolve(rel)} is not a directory")
    if not paths.sdc(design).is_file():
        raise InputError(f"{toml_path}: key constraints.sdc: {paths.sdc(design)} does not exist")
    if design.fetch is None and not design.sources.rtl:
        raise InputError(f"{toml_path}: key sources.rtl: empty and no [fetch] recipe")
    _check_macros(design, toml_path)


def _check_macros(design: Design, toml_path: Path) -> None:
    """Every config's macros have abstracts (LEF and Liberty) in the PDK."""
    from closer.paths import default_pdk_root
    from closer.pdk import PdkPaths

    pdk_paths = PdkPaths(default_pdk_root())
    for config_name, config in design.configs.items():
        for i, name in enumerate(config.macros):
            if pdk_paths.macro(name) is None:
                known = ", ".join(pdk_paths.macro_names()) or "none"
                raise InputError(f"{toml_path}: key configs.{config_name}.macros[{i}]: unknown macro "
                                 f"{name!r}: no LEF and Liberty in {pdk_paths.sram_macros} (known: {known})")


def list_designs() -> list[str]:
    """Every design name the search path finds (the first folder of a name wins)."""
    return sorted(dict.fromkeys(p.parent.name for folder in design_search_path()
                                for p in folder.glob("*/design.toml")))
