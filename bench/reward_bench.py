"""Reward throughput: `closer reward batch` end to end beside the scalar path, and the phases.

    .venv/bin/python bench/reward_bench.py [--records 100000] [--scalar-records 10000] [--seed 1]
                                          [--write docs/bench-reward.md]

End to end (the goal of issue 27: >= 50,000 records/s, parse + validate + score, bit-identical
to the scalar path): `closer reward batch` run as a child process on a JSONL of --records
records and on a directory of as many files, timed wall and CPU (getrusage, imports included).
The reference is the scalar path on the first --scalar-records of them in this process:
`load_metrics` on each file + `compute_reward`; its lines must equal the batch's bit for bit.

The records are synthetic: the clean gcd/sky130hd Closer metrics fixture with its area, setup
slack, power, cycle count, hold slacks and error counts varied by a seeded random generator
(about 1 in 12 results fails a gate). They exercise the reward code, they are not tool results.
Phases timed separately:
  parse   JSON text -> validated, normalized Metrics (what load_metrics does per file)
  scalar  compute_reward per record (full result: gates, terms, details, provenance)
  frame   frame_from_records + score_frame (pandas: vectorized reward, gate and terms only)
  columns score_columns on plain columns (what `closer reward batch` runs; no pandas)
The scalar, frame and columns rewards are checked to be bit-identical on every record (of --scalar-records).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pydantic

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from closer import __version__  # noqa: E402
from closer.reward import compute_reward, load_metrics, load_targets, metrics_from_mapping  # noqa: E402
from closer.reward.batch import exact, scalar_line  # noqa: E402
from closer.reward.columns import MISSING, needed_keys, score_columns  # noqa: E402
from closer.reward.frame import frame_from_records, score_frame  # noqa: E402

GOAL_PER_S = 50_000  # records per second end to end (issue 27)

FIXTURE = ROOT / "tests" / "fixtures" / "orfs" / "gcd_sky130hd_closer" / "metrics.json"
TARGETS = ROOT / "tests" / "fixtures" / "orfs" / "targets" / "gcd_all_gates.toml"
CORNERS = ("ff_n40C_1v95", "ss_100C_1v60", "tt_025C_1v80")


def synthetic_json_records(n: int, seed: int) -> list[str]:
    base = json.loads(FIXTURE.read_text())
    rng = np.random.default_rng(seed)
    area = base["finish__design__instance__area"] * rng.lognormal(0.0, 0.15, n)
    # slack beyond ~4.2 ns of a 5 ns period is not a real gcd result; keep the period positive
    setup_ws = np.minimum(base["finish__timing__setup__ws"] + rng.normal(0.0, 0.8, n), 4.2)
    power = base["finish__power__total"] * rng.lognormal(0.0, 0.2, n)
    cycles = rng.integers(1500, 2500, n)
    hold = rng.normal(0.25, 0.1, (n, len(CORNERS)))
    route_drc = np.where(rng.random(n) < 0.04, rng.integers(1, 40, n), 0)
    func_failed = np.where(rng.random(n) < 0.02, 1, 0)
    records = []
    for i in range(n):
        record = dict(base)
        record["finish__design__instance__area"] = round(float(area[i]), 2)
        record["finish__timing__setup__ws"] = round(float(setup_ws[i]), 5)
        record["finish__power__total"] = float(f"{power[i]:.6g}")
        record["closer__sim__cycles"] = int(cycles[i])
        for j, corner in enumerate(CORNERS):
            record[f"finish__timing__hold__ws__corner__{corner}"] = round(float(hold[i, j]), 5)
        record["finish__timing__hold__ws"] = min(
            record[f"finish__timing__hold__ws__corner__{c}"] for c in CORNERS)
        record["detailedroute__route__drc_errors"] = int(route_drc[i])
        record["closer__func__tests_failed"] = int(func_failed[i])
        records.append(json.dumps(record))
    return records


CPU_SECONDS: dict[str, float] = {}


def timed(function, *args, phase: str = ""):
    """(value, wall seconds); the process CPU seconds go to CPU_SECONDS[phase]. On a shared
    machine the CPU figure is the steadier one."""
    start, start_cpu = time.perf_counter(), time.process_time()
    value = function(*args)
    CPU_SECONDS[phase] = time.process_time() - start_cpu
    return value, time.perf_counter() - start


def run(texts: list[str], seed: int) -> dict:
    n = len(texts)
    gen_s = 0.0
    targets = load_targets(TARGETS)
    metrics, parse_s = timed(lambda: [metrics_from_mapping(json.loads(t), f"record {i}")
                                      for i, t in enumerate(texts)], phase="parse")
    scalar, scalar_s = timed(lambda: [compute_reward(m, targets).reward for m in metrics],
                             phase="scalar")
    frame, frame_build_s = timed(frame_from_records, metrics, targets.targets, phase="frame_build")
    scored, frame_score_s = timed(score_frame, frame, targets, phase="frame_score")
    vector = scored["reward"].to_numpy()
    mismatches = sum(struct.pack("<d", a) != struct.pack("<d", b) for a, b in zip(scalar, vector))
    keys = needed_keys(list(dict.fromkeys(k for m in metrics for k in m.values)), targets.targets)
    columns = {k: [m.values.get(k, MISSING) for m in metrics] for k in keys}
    by_columns, columns_s = timed(score_columns, columns, n, targets, phase="columns")
    columns_mismatches = len(by_columns.undecided) + sum(
        struct.pack("<d", a) != struct.pack("<d", b) for a, b in zip(scalar, by_columns.reward))
    rewards = np.asarray(scalar)
    return {
        "records": n, "seed": seed, "generate_s": gen_s,
        "parse_s": parse_s, "scalar_s": scalar_s,
        "frame_build_s": frame_build_s, "frame_score_s": frame_score_s,
        "parse_per_s": n / parse_s, "scalar_per_s": n / scalar_s,
        "frame_per_s": n / (frame_build_s + frame_score_s), "frame_score_per_s": n / frame_score_s,
        "cpu_s": dict(CPU_SECONDS),
        "parse_per_cpu_s": n / CPU_SECONDS["parse"], "scalar_per_cpu_s": n / CPU_SECONDS["scalar"],
        "frame_per_cpu_s": n / (CPU_SECONDS["frame_build"] + CPU_SECONDS["frame_score"]),
        "frame_score_per_cpu_s": n / CPU_SECONDS["frame_score"],
        "bit_mismatches": mismatches, "columns_bit_mismatches_or_undecided": columns_mismatches,
        "columns_s": columns_s, "columns_per_s": n / columns_s, "columns_per_cpu_s": n / CPU_SECONDS["columns"],
        "gate_zero": int((scored["gate"] == 0).sum()),
        "reward_mean": float(rewards.mean()), "reward_ones": int((rewards == 1.0).sum()),
    }


def _child(argv: list[str], out: Path) -> tuple[float, float]:
    """(wall s, CPU s) of one child writing its stdout to `out`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(out, "wb") as handle:
        subprocess.run(argv, stdout=handle, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def end_to_end(texts: list[str], scalar_n: int) -> dict:
    """`closer reward batch` on a JSONL and on a directory; the scalar path on the first files."""
    closer = str(Path(sys.executable).parent / "closer")
    work = Path(tempfile.mkdtemp(prefix="reward-bench-"))
    try:
        jsonl = work / "metrics.jsonl"
        jsonl.write_text("".join(t + "\n" for t in texts))
        folder = work / "metrics"
        folder.mkdir()
        for i, text in enumerate(texts):
            (folder / f"r{i:07d}.json").write_text(text)
        one = work / "one.jsonl"
        one.write_text(texts[0] + "\n")
        out = {}
        for name, path in (("startup", one), ("jsonl", jsonl), ("directory", folder)):
            wall, cpu = _child([closer, "reward", "batch", str(path), "--targets", str(TARGETS)], work / f"{name}.out")
            n = 1 if name == "startup" else len(texts)
            out[name] = {"wall_s": wall, "cpu_s": cpu, "per_s_wall": n / wall, "per_s_cpu": n / cpu}
        lines = (work / "directory.out").read_bytes().splitlines()
        targets = load_targets(TARGETS)
        files = sorted(folder.iterdir())[:scalar_n]
        start, start_cpu = time.perf_counter(), time.process_time()
        expected = [scalar_line(str(f), compute_reward(load_metrics(f), targets)) for f in files]
        wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        out["reference"] = {"records": len(files), "wall_s": wall, "cpu_s": cpu,
                            "per_s_wall": len(files) / wall, "per_s_cpu": len(files) / cpu}
        out["line_mismatches"] = sum(exact(json.loads(a)) != exact(json.loads(b))
                                     for a, b in zip(lines, expected))
        jsonl_lines = (work / "jsonl.out").read_bytes().splitlines()
        out["jsonl_vs_directory_reward_mismatches"] = sum(
            exact(json.loads(a)["reward"]) != exact(json.loads(b)["reward"]) for a, b in zip(jsonl_lines, lines))
        out["lines"] = len(lines)
        return out
    finally:
        shutil.rmtree(work)


def ratio_lines(n: int, e2e: dict) -> list[str]:
    ref = e2e["reference"]
    lines = []
    for name in ("jsonl", "directory"):
        r = e2e[name]
        lines.append(f"reward batch {name} {n:,}: {r['per_s_cpu']:,.0f}/s CPU ({r['per_s_wall']:,.0f}/s wall) / "
                     f"goal {GOAL_PER_S:,}/s = {r['per_s_cpu'] / GOAL_PER_S:.2f} "
                     f"(wall {r['per_s_wall'] / GOAL_PER_S:.2f}; >= 1 meets it); "
                     f"{r['cpu_s']:.2f} s CPU, {r['wall_s']:.2f} s wall")
    lines.append(f"reference scalar path (load_metrics + compute_reward) {ref['records']:,}: "
                 f"{ref['per_s_cpu']:,.0f}/s CPU ({ref['per_s_wall']:,.0f}/s wall) = "
                 f"{ref['per_s_cpu'] / GOAL_PER_S:.2f} of the goal; batch lines differing from it: "
                 f"{e2e['line_mismatches']}")
    return lines


def provenance() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "cpu": cpu, "cpus_visible": os.cpu_count(),
        "python": platform.python_version(), "numpy": np.__version__, "pandas": pd.__version__,
        "pydantic": pydantic.VERSION, "closer": __version__,
        "targets": str(TARGETS.relative_to(ROOT)), "base_record": str(FIXTURE.relative_to(ROOT)),
    }


