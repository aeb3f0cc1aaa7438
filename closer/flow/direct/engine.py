"""The direct engine: the classic backend's chain of nodes run in this process, in order, each
reused when its key is unchanged (closer.flow.direct.node).

A node is a `NodeSpec`: its settings and input files (the reuse key), the files it must leave
(without them it is not reused), its tool and how to run it. Tools run through closer.procs (one
place that runs processes, with the node's timeout); the elaborate node runs pyslang in this
process and the pnr node closer.physical, as SiliconCompiler's forked nodes did.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from closer.designs.model import Design
from closer.errors import ToolError
from closer.flow.cache import stat_key
from closer.flow.direct import node as nodes
from closer.flow.direct.sources import DesignSources
from closer.flow.paths import FlowPaths
from closer.flow.platform import Platform
from closer.pdk import MacroAbstract, PdkPaths

_ERROR_LINE = re.compile(r"^(%Error|ERROR|Error)\b.*")


@dataclass(frozen=True)
class FrontContext:
    """Everything the nodes read: the design's sources, the platform and PDK, the run folder."""
    design: Design
    config: str
    sources: DesignSources
    platform: Platform
    pdk_paths: PdkPaths
    flow_paths: FlowPaths
    sdc: Path                       # the canonical SDC (closer.sdc) every node reads
    macros: list[MacroAbstract]
    platform_revision: str
    timeout_s: float


@dataclass
class NodeSpec:
    step: str
    tool: str
    settings: dict
    inputs: dict[str, Path]                 # hashed by content
    pdk_files: list[Path]                   # hashed by path, size and mtime (not agent input)
    outputs: list[str]                      # relative to the node folder
    version: Callable[[], str | None]
    # runs the node in its fresh folder; returns the tool's closer.procs.Completed (or an object
    # with its wall_s, cpu_s and peak_rss_mb, None where unknown: closer.flow.direct.specs.InProcess)
    run: Callable[[Path], object]
    copy_in: dict[str, Path] = field(default_factory=dict)   # inputs/<name> <- file


class NodeFailed(ToolError):
    pass


class DirectEngine:
    """Runs the nodes of one flow run; remembers which ran (the others were reused)."""

    def __init__(self, ctx: FrontContext, on_node: Callable[[str, bool], None] | None = None) -> None:
        self.ctx = ctx
        self.on_node = on_node          # told each step as it is reused (True) or starts to run
        self.ran: set[str] = set()
        self.current: str | None = None

    def run_to(self, steps: list[str], abc: str | None) -> None:
        from closer.flow.direct import specs

        for step in steps:
            self._node(specs.spec(step, self.ctx, abc))
        self.current = None

    def _node(self, spec: NodeSpec) -> None:
        folder = self.ctx.flow_paths.node_dir(spec.step)
        version = spec.version()
        key = nodes.node_key(spec.step, {**spec.settings, "pdk_files": [_stat(p) for p in spec.pdk_files]},
                             spec.inputs, version, self.ctx.platform_revision)
        reused = nodes.reusable(folder, key, [folder / o for o in spec.outputs])
        if self.on_node is not None:
            self.on_node(spec.step, reused)
        if reused:
            return
        self.current = spec.step
        start = time.monotonic()
        nodes.fresh_node(folder)
        for name, source in spec.copy_in.items():
            shutil.copyfile(source, folder / "inputs" / name)
        log = self.ctx.flow_paths.node_log(spec.step)
        try:
            done = spec.run(folder)
        except ToolError as exc:
            raise self._failed(spec, log, str(exc)) from None
        except Exception as exc:   # a node's own failure (parse error, bad placement): named, logged
            with open(log, "a") as handle:
                handle.write(f"Error: {spec.step}: {exc}\n")
            raise self._failed(spec, log, f"Error: {spec.step}: {exc}") from None
        missing = [o for o in spec.outputs if not (folder / o).is_file()]
        if missing:
            raise self._failed(spec, log, f"Error: {spec.step} wrote no {', '.join(missing)}")
        self.ran.add(spec.step)
        nodes.write_record(folder, nodes.NodeRecord(
            step=spec.step, key=key, tool=spec.tool, tool_version=version,
            wall_s=round(time.monotonic() - start, 3),
            exe_s=_rounded(done, "wall_s", 3), exe_cpu_s=_rounded(done, "cpu_s", 3),
            peak_mem_mb=_rounded(done, "peak_rss_mb", 1)))

    def _failed(self, spec: NodeSpec, log: Path, fallback: str) -> NodeFailed:
        lines = []
        if log.is_file():
            lines = [m.group(0) for m in map(_ERROR_LINE.match, log.read_text(errors="replace")
                                             .splitlines()) if m][:12]
        detail = "\n".join(lines) if lines else fallback.splitlines()[0]
        return NodeFailed(f"step {spec.step} ({spec.tool}) failed; log: {log}\n{detail}")


def _rounded(done, name: str, digits: int) -> float | None:
    value = getattr(done, name, None)
    return round(value, digits) if value is not None else None


def _stat(path: Path) -> str:
    return stat_key(path) if path.exists() else f"{path}\0absent"
