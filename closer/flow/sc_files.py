"""SiliconCompiler's installed files, used without importing the package (its package body costs
about a second): its folder (`importlib.util.find_spec` locates a top-level package without
running it) and its standard-library-only modules loaded from their files."""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

from closer.errors import ToolMissing


@lru_cache(maxsize=1)
def siliconcompiler_root() -> Path:
    """The installed SiliconCompiler package folder."""
    spec = importlib.util.find_spec("siliconcompiler")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ToolMissing("SiliconCompiler is not installed: the synthesis node runs its Yosys "
                          "script (tools/yosys/scripts/sc_synth_asic.tcl)")
    return Path(locations[0])


def load_file(name: str, relative: str):
    """The module at `relative` (to the package folder) run as a module of its own `name`."""
    path = siliconcompiler_root() / relative
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ToolMissing(f"{path}: cannot load SiliconCompiler's file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
