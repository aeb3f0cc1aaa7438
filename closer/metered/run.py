"""The start of a metered run and its header (`run.json`): budget numbers, baseline, provenance."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from closer import __version__
from closer.errors import InputError, ToolMissing, ToolTimeout
from closer.hashing import sha256
from closer.metered.argv import expand_argv, placeholder_values
from closer.metered.paths import WorkspacePaths
from closer.metered.snapshot import copy_pristine, take_snapshot
from closer.paths import default_pdk_root
from closer.procs import Command, run
from closer.toolclass import ToolClass

if TYPE_CHECKING:  # the models are imported where a run starts or its header is read strictly:
    # a metered call reads the header as its view (closer.metered.views), without pydantic
    from closer.metered.config import ToolCommands
    from closer.trajectory.record import RunInfo


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def start_run(ws: WorkspacePaths, *, started_at: datetime | None = None,
              run_id: str | None = None) -> RunInfo:
    """Begin a run in a prepared workspace: resolve the budget, snapshot the starting surface,
    probe tool versions, write run.json. The wall clock starts at `started_at` (default now)."""
    from closer.budget import resolve_budget
    from closer.metered.config import load_tool_config
    from closer.trajectory.record import Provenance, RunInfo

    if ws.run_info.exists():
        raise InputError(f"{ws.run_info} exists: this workspace's run has already started")
    config = load_tool_config(ws.tools_config)
    budget = resolve_budget(config.budget)
    baseline = take_snapshot(ws, config.surface)
    copy_pristine(ws)
    provenance = Provenance(
        closer_version=__version__,
        tool_versions={t.value: probe_version(ws, t, cmds) for t, cmds in config.tools.items()},
        pdk_corner=config.run.pdk_corner,
        design=config.run.design,
        design_revision=baseline.digest,
    )
    info = RunInfo(
        run_id=run_id or uuid.uuid4().hex[:12],
        workspace=str(ws.root),
        started_at=started_at or utc_now(),  # after the version probes: their time is not the agent's
        budget=budget,
        provenance=provenance,
        baseline_snapshot=baseline.digest,
        tools_config_sha256=file_sha256(ws.tools_config),
    )
    ws.run_info.write_text(info.model_dump_json(indent=2) + "\n")
    return info


def file_sha256(path: Path) -> str:
    return sha256(path.read_bytes()).hexdigest()


def load_run_info(ws: WorkspacePaths) -> RunInfo:
    from closer.inputs import load_json_model
    from closer.trajectory.record import RunInfo

    if not ws.run_info.exists() and not ws.run_info.is_symlink():
        raise InputError(f"{ws.run_info} does not exist: the run has not been started")
    return load_json_model(ws.run_info, RunInfo, "run header")


def probe_version(ws: WorkspacePaths, tool: ToolClass, cmds: ToolCommands) -> str:
    """First line of the tool's version output (`version` argv, else `<argv0> --version`)."""
    values = placeholder_values(ws.root, ws.versions, ws.versions / f"{tool.value}.json", default_pdk_root())
    argv = expand_argv(cmds.version or [cmds.commands[0][0], "--version"], values, [])
    log = ws.versions / f"{tool.value}.log"
    try:
        done = run(Command(argv, cwd=ws.root, timeout_s=60), log, check=False)
    except (ToolMissing, ToolTimeout) as exc:
        return f"unknown ({exc})"
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines()[1:] if ln.strip()]
    if done.returncode != 0 or not lines:
        return f"unknown ({' '.join(argv)} exited {done.returncode})"
    return lines[0]
