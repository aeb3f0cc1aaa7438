"""Run one tool class's commands (commands as data) and collect its public metrics.

Shared by the metered call and by replay. Tool trouble is an outcome, never an exception:
a missing program is `infra_error`, a time-out `timeout`, a non-zero exit `tool_error`.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from closer.inputs import parse_json, read_bytes
from closer.errors import InputError, ToolMissing, ToolTimeout
from closer.metered.argv import expand_argv, placeholder_values
from closer.metered.estimator import RewardEstimate, RewardEstimator
from closer.paths import default_pdk_root
from closer.procs import Command, run
from closer.toolclass import ToolClass
from closer.trajectory.outcome import Outcome

if TYPE_CHECKING:  # only brokered calls pass a sandbox; a standalone call does not import it
    from closer.metered.config import ToolCommands
    from closer.metered.views import ToolCommandsView
    from closer.sandbox.tools import ToolSandbox
    from closer.trajectory.record import MetricValue


@dataclass
class ToolRun:
    outcome: Outcome
    message: str = ""
    exit_codes: list[int] = field(default_factory=list)
    metrics: dict[str, MetricValue] = field(default_factory=dict)
    wall_s: float = 0.0
    peak_rss_mb: float | None = None
    logs: list[Path] = field(default_factory=list)


def execute_tool(root: Path, cmds: ToolCommands | ToolCommandsView, args: list[str], results_dir: Path,
                 timeout_s: float, sandbox: ToolSandbox | None = None) -> ToolRun:
    """Run a tool class's commands in `root`, outputs in `results_dir`; never raises for tool
    trouble. With a `sandbox` each command runs inside it (closer.sandbox.tools)."""
    results_dir.mkdir(parents=True, exist_ok=True)
    metrics_path = results_dir / cmds.metrics_file
    values = placeholder_values(root, results_dir, metrics_path, default_pdk_root())
    result = ToolRun(Outcome.OK)
    start = time.monotonic()
    for index, argv in enumerate(cmds.commands, start=1):
        left = timeout_s - (time.monotonic() - start)
        log = results_dir / f"cmd{index}.log"
        result.logs.append(log)
        expanded = expand_argv(argv, values, args)
        command = Command(sandbox.wrap(expanded, cwd=root) if sandbox else expanded, cwd=root, env=cmds.env,
                          timeout_s=max(left, 0.001))
        try:
            done = run(command, log, check=False)
        except ToolMissing as exc:
            result.outcome, result.message = Outcome.INFRA_ERROR, str(exc)
            break
        except ToolTimeout as exc:
            result.outcome, result.message = Outcome.TIMEOUT, str(exc)
            break
        except OSError as exc:
            result.outcome, result.message = Outcome.INFRA_ERROR, f"{command.argv[0]}: {exc}"
            break
        result.exit_codes.append(done.returncode)
        result.peak_rss_mb = max(result.peak_rss_mb or 0.0, done.peak_rss_mb)
        if done.returncode != 0:
            result.outcome = Outcome.TOOL_ERROR
            result.message = f"command {index} ({expanded[0]}) exited with {done.returncode}; log: {log}"
            break
    result.wall_s = time.monotonic() - start
    if result.outcome in (Outcome.OK, Outcome.TOOL_ERROR):
        _collect_metrics(result, cmds, metrics_path)
    return result


def _collect_metrics(result: ToolRun, cmds: ToolCommands | ToolCommandsView, metrics_path: Path) -> None:
    if metrics_path.exists() or metrics_path.is_symlink():
        try:
            data = parse_json(read_bytes(metrics_path, "metrics file"))
            if not isinstance(data, dict):
                raise ValueError("must be a JSON object of ORFS-style metric keys")
            result.metrics.update(data)
        except (ValueError, InputError) as exc:
            result.outcome = Outcome.TOOL_ERROR
            result.message = (result.message + "; " if result.message else "") + f"{metrics_path}: {exc}"
    if cmds.log_metrics:
        text = "\n".join(log.read_text(errors="replace") for log in result.logs if log.exists())
        for key, pattern in cmds.log_metrics.items():
            matches = re.findall(pattern, text)
            if matches:
                last = matches[-1]
                result.metrics[key] = _number(last[0] if isinstance(last, tuple) else last)


def _number(text: str) -> MetricValue:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def estimate_reward(estimator: RewardEstimator, tool: ToolClass, tool_run: ToolRun,
                    results_dir: Path) -> RewardEstimate | None:
    try:
        return estimator(tool, dict(tool_run.metrics), results_dir)
    except Exception as exc:  # a broken estimator must not lose the call's record
        tool_run.message = f"reward estimator failed: {type(exc).__name__}: {exc}"
        return None
