"""Synthesize and time firdma configurations (golden and weak) with Yosys + OpenSTA; print a
Markdown table and write docs/firdma-synth.json (with tool versions and the RTL revision).

    .venv/bin/python bench/firdma_synth.py [small full wide weak:small weak:weak_full ...]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from closer.firdma.oracle import firdma_paths, load_config, rtl_revision, weak_rtl_dir
from closer.toolchain import use_venv_tools
from closer.firdma.synth import CORNER, as_record, sta, synthesize

STA_CORNERS = ("tt_025C_1v80", "ss_100C_1v60")
from closer.paths import repo_paths

BUILD = repo_paths().root / "build" / "firdma-synth"
OUT = repo_paths().docs / "firdma-synth.json"


def tool_versions() -> dict[str, str]:
    def first_line(argv):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "unknown"
    return {"yosys": first_line(["yosys", "-V"]), "sta": first_line(["sta", "-version"])}


def main(items: list[str]) -> None:
    records = json.loads(OUT.read_text()) if OUT.is_file() else {}
    for item in items:
        variant, _, config_name = item.rpartition(":")
        variant = variant or "golden"
        config = load_config(config_name)
        work = BUILD / f"{variant}-{config_name}"
        rtl = weak_rtl_dir(work / "rtl") if variant == "weak" else firdma_paths().rtl
        start = time.monotonic()
        synth = synthesize(rtl, config, work)
        timings = [sta(synth.netlist, config, work, corner) for corner in STA_CORNERS]
        record = as_record(synth, timings) | {
            "variant": variant, "synthesis_corner": CORNER, "rtl_revision": rtl_revision(rtl),
            "parameters": config.parameters, "tools": tool_versions(),
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "bench_wall_s": round(time.monotonic() - start, 1),
            "note": "pre-layout: Yosys + ABC (buffered, sized) netlist mapped on tt, ideal clock"
                    + ("; SRAM macro: area and timing from its only (TT) Liberty" if config.mem_style == "macro" else ""),
        }
        records[f"{variant}:{config_name}"] = record
        OUT.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")
        print(f"| {variant} | {config_name} | {synth.cells} | {synth.flops} | {synth.macros} | {synth.area_um2:.0f} | "
              f"{config.period_ns} | " + " | ".join(f"{t.wns_ns:+.3f} ({'met' if t.met else 'VIOLATED'})" for t in timings)
              + " |", flush=True)


if __name__ == "__main__":
    use_venv_tools()
    main(sys.argv[1:] or ["small", "full", "wide", "weak:small", "weak:weak_full"])
