"""Placeholders in the commands of a tool configuration (closer.metered.config describes them)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

PLACEHOLDER = re.compile(r"\{(workspace|results|metrics|python|pdk_root)\}")
ARGS_PLACEHOLDER = "{args}"


def expand_argv(argv: list[str], values: dict[str, str], agent_args: list[str]) -> list[str]:
    """Substitute the known placeholders; other braces (Tcl, Yosys) are left untouched."""
    out: list[str] = []
    for arg in argv:
        if arg == ARGS_PLACEHOLDER:
            out.extend(agent_args)
        else:
            out.append(PLACEHOLDER.sub(lambda m: values[m.group(1)], arg))
    return out


def placeholder_values(workspace: Path, results: Path, metrics: Path, pdk_root: Path) -> dict[str, str]:
    return {"workspace": str(workspace), "results": str(results), "metrics": str(metrics),
            "python": sys.executable, "pdk_root": str(pdk_root)}
