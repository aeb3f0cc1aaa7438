"""Builders of metered task workspaces for the metered/trajectory tests (real iverilog and yosys)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import tomli_w

from closer.metered.run import start_run
from closer.metered.paths import WorkspacePaths
from closer.pdk import PdkPaths

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "metered" / "counter"

# The estimator a task may ship in its control dir: reward 1 when the sim passes every check,
# else the fraction of checks passed; synth adds a small area term. Feasible = no sim errors.
ESTIMATOR = '''
from closer.metered.estimator import RewardEstimate

def estimate(tool, metrics, results_dir):
    if tool.value == "sim":
        checks, errors = metrics.get("sim__checks"), metrics.get("sim__tests__failed")
        if checks is None or errors is None:
            return RewardEstimate(None, False)
        return RewardEstimate(round((checks - errors) / checks, 6), errors == 0)
    if tool.value == "synth":
        area = metrics.get("synth__design__instance__area__stdcell")
        return None if area is None else RewardEstimate(round(1000.0 / (1000.0 + area), 6), True)
    return None
'''


def tool_config(pdk: PdkPaths | None, budget: dict | None = None, sim_timeout_s: float = 120) -> dict:
    config: dict = {
        "run": {"design": "counter", "pdk_corner": "tt_025C_1v80"},
        "budget": {"tier": "low", **(budget or {})},
        "surface": {"include": ["rtl/*", "tb/*", "constraints/*"]},
        "reward": {"estimator": "estimator:estimate"},
        "tools": {
            "sim": {
                "commands": [["iverilog", "-g2012", "-o", "{results}/sim.vvp", "rtl/counter.v", "tb/counter_tb.v"],
                             ["vvp", "-n", "{results}/sim.vvp", "{args}"]],
                "timeout_s": sim_timeout_s,
                "version": ["iverilog", "-V"],
                "log_metrics": {"sim__tests__failed": r"ERRORS: (\d+)", "sim__checks": r"CHECKS: (\d+)"},
            },
            "verify": {
                "commands": [["iverilog", "-g2012", "-o", "{results}/verify.vvp", "rtl/counter.v", "tb/counter_tb.v"],
                             ["vvp", "-n", "{results}/verify.vvp"]],
                "version": ["iverilog", "-V"],
                "log_metrics": {"sim__tests__failed": r"ERRORS: (\d+)", "sim__checks": r"CHECKS: (\d+)"},
            },
        },
    }
    if pdk is not None:
        lib = pdk.liberty("tt_025C_1v80")
        script = (f"read_verilog rtl/counter.v; synth -top counter; dfflibmap -liberty {lib}; "
                  f"abc -liberty {lib}; opt_clean; stat -liberty {lib}; "
                  "write_verilog -noattr {results}/counter.netlist.v")
        config["tools"]["synth"] = {
            "commands": [["yosys", "-p", script]],
            "timeout_s": 300,
            "log_metrics": {
                "synth__design__instance__area__stdcell": r"Chip area for module '\\counter': ([0-9.]+)",
                "synth__design__instance__count__stdcell": r"(\d+)\s+[0-9.]+ cells",
            },
        }
    return config


def make_workspace(root: Path, config: dict, started_at: datetime | None = None,
                   start: bool = True) -> WorkspacePaths:
    shutil.copytree(FIXTURE, root)
    ws = WorkspacePaths(root)
    ws.control.mkdir()
    ws.tools_config.write_text(tomli_w.dumps(config))
    (ws.control / "estimator.py").write_text(ESTIMATOR)
    if start:
        start_run(ws, started_at=started_at, run_id="test-run")
    return ws


def closer_tool(ws: WorkspacePaths, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `python -m closer.metered` (the closer-tool console script) in the workspace."""
    return subprocess.run([sys.executable, "-m", "closer.metered", *args], cwd=ws.root,
                          capture_output=True, text=True, timeout=timeout)


def break_counter(ws: WorkspacePaths) -> None:
    """A deliberate RTL bug: the counter steps by 2."""
    rtl = ws.root / "rtl" / "counter.v"
    rtl.write_text(rtl.read_text().replace("count + 1'b1", "count + 2'd2"))


def fix_counter(ws: WorkspacePaths) -> None:
    shutil.copyfile(FIXTURE / "rtl" / "counter.v", ws.root / "rtl" / "counter.v")


# ---------------------------------------------------------------- hand-made trajectories

def make_record(seq: int, tool: str = "sim", *, reward: float | None = None, elapsed_s: float = 0.0,
                units: float = 1.0, outcome: str = "ok", layers: list[str] | None = None,
                feasible: bool | None = None, run_id: str = "hand") -> "TrajectoryRecord":
    from datetime import timedelta, timezone

    from closer.trajectory.record import TrajectoryRecord

    t0 = datetime(2026, 11, 30, tzinfo=timezone.utc)
    refused = outcome.startswith("refused")
    return TrajectoryRecord(
        seq=seq, run_id=run_id, started_at=t0 + timedelta(seconds=elapsed_s),
        ended_at=t0 + timedelta(seconds=elapsed_s), elapsed_s=elapsed_s, tool=tool,
        surface_digest=None, layers=layers or [],
        cost={"counted": not refused, "units": 0.0 if refused else units, "tool_wall_s": 0.0},
        outcome=outcome, reward=reward, feasible=feasible,
    )


def write_trajectory(path: Path, records) -> Path:
    from closer.trajectory.writer import TrajectoryWriter

    with TrajectoryWriter(path) as writer:
        for rec in records:
            writer.append(rec)
    return path
