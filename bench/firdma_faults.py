"""Every fault of oracles/firdma/faults/spec_faults.toml against the whole hidden set (run once,
recorded in docs/firdma.md and docs/firdma-faults.json): for each fault, the hidden runs
(hidden/hidden.toml: small, wide, full), each as the evaluator runs it (test_spec, test_directed,
test_random), until the first failure; the record keeps which test killed it and the requirement
its failure names.

    .venv/bin/python bench/firdma_faults.py [--sim icarus|verilator] [--only ID ...]
"""

from __future__ import annotations

import json
import re
import sys
import time

import click

from closer.firdma.oracle import apply_fault, firdma_paths, load_config, load_faults, load_hidden_runs, run_set
from closer.firdma.oracle import rtl_revision
from closer.paths import repo_paths
from closer.toolchain import use_venv_tools

BUILD = repo_paths().root / "build" / "firdma-faults"
OUT = repo_paths().docs / "firdma-faults.json"
FAILURE = re.compile(r"OracleFailure: (.*)")


def _first_failure(log_text: str) -> str:
    match = FAILURE.search(log_text)
    return match.group(1)[:300] if match else "(no oracle failure message: simulator error or timeout)"


def _kill(fault, sim: str) -> dict:
    rtl = apply_fault(fault, firdma_paths().rtl, BUILD / fault.id / "rtl")
    started = time.monotonic()
    for cfg, seed_set in load_hidden_runs():
        for name, result in run_set(rtl, load_config(cfg), BUILD / fault.id / f"{cfg}-{sim}", seed_set, sim,
                                    stop_at_failure=True):
            if not result.passed:
                return {"fault": fault.id, "requirement": fault.requirement, "killed_by": f"{cfg}/{name}",
                        "failure": _first_failure(result.log.read_text(errors="replace")),
                        "wall_s": round(time.monotonic() - started, 1)}
    return {"fault": fault.id, "requirement": fault.requirement, "killed_by": None, "failure": "",
            "wall_s": round(time.monotonic() - started, 1)}


@click.command()
@click.option("--sim", default="icarus", type=click.Choice(["icarus", "verilator"]))
@click.option("--only", multiple=True)
def main(sim: str, only: tuple[str, ...]) -> None:
    use_venv_tools()
    rows = []
    for fault in load_faults(firdma_paths().spec_faults):
        if only and fault.id not in only:
            continue
        row = _kill(fault, sim)
        rows.append(row)
        print(f"| {row['fault']} | {row['requirement']} | {row['killed_by'] or 'ESCAPED'} | {row['failure'][:120]} |",
              flush=True)
    record = {"simulator": sim, "golden_revision": rtl_revision(firdma_paths().rtl),
              "recorded": time.strftime("%Y-%m-%d"), "faults": rows,
              "killed": sum(1 for r in rows if r["killed_by"]), "total": len(rows)}
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    sys.exit(0 if record["killed"] == record["total"] else 1)


if __name__ == "__main__":
    main()
