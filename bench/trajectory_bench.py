"""Benchmark: summarize a 1,000,000-record trajectory; print time and peak memory, write them to docs/.

    .venv/bin/python bench/trajectory_bench.py [--records N] [--keep]

The trajectory is synthetic but shaped like a real one (mixed tool classes and outcomes, edits
on every few calls, a slowly improving reward with noise, metrics on every call). It is written
in bulk without per-record fsync (generation is not what is measured), then summarized by
`closer trajectory summarize --json` in a child process run through closer.procs.run, which
reports the child's wall time and peak RSS. Results go to docs/trajectory-bench.json and
docs/trajectory-bench.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from closer import __version__
from closer.paths import repo_paths
from closer.procs import Command, run
from closer.trajectory.record import SCHEMA_VERSION

TOOLS = ["sim"] * 12 + ["synth"] * 5 + ["pnr"] * 2 + ["verify"]
WEIGHTS = {"sim": 1.0, "synth": 5.0, "pnr": 25.0, "verify": 5.0}
LAYER_FILES = {"rtl": "rtl/core.v", "constraint": "constraints/core.sdc",
               "floorplan": "floorplan/pdn.tcl", "flow": "flow/config.mk"}


def generate(path: Path, n: int, seed: int = 20261130) -> None:
    """Write n records as plain JSON (faster than building models; summarize validates every line)."""
    rng = random.Random(seed)
    t0 = datetime(2026, 11, 30, tzinfo=timezone.utc)
    elapsed, best, level = 0.0, None, 0.0
    with open(path, "w") as out:
        for seq in range(1, n + 1):
            tool = rng.choice(TOOLS)
            outcome = rng.choices(["ok", "tool_error", "refused_budget", "timeout"], [90, 6, 3, 1])[0]
            refused = outcome == "refused_budget"
            start = elapsed + rng.uniform(1, 30)
            elapsed = start + (0 if refused else rng.uniform(0.5, 20))
            layers = sorted(rng.sample(sorted(LAYER_FILES), k=rng.choice([0, 0, 1, 1, 1, 2])),
                            key=list(LAYER_FILES).index)
            level = min(1.0, level + 2e-6)
            reward = None
            if outcome == "ok":
                reward = round(max(0.0, min(1.0, level + rng.gauss(0, 0.05))), 6)
                best = reward if best is None else max(best, reward)
            rec = {
                "schema_version": SCHEMA_VERSION, "seq": seq, "run_id": "bench",
                "started_at": (t0 + timedelta(seconds=start)).isoformat(),
                "ended_at": (t0 + timedelta(seconds=elapsed)).isoformat(), "elapsed_s": elapsed,
                "tool": tool, "args": [], "surface_digest": f"{rng.getrandbits(256):064x}",
                "changes": {"added": [], "modified": [LAYER_FILES[x] for x in layers], "deleted": []},
                "layers": layers, "unclassified": [],
                "cost": {"counted": not refused, "units": 0.0 if refused else WEIGHTS[tool],
                         "tool_wall_s": 0.0 if refused else elapsed - start, "peak_rss_mb": None},
                "outcome": outcome, "message": "", "exit_codes": [] if refused else [0 if outcome == "ok" else 1],
                "metrics": {} if refused else {f"{tool}__timing__setup__ws": round(rng.gauss(0, 0.3), 4),
                                               f"{tool}__design__instance__area": round(rng.uniform(4e3, 5e3), 2)},
                "reward": reward, "feasible": None if reward is None else reward > 0.3, "best_reward": best,
                "remaining": {"sim": None, "synth": 10, "pnr": 3, "verify": 5, "wall_s": 1e6},
                "results_dir": None if refused else f"results/{seq:07d}_{tool}",
            }
            out.write(json.dumps(rec, separators=(",", ":")) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true", help="keep the generated trajectory")
    args = parser.parse_args()
    repo = repo_paths()
    work = Path(tempfile.mkdtemp(prefix="trajectory-bench-"))
    path = work / "trajectory.jsonl"
    t = time.monotonic()
    generate(path, args.records)
    gen_s = time.monotonic() - t
    size_mb = path.stat().st_size / 1e6
    print(f"generated {args.records} records ({size_mb:.0f} MB) in {gen_s:.1f} s")

    closer = repo.venv / "bin" / "closer"
    cmd = Command([str(closer), "trajectory", "summarize", str(path), "--json", "--tier", "high",
                   "--threshold", "0.5", "--threshold", "0.9"])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = os.getloadavg()[0]
    done = run(cmd, work / "summarize.log")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = json.loads((work / "summarize.log").read_text().split("\n", 1)[1])
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "records": args.records,
        "file_mb": round(size_mb, 1),
        "summarize_wall_s": round(done.wall_s, 2),
        "summarize_cpu_s": round(cpu_s, 2),
        "summarize_peak_rss_mb": round(done.peak_rss_mb, 1),
        "load_average_1min_at_start": round(load_before, 2),
        "records_per_s": round(args.records / done.wall_s),
        "summary_check": {"records": summary["records"], "best_reward": summary["best_reward"],
                          "auc_wall": summary["auc_wall"], "auc_cost": summary["auc_cost"],
                          "stagnation_episodes": len(summary["stagnation"]),
                          "rollbacks": len(summary["rollbacks"])},
        "provenance": {"closer_version": __version__, "python": sys.version.split()[0],
                       "machine": f"{platform.machine()}, {os.cpu_count()} cpus (shared)",
                       "command": cmd.shell_line().replace(str(path), "<trajectory.jsonl>")},
    }
    print(json.dumps(result, indent=2))
    docs = repo.docs
    (docs / "trajectory-bench.json").write_text(json.dumps(result, indent=2) + "\n")
    (docs / "trajectory-bench.md").write_text(_markdown(result))
    if args.keep:
        print(f"kept {path}")
    else:
        path.unlink()
        (work / "summarize.log").unlink()
        work.rmdir()


def _markdown(r: dict) -> str:
    c = r["summary_check"]
    return (
        "# Trajectory summarize benchmark\n\n"
        "Written by `bench/trajectory_bench.py` (do not edit by hand).\n\n"
        "| records | file | summarize wall | summarize CPU | peak RSS | records/s (wall) |\n"
        "|---:|---:|---:|---:|---:|---:|\n"
        f"| {r['records']:,} | {r['file_mb']} MB | {r['summarize_wall_s']} s | {r['summarize_cpu_s']} s | "
        f"{r['summarize_peak_rss_mb']} MB | {r['records_per_s']:,} |\n\n"
        f"The machine is shared (1-minute load average {r['load_average_1min_at_start']} on "
        f"{os.cpu_count()} CPUs at the start), so wall time is above CPU time.\n\n"
        f"Summary of the synthetic run: best reward {c['best_reward']}, AUC wall {c['auc_wall']:.6f}, "
        f"AUC cost {c['auc_cost']:.6f}, {c['stagnation_episodes']} stagnation episodes, "
        f"{c['rollbacks']} cross-stage rollbacks.\n\n"
        f"Measured {r['date']} with closer {r['provenance']['closer_version']}, Python "
        f"{r['provenance']['python']}, {r['provenance']['machine']}; command "
        f"`{r['provenance']['command']}`. Peak RSS is the child's own (wait4).\n"
    )


if __name__ == "__main__":
    main()
