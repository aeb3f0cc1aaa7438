"""Step times of `closer flow run gcd --to sta`: a fresh run, then a second run that should reuse
every node (goal: < 3 s). Prints a table and writes docs/flow-times.json.

    .venv/bin/python bench/flow_times.py [--design gcd] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from closer.flow.runner import run_flow
from closer.paths import repo_paths


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--design", default="gcd")
    parser.add_argument("--to", default="sta")
    parser.add_argument("--repeat", type=int, default=3, help="reuse runs to time")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="closer-bench-") as tmp:
        start = time.monotonic()
        fresh = run_flow(args.design, to=args.to, out=Path(tmp))
        fresh_wall = time.monotonic() - start
        reuse_walls, reuse_cpus = [], []
        for _ in range(args.repeat):
            cpu_before = _cpu_s()
            start = time.monotonic()
            again = run_flow(args.design, to=args.to, out=Path(tmp))
            reuse_walls.append(time.monotonic() - start)
            reuse_cpus.append(_cpu_s() - cpu_before)
            assert again.all_reused, "second run did not reuse every node"
    load = os.getloadavg()
    result = {
        "design": args.design, "to": args.to, "backend": fresh.backend,
        "fresh_run_wall_s": round(fresh_wall, 2),
        "steps": [asdict(s) for s in fresh.steps],
        "reuse_run_wall_s": [round(w, 2) for w in reuse_walls],
        "reuse_run_wall_s_median": round(statistics.median(reuse_walls), 2),
        # CPU seconds of this process and its children: what the wall time would be on an idle
        # machine (the reuse path is sequential), independent of other users' load
        "reuse_run_cpu_s": [round(c, 2) for c in reuse_cpus],
        "reuse_run_cpu_s_median": round(statistics.median(reuse_cpus), 2),
        "machine": {"cpus": os.cpu_count(), "loadavg_1m_at_end": round(load[0], 2),
                    "python": platform.python_version()},
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(f"fresh run: {fresh_wall:.2f} s (backend {fresh.backend})")
    for s in fresh.steps:
        print(f"  {s.name:<10} {s.wall_s:>7.2f} s task, {s.exe_s:>7.2f} s in tool, "
              f"{s.peak_mem_mb or 0:>6.1f} MB  {s.tool} {s.tool_version}")
    print(f"reuse runs: {', '.join(f'{w:.2f}' for w in reuse_walls)} s wall "
          f"(median {result['reuse_run_wall_s_median']} s; load average {load[0]:.1f} "
          f"on {os.cpu_count()} CPUs); CPU {', '.join(f'{c:.2f}' for c in reuse_cpus)} s "
          f"(median {result['reuse_run_cpu_s_median']} s)")
    out = repo_paths().docs / "flow-times.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
