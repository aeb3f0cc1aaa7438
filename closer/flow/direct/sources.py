"""What the front nodes read of a design, as plain data: its top, RTL files, include folders and
the config's parameter overrides (`DesignSources`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from closer.designs.model import Design, DesignPaths

SYSTEMVERILOG_SUFFIXES = (".sv", ".svh")


def param_value(value: int | str | bool) -> str:
    """A parameter override as SiliconCompiler's fileset holds it: booleans 1/0, strings quoted."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


@dataclass(frozen=True)
class DesignSources:
    name: str                              # the design's name (SiliconCompiler's design library)
    top: str
    rtl: tuple[Path, ...]                  # absolute paths, in design.toml order
    include_dirs: tuple[Path, ...]
    params: tuple[tuple[str, str], ...]    # (name, param_value(value)), sorted by name

    @property
    def systemverilog(self) -> bool:
        return any(p.suffix in SYSTEMVERILOG_SUFFIXES for p in self.rtl)

    @property
    def elaborated_name(self) -> str:
        """The elaborate node's output file: `<top>.sv` for SystemVerilog sources, else `<top>.v`."""
        return f"{self.top}.sv" if self.systemverilog else f"{self.top}.v"


def design_sources(design: Design, paths: DesignPaths, config: str) -> DesignSources:
    parameters = design.config(config).parameters
    return DesignSources(
        name=design.name, top=design.top,
        rtl=tuple(paths.rtl(design)), include_dirs=tuple(paths.include_dirs(design)),
        params=tuple((name, param_value(parameters[name])) for name in sorted(parameters)))
