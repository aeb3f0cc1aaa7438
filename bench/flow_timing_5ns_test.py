"""Run: `.venv/bin/python -m pytest -p tests.conftest bench/flow_timing_5ns_test.py` (a full gcd run at
5 ns with two repair rounds; kept out of `make test` for its time while it is an expected failure).

gcd at a 5 ns clock (twice its design clock) signs off at every corner with the default flow
settings through `closer flow run --strict`: the flow's setup repair (closer.physical.repair.sizing,
with the isolation buffers of closer.physical.repair.buffering when `buffer_passes` > 0) has to
close the ss corner, which misses by about 0.46 ns with parasitics before it, and hold must stay
met (closer.physical.repair.hold)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from closer.flow.paths import FlowPaths
from tests.conftest import require_tool

pytestmark = pytest.mark.slow

# measured 2026-12-01: sizing only, ss -0.458 -> -0.185 ns after two rounds; with the isolation
# buffers and the 4 % repair derate, round 1 in OpenSTA -0.666 -> -0.142 ns (derated) but -0.678 ns
# after its reroute (77 resized cells spilled to new sites, their wires longer), -0.133 ns after
# round 2 (so buffering is off by default). Strict, so the test reports the day it passes.
GCD_5NS_OPEN = "setup repair leaves ss at -0.185 ns: its in-tool gains do not survive the reroute"

CORNERS = ("tt_025C_1v80", "ss_100C_1v60", "ff_n40C_1v95")


def _gcd_at(root: Path, repo, period_ns: float) -> Path:
    folder = root / "gcd"
    shutil.copytree(repo.design_dir("gcd"), folder, ignore=shutil.ignore_patterns("weak"))
    toml = folder / "design.toml"
    toml.write_text(re.sub(r"(?m)^period_ns = .*$", f"period_ns = {period_ns}", toml.read_text()))
    sdc = folder / "constraints" / "gcd.sdc"
    sdc.write_text(re.sub(r"-period \S+", f"-period {period_ns}", sdc.read_text()))
    return folder


@pytest.mark.xfail(strict=True, reason=GCD_5NS_OPEN)
def test_gcd_at_5ns_signs_off_at_every_corner(tmp_path: Path, pdk_paths):
    from closer.paths import repo_paths

    for tool in ("verilator", "yosys", "sta"):
        require_tool(tool)
    folder = _gcd_at(tmp_path, repo_paths(), 5.0)
    done = subprocess.run([sys.executable, "-m", "closer", "flow", "run", str(folder), "--out", str(tmp_path / "run"),
                           "--strict"], capture_output=True, text=True, timeout=1500)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, last
    assert last.startswith("sign-off: PASS") and "✗" not in last
    meta = json.loads(FlowPaths(tmp_path / "run", "gcd").metadata.read_text())
    for corner in CORNERS:
        q = f"__corner__{corner}"
        assert meta["finish__timing__setup__ws" + q] >= 0 and meta["finish__timing__hold__ws" + q] >= 0
        assert meta["finish__timing__drv__max_slew" + q] == 0 and meta["finish__timing__drv__max_cap" + q] == 0
    # the repair did the closing, not the synthesis
    assert meta["closer__setup_repair__resized"] + meta["closer__setup_repair__buffers"] > 0
