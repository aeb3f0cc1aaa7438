"""Mutation-scoring throughput: mutants scored per minute with Icarus and with Verilator.

Generates (or reuses) a mutant set of the design, then scores the reference oracle against it once
per simulator in a fresh run folder, timing the whole run and the golden run separately. Prints a
table and writes docs/mutants_bench.json (with provenance). The default is firdma `small` with its
directed oracle; `--design tests/fixtures/mutants/fifo --oracle tests/fixtures/mutants/fifo/oracle/test_fifo.py
--testcase '' --env ''` runs it on the test FIFO.

    .venv/bin/python bench/mutants_bench.py [--n 6] [--simulators icarus verilator] [--jobs 2]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import time
from pathlib import Path

from closer.mutants.design_input import load_design
from closer.mutants.generate import GenerateOptions, generate, load_manifest
from closer.mutants.models import MutantSetName
from closer.mutants.paths import MutantStorePaths
from closer.mutants.score import ScoreOptions, score
from closer.mutants.testbench import Testbench
from closer.paths import repo_paths


def main() -> int:
    repo = repo_paths()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--design", default="firdma")
    parser.add_argument("--config", default="small")
    parser.add_argument("--oracle", type=Path, default=repo.oracles / "firdma" / "test_firdma.py")
    parser.add_argument("--testcase", default="test_directed", help="'' for all tests of the module")
    parser.add_argument("--env", nargs="*", default=["FIRDMA_NTAPS=4", "FIRDMA_DATA_W=32"])
    parser.add_argument("--n", type=int, default=6, help="mutants in the benchmark set")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--simulators", nargs="+", default=["icarus", "verilator"])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--work", type=Path, default=repo.root / "build" / "mutants-bench")
    parser.add_argument("--out", type=Path, default=repo.docs / "mutants_bench.json")
    args = parser.parse_args()

    os.environ["PATH"] = os.pathsep.join([str(repo.venv / "bin"), os.environ.get("PATH", "")])
    env = dict(pair.split("=", 1) for pair in args.env if pair)
    oracle = Testbench.from_path(args.oracle, args.testcase or None, env)
    design = load_design(args.design, args.config)
    store = MutantStorePaths(args.work / design.name / args.config / "bench-set")
    if store.manifest.is_file() and load_manifest(store).provenance.design_revision == design.revision():
        manifest = load_manifest(store)
        print(f"reusing the {manifest.n}-mutant set at {store.root}")
    else:
        started = time.monotonic()
        manifest = generate(design, oracle, store, GenerateOptions(
            n=args.n, seed=args.seed, set_name=MutantSetName.PUBLIC, jobs=args.jobs, force=True))
        print(f"generated {manifest.n} mutants ({manifest.candidates_tried} candidates) "
              f"in {time.monotonic() - started:.0f} s")

    rows = []
    for simulator in args.simulators:
        run_dir = store.runs / f"bench-{simulator}"
        shutil.rmtree(run_dir, ignore_errors=True)
        started = time.monotonic()
        report = score(design, store, oracle, run_dir, ScoreOptions(simulator=simulator, jobs=args.jobs))
        total_s = time.monotonic() - started
        mutant_phase_s = max(total_s - report.golden.wall_s, 1e-9)
        rows.append({
            "simulator": simulator, "tool": report.provenance.tools.get(simulator, "?"),
            "mutants": report.n, "jobs": args.jobs, "killed": report.killed, "score": report.score,
            "golden_s": report.golden.wall_s, "mutant_phase_s": round(mutant_phase_s, 1),
            "total_s": round(total_s, 1),
            "mutants_per_min": round(60 * report.n / mutant_phase_s, 2),
            "mean_wall_per_mutant_s": round(sum(r.wall_s for r in report.mutants) / max(report.n, 1), 1),
        })
        print(f"{simulator:>9}: {report.n} mutants in {mutant_phase_s:.0f} s (+ golden {report.golden.wall_s:.0f} s) "
              f"= {rows[-1]['mutants_per_min']:.2f} mutants/min with {args.jobs} workers; "
              f"killed {report.killed}/{report.n}")

    result = {
        "benchmark": "mutants scored per minute", "design": design.name, "config": args.config,
        "design_revision": design.revision(), "oracle": str(args.oracle), "testcase": args.testcase,
        "cpu_count": os.cpu_count(), "load_avg_1m_at_end": round(os.getloadavg()[0], 2),
        "measured_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "tools": manifest.provenance.tools, "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