def markdown(result: dict, prov: dict) -> str:
    r = result
    c = result["cpu_s"]
    e = result["end_to_end"]
    ratio = "\n".join(f"    {line}" for line in ratio_lines(e["lines"], e))
    return f"""# Reward benchmark

Written by `bench/reward_bench.py` (`.venv/bin/python bench/reward_bench.py`). Synthetic
records: `{prov['base_record']}` varied by a seeded generator (seed {r['seed']}); targets
`{prov['targets']}` (all seven gates required, three terms incl. the derived `energy`).

## End to end: `closer reward batch` (goal >= {GOAL_PER_S:,} records/s)

`closer reward batch PATH --targets T` as a child process (imports, reading, parsing, validation,
scoring and writing the JSONL output included) on {e['lines']:,} records, once as one JSONL and once
as a directory of as many files; beside it, in the same invocation, the scalar path
(`load_metrics` per file + `compute_reward`) on the first {e['reference']['records']:,} files.

| run | records | wall (s) | CPU (s) | records/s (wall) | records/s (CPU) | CPU rate / goal |
|---|---:|---:|---:|---:|---:|---:|
| batch, JSONL | {e['lines']:,} | {e['jsonl']['wall_s']:.2f} | {e['jsonl']['cpu_s']:.2f} | {e['jsonl']['per_s_wall']:,.0f} | {e['jsonl']['per_s_cpu']:,.0f} | **{e['jsonl']['per_s_cpu'] / GOAL_PER_S:.2f}** |
| batch, directory | {e['lines']:,} | {e['directory']['wall_s']:.2f} | {e['directory']['cpu_s']:.2f} | {e['directory']['per_s_wall']:,.0f} | {e['directory']['per_s_cpu']:,.0f} | **{e['directory']['per_s_cpu'] / GOAL_PER_S:.2f}** |
| startup: one record (imports, targets) | 1 | {e['startup']['wall_s']:.2f} | {e['startup']['cpu_s']:.2f} | | | |
| reference: scalar path | {e['reference']['records']:,} | {e['reference']['wall_s']:.2f} | {e['reference']['cpu_s']:.2f} | {e['reference']['per_s_wall']:,.0f} | {e['reference']['per_s_cpu']:,.0f} | {e['reference']['per_s_cpu'] / GOAL_PER_S:.2f} |

- batch lines differing from the scalar path's (every field, floats by their bits): **{e['line_mismatches']}** of {e['reference']['records']:,}
- JSONL vs directory rewards differing: {e['jsonl_vs_directory_reward_mismatches']}
- CPU rate over the scalar path's in the same run (the steadier figure on a shared machine):
  JSONL {e['jsonl']['per_s_cpu'] / e['reference']['per_s_cpu']:.1f}x, directory {e['directory']['per_s_cpu'] / e['reference']['per_s_cpu']:.1f}x
- 1-minute load average at the start: {r['load_average_1min_at_start']:.2f} on {prov['cpus_visible']} CPUs (shared: wall is above CPU)

```
{ratio}
```

## Phases in memory (first {r['records']:,} records)

| phase | what | wall (s) | records/s (wall) | CPU (s) | records/s (CPU) |
|---|---|---:|---:|---:|---:|
| parse | JSON text -> validated Metrics | {r['parse_s']:.2f} | {r['parse_per_s']:,.0f} | {c['parse']:.2f} | {r['parse_per_cpu_s']:,.0f} |
| scalar | `compute_reward` (full result) | {r['scalar_s']:.2f} | {r['scalar_per_s']:,.0f} | {c['scalar']:.2f} | {r['scalar_per_cpu_s']:,.0f} |
| frame | `frame_from_records` + `score_frame` | {r['frame_build_s'] + r['frame_score_s']:.2f} | {r['frame_per_s']:,.0f} | {c['frame_build'] + c['frame_score']:.2f} | {r['frame_per_cpu_s']:,.0f} |
| frame (score only) | `score_frame` on a built frame | {r['frame_score_s']:.3f} | {r['frame_score_per_s']:,.0f} | {c['frame_score']:.3f} | {r['frame_score_per_cpu_s']:,.0f} |
| columns | `score_columns` on plain lists (the batch's scorer, no pandas) | {r['columns_s']:.3f} | {r['columns_per_s']:,.0f} | {c['columns']:.3f} | {r['columns_per_cpu_s']:,.0f} |

- records: {r['records']:,}; gate 0: {r['gate_zero']:,}; reward exactly 1: {r['reward_ones']:,}; mean reward {r['reward_mean']:.4f}
- scalar vs frame reward, bitwise mismatches: **{r['bit_mismatches']}**; scalar vs columns, mismatches or undecided: **{r['columns_bit_mismatches_or_undecided']}**

Provenance: {prov['date_utc']} UTC, {prov['cpu']} ({prov['cpus_visible']} CPUs visible, shared
with other jobs), Python {prov['python']}, numpy {prov['numpy']}, pandas {prov['pandas']},
pydantic {prov['pydantic']}, closer {prov['closer']}.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--write", type=Path, default=ROOT / "docs" / "bench-reward.md",
                        help="markdown file for the results ('-' to skip)")
    parser.add_argument("--scalar-records", type=int, default=10_000,
                        help="records for the scalar reference and the in-memory phases")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    texts = synthetic_json_records(args.records, args.seed)
    e2e = end_to_end(texts, args.scalar_records)
    result = {**run(texts[:args.scalar_records], args.seed), "end_to_end": e2e, "load_average_1min_at_start": load}
    prov = provenance()
    print(json.dumps({**result, **prov}, indent=2))
    print("\n".join(ratio_lines(args.records, e2e)))
    if str(args.write) != "-":
        args.write.write_text(markdown(result, prov), encoding="utf-8")
        args.write.with_suffix(".json").write_text(json.dumps({**result, **prov}, indent=2) + "\n")
        print(f"wrote {args.write} and its .json")
    if result["bit_mismatches"] or result["columns_bit_mismatches_or_undecided"] or e2e["line_mismatches"] or e2e["jsonl_vs_directory_reward_mismatches"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
