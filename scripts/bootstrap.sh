#!/usr/bin/env bash
# Idempotent set-up of everything Closer needs on Debian 12: system tools, .venv, Python packages,
# and the `yosys` launcher over pyosys. Safe to run repeatedly; a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV="$ROOT/.venv"
STAMP_DIR="$VENV/.closer-bootstrap"

APT_PACKAGES=(
  iverilog verilator yosys opensta klayout graywolf qrouter magic netgen-lvs
  gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf picolibc-riscv64-unknown-elf
  build-essential make git tcl tcl-dev tk-dev libxt-dev time bubblewrap ccache
  python3 python3-venv ca-certificates
)

log() { printf '[bootstrap] %s\n' "$*"; }

missing_apt=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing_apt+=("$p")
done
if ((${#missing_apt[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  log "installing Debian packages: ${missing_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing_apt[@]}" >/dev/null
else
  log "Debian packages present"
fi

PYTHON=${PYTHON:-python3}
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
mkdir -p "$STAMP_DIR"

req_hash=$(cat requirements.lock pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$STAMP_DIR/requirements" 2>/dev/null)" != "$req_hash" ]; then
  log "installing Python packages (requirements.lock)"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q -r requirements.lock
  "$VENV/bin/pip" install -q --no-deps -e .
  echo "$req_hash" > "$STAMP_DIR/requirements"
else
  log "Python packages present"
fi

# Closer's own bytecode, written here because its processes often cannot: inside a sandbox the
# package is mounted read-only, and every `closer-tool` call would compile it again (up to date
# files are skipped, so this is quick on a second run).
"$VENV/bin/python" -m compileall -q -j 0 closer >/dev/null

# `closer-tool` and `closer` as launchers that start Python without site (`-SI`: a cached status or
# the command listing without the console scripts' 50-70 ms of site), written over pip's console
# scripts each time (closer.launchers.nosite).
for command in closer-tool closer; do
  "$VENV/bin/python" -m closer.launchers.nosite "$command" "$VENV/bin/$command" >/dev/null
done

# qrouter 1.4.88 with our patches (closer/physical/route/patches/qrouter-*.patch) for the classic backend;
# Debian bookworm packages only 1.4.71. Fast when already built.
bash scripts/build-qrouter.sh | sed 's/^/[bootstrap] /'
log "done"
