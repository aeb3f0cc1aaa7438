"""`closer design show`: a design's resolved configuration (every table with its defaults, the
absolute files it names, its tasks.toml when it has one)."""

from __future__ import annotations

from pathlib import Path

import tomli_w

from closer.designs.model import load_design
from closer.errors import InputError


def resolved_config(name: str) -> dict:
    design, paths = load_design(name, check_files=False)
    config = design.model_dump(mode="json", exclude_none=True)
    files = {"folder": str(paths.root), "design_toml": str(paths.design_toml),
             "sdc": str(paths.sdc(design)), "targets": str(paths.targets(design))}
    if design.fetch is None:
        files["rtl"] = [str(p) for p in paths.rtl(design)]
    if design.oracle is not None:
        files["oracle_testbench"] = str(paths.resolve(design.oracle.testbench))
    config["resolved_files"] = files
    tasks_toml = paths.root / "tasks.toml"
    if tasks_toml.is_file():
        from closer.tasks.models import load_design_tasks

        try:
            tasks = load_design_tasks(tasks_toml)
        except InputError as exc:  # shown, not fatal: show is how an author finds it
            config["tasks"] = {"error": str(exc)}
        else:
            config["tasks"] = tasks.model_dump(mode="json", exclude_none=True)
            files["tasks_toml"] = str(tasks_toml)
    return config


def resolved_text(config: dict) -> str:
    return f"# resolved configuration of {config['design']['name']}\n" + tomli_w.dumps(_strings(config))


def _strings(value):
    """TOML has no null; paths and enums are already strings from model_dump(mode='json')."""
    if isinstance(value, dict):
        return {str(k): _strings(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strings(v) for v in value]
    return value if not isinstance(value, Path) else str(value)
