"""Benchmark: summarize a 1,000,000-record trajectory beside the pydantic reference; print time,
peak memory and their ratio to the goal, write them to docs/.

    .venv/bin/python bench/trajectory_bench.py [--records N] [--keep] [--no-write]

The trajectory is synthetic but shaped like a real one (mixed tool classes and outcomes, edits
on every few calls, a slowly improving reward with noise, metrics on every call). It is written
in bulk without per-record fsync (generation is not what is measured), then summarized by
`closer trajectory summarize --json` in a child process run through closer.procs.run, which
reports the child's wall time and peak RSS (CPU from getrusage). The reference (the pydantic-only
reader with the same summarizer) runs next on the same file; both summaries must be identical.
Results go to docs/trajectory-bench.json and docs/trajectory-bench.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import os
import platform
import random
import resource
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from importlib.metadata import version
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


GOAL_S = 5.0  # per million records (issue 27)
GOAL_RSS_MB = 500.0
REFERENCE = ("import sys; from pathlib import Path; "
             "from closer.trajectory.summary import resolve_params; "
             "from closer.trajectory.reader import TrajectoryReader; "
             "from closer.trajectory.measures import Summarizer; "
             "p = Path(sys.argv[1]); r = TrajectoryReader(p, views=False); "
             "a = Summarizer(resolve_params(None, 'high', thresholds=[0.5, 0.9])); "
             "a.add_all(r); "
             "print(a.result(str(p), [b.describe(p) for b in r.bad_lines]).model_dump_json(indent=2))")


def measure(cmd: Command, log: Path) -> dict:
    """Wall, CPU (user + system) and peak RSS of one child, and the summary it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    done = run(cmd, log)  # raises on a non-zero exit, naming the log
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = json.loads(log.read_text().split("\n", 1)[1])
    return {"wall_s": round(done.wall_s, 2), "cpu_s": round(cpu_s, 2), "peak_rss_mb": round(done.peak_rss_mb, 1),
            "load_average_1min_at_start": round(load, 2), "summary": summary}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true", help="keep the generated trajectory")
    parser.add_argument("--write", action=argparse.BooleanOptionalAction, default=True,
                        help="write docs/trajectory-bench.json and .md")
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
    reference_cmd = Command([sys.executable, "-c", REFERENCE, str(path)])
    fast = measure(cmd, work / "summarize.log")
    reference = measure(reference_cmd, work / "reference.log")
    same = {k: v for k, v in fast["summary"].items() if k != "path"} == \
        {k: v for k, v in reference["summary"].items() if k != "path"}
    result = _result(args.records, size_mb, fast, reference, same, cmd, path)
    print(json.dumps(result, indent=2))
    print(_ratio_line(result))
    if args.write:
        docs = repo.docs
        (docs / "trajectory-bench.json").write_text(json.dumps(result, indent=2) + "\n")
        (docs / "trajectory-bench.md").write_text(_markdown(result))
    if args.keep:
        print(f"kept {path}")
    else:
        for leftover in (path, work / "summarize.log", work / "reference.log"):
            leftover.unlink()
        work.rmdir()
    if not same:
        sys.exit("the summary differs from the reference path's")


def _result(records: int, size_mb: float, fast: dict, reference: dict, same: bool, cmd: Command,
            path: Path) -> dict:
    per_million = 1e6 / records
    summary = fast.pop("summary")
    reference.pop("summary")
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "records": records,
        "file_mb": round(size_mb, 1),
        "summarize": fast,
        "reference": reference,
        "goal": {"s_per_million": GOAL_S, "peak_rss_mb": GOAL_RSS_MB},
        "ratio_cpu_to_goal": round(fast["cpu_s"] * per_million / GOAL_S, 3),
        "ratio_wall_to_goal": round(fast["wall_s"] * per_million / GOAL_S, 3),
        "ratio_rss_to_goal": round(fast["peak_rss_mb"] / GOAL_RSS_MB, 3),
        "speedup_cpu_over_reference": round(reference["cpu_s"] / fast["cpu_s"], 2),
        "same_summary_as_reference": same,
        "records_per_cpu_s": round(records / fast["cpu_s"]),
        "summary_check": {"records": summary["records"], "best_reward": summary["best_reward"],
                          "auc_wall": summary["auc_wall"], "auc_cost": summary["auc_cost"],
                          "stagnation_episodes": len(summary["stagnation"]),
                          "rollbacks": len(summary["rollbacks"])},
        "provenance": {"closer_version": __version__, "commit": _commit(), "python": sys.version.split()[0],
                       "libraries": {name: version(name) for name in ("msgspec", "pydantic", "pydantic_core")},
                       "machine": f"{platform.machine()}, {os.cpu_count()} cpus (shared)",
                       "command": cmd.shell_line().replace(str(path), "<trajectory.jsonl>"),
                       "reference": "the pydantic reader (TrajectoryReader(views=False)) with the same Summarizer"},
    }


