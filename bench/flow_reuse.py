"""An unchanged metered call: `closer-tool synth` (and `pnr` with `--pnr`) twice on an unchanged
gcd workspace, then once after an RTL edit. Goal (issue 27): the unchanged call served from the
workspace's flow cache in <= 2 s, charged and recorded as reused. Prints each call's wall and CPU
time beside the goal and writes docs/perf-reuse.json and docs/perf-reuse.md.

    .venv/bin/python bench/flow_reuse.py [--repeat 3] [--pnr]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from closer import __version__
from closer.flow import reuse
from closer.paths import repo_paths
from closer.tasks.generate import generate_suite
from closer.tasks.models import TaskKind
from closer.tasks.paths import SuitePaths
from closer.toolchain import write_bytecode

GOAL_S = 2.0


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _call(ws: Path, tool: str, env: dict) -> tuple[float, float]:
    cpu, start = _children_cpu_s(), time.monotonic()
    done = subprocess.run([sys.executable, "-m", "closer.metered", "--workspace", str(ws), tool],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"closer-tool {tool} failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.monotonic() - start, _children_cpu_s() - cpu


def _bench_tool(root: Path, kind: TaskKind, tool: str, repeat: int, env: dict) -> dict:
    suite = SuitePaths(root / f"suite-{kind.value}")
    generate_suite("gcd", suite.root, budgets=["high"], kinds=[kind])
    ws = root / f"ws-{kind.value}"
    shutil.copytree(suite.task(f"gcd-{kind.value}-high").workspace, ws)
    cold = _call(ws, tool, env)
    unchanged = [_call(ws, tool, env) for _ in range(repeat)]
    rtl = sorted((ws / "rtl").glob("*.v"))[0]
    rtl.write_text(rtl.read_text() + "\n// an edit: the flow runs again\n")
    edited = _call(ws, tool, env)
    records = [json.loads(line) for line in (ws / ".closer" / "trajectory.jsonl").read_text().splitlines()]
    reused = [r["cost"]["reused"] for r in records]
    if reused != [False, *([True] * repeat), False]:
        sys.exit(f"{tool}: unexpected reuse pattern {reused}")
    if not all(r["cost"]["counted"] for r in records):
        sys.exit(f"{tool}: a reused call was not charged")
    median_wall = statistics.median(w for w, _ in unchanged)
    return {
        "tool": tool, "task": f"gcd-{kind.value}-high",
        "cold_wall_s": round(cold[0], 3), "cold_cpu_s": round(cold[1], 3),
        "unchanged_wall_s": [round(w, 3) for w, _ in unchanged],
        "unchanged_cpu_s": [round(c, 3) for _, c in unchanged],
        "unchanged_wall_s_median": round(median_wall, 3),
        "edited_wall_s": round(edited[0], 3),
        "reused": reused, "charged": [r["cost"]["units"] for r in records],
        "goal_s": GOAL_S, "ratio_to_goal": round(median_wall / GOAL_S, 3),
    }


def _markdown(result: dict) -> str:
    lines = ["# Unchanged metered calls (flow reuse)", "",
             "Written by `bench/flow_reuse.py` (do not edit by hand). Goal (issue 27): an unchanged call "
             f"served from the workspace's flow cache in <= {GOAL_S:g} s, charged like any call.", "",
             "| call | cold wall (s) | cold CPU (s) | unchanged wall (s, median) | unchanged CPU (s) "
             "| after an RTL edit (s) | reused | ratio to goal |",
             "|---|---:|---:|---:|---:|---:|---|---:|"]
    for row in result["calls"]:
        lines.append(f"| `closer-tool {row['tool']}` ({row['task']}) | {row['cold_wall_s']} | {row['cold_cpu_s']} "
                     f"| {row['unchanged_wall_s_median']} | {statistics.median(row['unchanged_cpu_s']):.3f} "
                     f"| {row['edited_wall_s']} | {row['reused']} | **{row['ratio_to_goal']}** |")
    m = result["machine"]
    lines += ["", f"Measured {result['measured_at']} with closer {result['closer']}, Python {m['python']}, "
              f"{m['cpus']} CPUs (shared; 1-minute load {m['loadavg_1m_start']} at the start, "
              f"{m['loadavg_1m_end']} at the end). CPU is the children's user+system time."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pnr", action="store_true", help="also time `closer-tool pnr` on gcd B")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != reuse.CACHE_ENV}  # each workspace's own cache
    write_bytecode(repo_paths().root)
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="closer-reuse-bench-") as tmp:
        calls = [_bench_tool(Path(tmp), TaskKind.A, "synth", args.repeat, env)]
        if args.pnr:
            calls.append(_bench_tool(Path(tmp), TaskKind.B, "pnr", args.repeat, env))
    result = {
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "closer": __version__,
        "calls": calls,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "loadavg_1m_start": round(load_start, 2), "loadavg_1m_end": round(os.getloadavg()[0], 2)},
    }
    docs = repo_paths().root / "docs"
    (docs / "perf-reuse.json").write_text(json.dumps(result, indent=1) + "\n")
    (docs / "perf-reuse.md").write_text(_markdown(result))
    for row in calls:
        print(f"unchanged closer-tool {row['tool']}: {row['unchanged_wall_s_median']} s / goal {GOAL_S:g} s = "
              f"{row['ratio_to_goal']} (cold {row['cold_wall_s']} s; reused {row['reused']})")


if __name__ == "__main__":
    main()
