"""Record PicoRV32's measured facts for docs/picorv32.md (long runs, not part of CI).

    CLOSER_PICORV32_SRC=/path/to/picorv32-clone .venv/bin/python bench/picorv32_record.py [--upstream]

Fetches the pinned source, then: synthesis of the default config (cells, area), OpenSTA at tt and
ss (fmax), the whole firmware suite on RTL (both configs) and on the gate-level netlist (default),
the fmax / debug oracles on the pristine core, and with --upstream upstream's own testbench and
firmware against our netlist of picorv32_axi. Prints the numbers and writes
docs/picorv32-results.json (with provenance).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from closer.designs.fetch import fetch_design, fetch_paths
from closer.paths import repo_paths

VENV_BIN = repo_paths().venv / "bin"
os.environ["PATH"] = os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")])

from closer.picorv32.firmware import build_programs, config_march, config_parameters, programs_for  # noqa: E402
from closer.picorv32.layout import pico_paths  # noqa: E402
from closer.picorv32.oracle import gate_level_job, rtl_job, run_suite  # noqa: E402
from closer.picorv32.provenance import provenance  # noqa: E402
from closer.picorv32.synth import SS, TT, run_sta, synthesize  # noqa: E402
from closer.picorv32.tasks import grade_debug  # noqa: E402
from closer.picorv32.upstream import run_upstream_testbench  # noqa: E402


def _suite_record(suite) -> dict:
    return {"passed": suite.passed, "outcomes": suite.outcomes, "messages": suite.messages,
            "wall_s": round(suite.sim.wall_s, 1)}


def _earlier_upstream(work: Path) -> dict:
    from closer.picorv32.synth import read_stat
    from closer.picorv32.upstream import AXI_TOP, parse_testbench_log

    passed, cycles = parse_testbench_log((work / "testbench.log").read_text(errors="replace"))
    cells, area, _ = read_stat(work / "synth" / "stat.json", AXI_TOP)
    return {"passed": passed, "trap_cycles": cycles, "netlist_cells": cells,
            "netlist_area_um2": round(area, 2), "run_dir": str(work)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", action="store_true", help="also run upstream's testbench on our netlist")
    parser.add_argument("--upstream-from", type=Path, default=None,
                        help="record an earlier upstream run (its work dir) instead of re-running")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=repo_paths().docs / "picorv32-results.json")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="picorv32-record-"))
    src = fetch_design("picorv32", from_path=os.environ.get("CLOSER_PICORV32_SRC") or None)
    rtl = src / "picorv32.v"
    record: dict = {"provenance": provenance(rtl, [TT, SS]), "work": str(work)}

    synth = synthesize([rtl], work / "synth", config_parameters("default"))
    record["synthesis"] = {"config": "default", "liberty": TT, "cells": synth.cells,
                           "area_um2": round(synth.area_um2, 2), "flip_flops": synth.sequential_cells,
                           "wall_s": round(synth.wall_s, 1)}
    record["sta"] = {}
    for corner in (TT, SS):
        sta = run_sta(synth.netlist, pico_paths().sdc, work / "sta", corner, 10.0)
        record["sta"][corner] = {"period_ns": 10.0, "worst_slack_ns": sta.worst_slack_ns,
                                 "fmax_mhz": round(sta.fmax_mhz, 2)}
    print(json.dumps(record["synthesis"]), json.dumps(record["sta"]), flush=True)

    record["rtl"] = {}
    for config in ("default", "rv32im"):
        images = build_programs(programs_for(config), config_march(config), work / f"fw_{config}")
        suite = run_suite(rtl_job([rtl], images, work / f"rtl_{config}", config_parameters(config)))
        record["rtl"][config] = _suite_record(suite)
        print("rtl", config, json.dumps(record["rtl"][config]), flush=True)
    images = build_programs(programs_for("default"), config_march("default"), work / "fw_default")
    t0 = time.monotonic()
    gls = run_suite(gate_level_job(synth.netlist, images, work / "gls_default", timeout_s=6 * 3600))
    record["gls"] = {"default": _suite_record(gls) | {"wall_s": round(time.monotonic() - t0, 1)}}
    print("gls", json.dumps(record["gls"]), flush=True)

    golden = grade_debug(rtl, work / "debug_golden")
    faulty = grade_debug(fetch_paths("picorv32").debug / "picorv32.v", work / "debug_faulty")
    record["debug"] = {"golden": golden.model_dump(), "faulty": faulty.model_dump()}
    print("debug", golden.reward, faulty.reward, flush=True)

    if args.upstream:
        up = run_upstream_testbench(src, work / "upstream")
        record["upstream_testbench"] = {"passed": up.passed, "trap_cycles": up.trap_cycles,
                                        "netlist_cells": up.synth.cells,
                                        "netlist_area_um2": round(up.synth.area_um2, 2),
                                        "sim_wall_s": round(up.wall_s, 1)}
        print("upstream", json.dumps(record["upstream_testbench"]), flush=True)
    elif args.upstream_from:
        record["upstream_testbench"] = _earlier_upstream(args.upstream_from)
        print("upstream (earlier run)", json.dumps(record["upstream_testbench"]), flush=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
