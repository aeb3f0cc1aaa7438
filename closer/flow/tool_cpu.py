"""The CPU time of a node's tool, recorded by the node itself.

SiliconCompiler records a node's task time and the tool's wall time (`exetime`); neither says
what the tool computed on a loaded or noisy machine. The node process is forked for this node
alone, so after the tool has exited, the CPU time of its reaped children is the tool's (with what
the tool ran, such as Yosys's ABC, and a version check the cache did not answer). `post_process`
writes it to `tool_cpu.json` in the node folder; flow.json reports it as `exe_cpu_s`, and
bench/flow_times.py subtracts it from the flow's CPU to get the flow's own cost in the same run.
"""

from __future__ import annotations

import json
import math
import resource
from pathlib import Path

TOOL_CPU_FILE = "tool_cpu.json"


class RecordsToolCpu:
    """Mixin for a SiliconCompiler Task that runs an executable (before the Task class in the
    bases); its post_process runs in the node folder."""

    def post_process(self) -> None:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        Path(TOOL_CPU_FILE).write_text(json.dumps({"cpu_s": round(usage.ru_utime + usage.ru_stime, 3)}))
        super().post_process()


def tool_cpu_s(node_dir: Path) -> float | None:
    """The recorded CPU seconds of the node's tool; None when the node wrote none (a Python
    task, or a node from before this record) or the file holds anything but a finite number
    of seconds (a run folder can be edited between runs, and flow.json must stay valid JSON)."""
    try:
        value = json.loads((node_dir / TOOL_CPU_FILE).read_text())["cpu_s"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None
