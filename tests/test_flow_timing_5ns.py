"""gcd at a 5 ns clock (twice its design clock) signs off at every corner with the default flow
settings through `closer flow run --strict`: the synthesis leaves the ss corner short (about
-0.46 ns with the routed parasitics), and the flow's setup repair (closer.physical.repair.sizing:
gate sizing, then isolation buffers for off-path loads, closer.physical.repair.buffering) has to
close it while hold stays met (closer.physical.repair.hold). One full gcd flow (slow)."""

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

CORNERS = ("tt_025C_1v80", "ss_100C_1v60", "ff_n40C_1v95")


def _gcd_at(root: Path, repo, period_ns: float) -> Path:
    folder = root / "gcd"
    shutil.copytree(repo.design_dir("gcd"), folder, ignore=shutil.ignore_patterns("weak"))
    toml = folder / "design.toml"
    toml.write_text(re.sub(r"(?m)^period_ns = .*$", f"period_ns = {period_ns}", toml.read_text()))
    sdc = folder / "constraints" / "gcd.sdc"
    sdc.write_text(re.sub(r"-period \S+", f"-period {period_ns}", sdc.read_text()))
    return folder


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
