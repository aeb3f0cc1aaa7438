#!/usr/bin/env bash
# The main job on the built-in default design (gcd), as far as the product exists: check the
# toolchain and PDK, run the whole flow (lint, synthesis, three-corner STA and power, place and
# route, GDS, DRC, LVS) with real tools,
# score the ORFS-keyed metadata.json with the gated reward, then run the task loop.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
OUT=${CLOSER_DEMO_OUT:-runs/demo/gcd}
closer doctor
closer flow run gcd --out "$OUT"   # lint, synthesis, STA, place and route, DRC, LVS
closer reward --metrics "$OUT/metadata.json" --targets designs/gcd/targets-signoff.toml  # gates: sta, route, drc, lvs
echo "metadata: $OUT/metadata.json"
# The task loop: generate the nine A/B/C tasks, run the scripted `sweep` baseline (a machinery
# baseline, not a model) on gcd-B-low through the metered tools, evaluate, report.
python -m closer.tasks.demo --out runs/demo/tasks