def _commit() -> str:
    """HEAD of the checkout measured, marked when closer/ differs from it."""
    root = repo_paths().root
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "closer"], capture_output=True,
                           text=True).stdout.strip()
    return f"{head} (closer/ modified)" if dirty else head


def _ratio_line(r: dict) -> str:
    n = f"{r['records'] / 1e6:g}M"
    f, ref = r["summarize"], r["reference"]
    return (f"summarize {n}: {f['cpu_s']} s CPU ({f['wall_s']} s wall) / goal {GOAL_S:g} s per 1M = "
            f"{r['ratio_cpu_to_goal']} (wall {r['ratio_wall_to_goal']}); peak {f['peak_rss_mb']} MB / "
            f"{GOAL_RSS_MB:g} MB = {r['ratio_rss_to_goal']}; reference (pydantic reader) {ref['cpu_s']} s CPU "
            f"({ref['wall_s']} s wall), {r['speedup_cpu_over_reference']}x; same summary: "
            f"{r['same_summary_as_reference']}")


def _markdown(r: dict) -> str:
    c, f, ref = r["summary_check"], r["summarize"], r["reference"]
    return (
        "# Trajectory summarize benchmark\n\n"
        "Written by `bench/trajectory_bench.py` (do not edit by hand). Goal (issue 27): "
        f"<= {GOAL_S:g} s per million records and <= {GOAL_RSS_MB:g} MB. The reference is the "
        "pydantic-only reader with the same summarizer, run on the same file in the same invocation.\n\n"
        "| run | records | file | wall | CPU | peak RSS | CPU / goal | RSS / goal |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|\n"
        f"| `closer trajectory summarize` | {r['records']:,} | {r['file_mb']} MB | {f['wall_s']} s | "
        f"{f['cpu_s']} s | {f['peak_rss_mb']} MB | **{r['ratio_cpu_to_goal']}** | {r['ratio_rss_to_goal']} |\n"
        f"| reference (pydantic reader) | {r['records']:,} | {r['file_mb']} MB | {ref['wall_s']} s | "
        f"{ref['cpu_s']} s | {ref['peak_rss_mb']} MB | "
        f"{round(ref['cpu_s'] * 1e6 / r['records'] / GOAL_S, 3)} | {round(ref['peak_rss_mb'] / GOAL_RSS_MB, 3)} |\n\n"
        f"`{_ratio_line(r)}`\n\n"
        f"The machine is shared (1-minute load average {f['load_average_1min_at_start']} and "
        f"{ref['load_average_1min_at_start']} at the two starts on {os.cpu_count()} CPUs), so wall time "
        "is above CPU time and CPU time itself is inflated under load; the ratio to the reference is the "
        "steadier figure.\n\n"
        f"Summary of the synthetic run (identical to the reference's: {r['same_summary_as_reference']}): "
        f"best reward {c['best_reward']}, AUC wall {c['auc_wall']:.6f}, "
        f"AUC cost {c['auc_cost']:.6f}, {c['stagnation_episodes']} stagnation episodes, "
        f"{c['rollbacks']} cross-stage rollbacks.\n\n"
        f"Measured {r['date']} with closer {r['provenance']['closer_version']} at "
        f"{r['provenance']['commit']}, Python {r['provenance']['python']}, "
        + ", ".join(f"{k} {v}" for k, v in r['provenance']['libraries'].items())
        + f", {r['provenance']['machine']}; command "
        f"`{r['provenance']['command']}`. Peak RSS is the child's own (wait4).\n"
    )


if __name__ == "__main__":
    main()
