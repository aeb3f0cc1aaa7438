"""Rule2DRC bench: the full generated suite, gold and null on every problem, perturbed pools at
N = 5, 10, 20 through every selector, and the report. Writes docs/rule2drc-bench.json and the
report folder; docs/rule2drc.md quotes the numbers.

    .venv/bin/python bench/drc_bench.py --work /tmp/drcbench [--suite /tmp/drcbench/suite]
        [--pool-limit 48] [--select-limit 6] [--ns 5 10 20]

Every pool, the scripted test generator and the scripted judge are machinery baselines.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def closer(*args: object) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "closer", "drc", *map(str, args)], check=True)
    return round(time.monotonic() - started, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--suite", type=Path, help="An existing generated suite (default: generate one).")
    parser.add_argument("--pool-limit", type=int, default=48)
    parser.add_argument("--select-limit", type=int, default=6)
    parser.add_argument("--ns", type=int, nargs="+", default=[5, 10, 20])
    args = parser.parse_args()
    work, timings = args.work, {}
    load_start = os.getloadavg()
    suite = args.suite or work / "suite"
    if not args.suite:
        timings["generate_s"] = closer("generate", "--out", suite, "--workers", 2)
    runs, selections = [], []
    for baseline, n, limit in [("gold", 1, None), ("null", 1, None)] + [("perturbed", n, args.pool_limit) for n in args.ns]:
        pool, run = work / f"pool-{baseline}-{n}", work / f"run-{baseline}-{n}"
        closer("pool", suite, "--baseline", baseline, "--n", n, "--out", pool, *(["--limit", limit] if limit else []))
        timings[f"run_{baseline}_{n}_s"] = closer("run", suite, "--candidates", pool, "--out", run, "--workers", 2)
        runs.append(run)
        if baseline == "perturbed":
            small = work / f"pool-select-{n}"
            closer("pool", suite, "--baseline", baseline, "--n", n, "--limit", args.select_limit, "--out", small)
            small_run = work / f"run-select-{n}"
            closer("run", suite, "--candidates", small, "--out", small_run)
            selection = work / f"select-{n}"
            timings[f"select_{n}_s"] = closer("select", suite, "--candidates", small, "--results", small_run,
                                              "--out", selection)
            selections.append(selection)
    report = work / "report"
    closer("report", *[x for r in runs for x in ("--run", r)], *[x for s in selections for x in ("--selection", s)],
           "--out", report)
    manifest = json.loads((suite / "manifest.json").read_text())
    record = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "load_average_1_5_15_start": load_start,
                    "load_average_1_5_15_end": os.getloadavg()},
        "suite": manifest["suite"], "klayout": manifest["klayout"], "problems": len(manifest["problems"]),
        "layouts": sum(p["layouts_pass"] + p["layouts_fail"] for p in manifest["problems"]),
        "verify_wall_s": manifest["verify_wall_s"], "timings": timings,
        "report": json.loads((report / "report.json").read_text()),
    }
    (REPO / "docs" / "rule2drc-bench.json").write_text(json.dumps(record, indent=2) + "\n")
    print((report / "report.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
