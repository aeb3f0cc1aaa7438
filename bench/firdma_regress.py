"""The full firdma oracle regression (run once, recorded in docs/firdma.md and
docs/firdma-regress.json): directed + 10 public seeds + the hidden set, on Icarus and Verilator,
for the golden RTL and the weak-but-correct start, plus the `cycles` workload.

    .venv/bin/python bench/firdma_regress.py [--sims icarus,verilator] [--variants golden,weak]
"""

from __future__ import annotations

import json
import sys
import time
import tomllib

import click

from closer.toolchain import use_venv_tools
from closer.firdma.oracle import (firdma_paths, load_config, load_seed_set, run_cycles, run_directed,
                                  run_seeds, weak_rtl_dir)
from closer.paths import repo_paths

BUILD = repo_paths().root / "build" / "firdma-regress"
OUT = repo_paths().docs / "firdma-regress.json"
PUBLIC_CONFIG = {"golden": "small", "weak": "small"}
CYCLES_CONFIG = {"golden": "full", "weak": "weak_full"}


def _record(kind: str, variant: str, sim: str, config: str, seeds: list[int] | None, result) -> dict:
    row = {"kind": kind, "variant": variant, "simulator": sim, "config": config, "seeds": seeds,
           "passed": result.passed, "tests": result.tests, "failed": result.failed,
           "wall_s": round(result.wall_s, 1), "log": str(result.log)}
    print(f"| {variant} | {kind} | {config} | {sim} | {'' if not seeds else f'{seeds[0]}..{seeds[-1]} ({len(seeds)})'} "
          f"| {'PASS' if result.passed else 'FAIL'} | {row['wall_s']} |", flush=True)
    return row


@click.command()
@click.option("--sims", default="icarus,verilator")
@click.option("--variants", default="golden,weak")
@click.option("--skip-cycles", is_flag=True)
def main(sims: str, variants: str, skip_cycles: bool) -> None:
    paths = firdma_paths()
    public = load_seed_set(paths.seeds)
    hidden = tomllib.loads(paths.hidden.read_text())
    results = json.loads(OUT.read_text()) if OUT.is_file() else {"runs": [], "cycles": {}}
    ok = True
    for variant in variants.split(","):
        rtl = weak_rtl_dir(BUILD / f"{variant}-rtl") if variant == "weak" else paths.rtl
        for sim in sims.split(","):
            rows = []
            for cfg in ("small", "wide", "full"):
                rows.append(_record("directed", variant, sim, cfg, None,
                                    run_directed(rtl, load_config(cfg), BUILD / f"{variant}-{sim}-directed-{cfg}", sim)))
            cfg = PUBLIC_CONFIG[variant]
            rows.append(_record("public", variant, sim, cfg, public.seeds,
                                run_seeds(rtl, load_config(cfg), BUILD / f"{variant}-{sim}-public", public.seeds,
                                          public.conditions, sim)))
            for i, run in enumerate(hidden["run"]):
                rows.append(_record("hidden", variant, sim, run["config"], run["seeds"],
                                    run_seeds(rtl, load_config(run["config"]), BUILD / f"{variant}-{sim}-hidden{i}",
                                              run["seeds"], run["conditions"], sim)))
            results["runs"] = [r for r in results["runs"] if not (r["variant"] == variant and r["simulator"] == sim)]
            results["runs"] += rows
            ok &= all(r["passed"] for r in rows)
            results["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            OUT.write_text(json.dumps(results, indent=1) + "\n")
        if not skip_cycles:
            cfg = CYCLES_CONFIG[variant]
            metrics = run_cycles(rtl, load_config(cfg), BUILD / f"{variant}-cycles")
            results["cycles"][variant] = metrics | {"config": cfg, "simulator": "icarus"}
            print(f"cycles {variant} {cfg}: {metrics['cycles']}", flush=True)
            OUT.write_text(json.dumps(results, indent=1) + "\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    use_venv_tools()
    main()
