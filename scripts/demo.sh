#!/usr/bin/env bash
# The main job on the built-in default design (gcd): the largest real piece that exists so far.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
closer doctor
closer pdk check
