"""gcd at a 5 ns clock (twice its design clock) signs off at every corner with the default flow
settings through `closer flow run --strict`: setup at ss_100C_1v60 is the hard part (the logic is
about as long as the period there), and hold, slew and capacitance must stay met at every corner.

The margin comes from synthesis: the default `balanced` strategy's first ABC script misses the
delay target here (ABC's own estimate ~4.4 ns against 3.5 ns), so synthesis runs its second,
`&syn2` rewriting before the balancing, and keeps that netlist (closer.flow.synth_choice); it has
positive ss slack before placement. (With the first script's netlist the setup repair after
routing ended at ss -0.185 ns: docs/physical.md, "Timing repair".) The first script is kept where
it meets the target (gcd at 10 ns in tests/test_flow.py, the weak gcd in
tests/test_flow_settings.py); the failing side of the verdict is two-way tested in
tests/test_flow_verdict.py and on the weak gcd in tests/test_flow_settings.py."""

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
                           "--strict"], capture_output=True, text=True, timeout=1200)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, last
    assert last.startswith("sign-off: PASS") and "✗" not in last
    meta = json.loads(FlowPaths(tmp_path / "run", "gcd").metadata.read_text())
    for corner in CORNERS:
        q = f"__corner__{corner}"
        assert meta["finish__timing__setup__ws" + q] >= 0 and meta["finish__timing__hold__ws" + q] >= 0
        assert meta["finish__timing__drv__max_slew" + q] == 0 and meta["finish__timing__drv__max_cap" + q] == 0
    assert meta["constraints__clocks__details"] == ["core_clock: 5.0000"]
    # the first script missed ABC's target, the second met it and its netlist was kept
    assert meta["closer__synth__abc_scripts_tried"] == ["balanced", "balanced+syn2"]
    assert meta["closer__synth__abc_script"] == "balanced+syn2"
    first, second = meta["closer__synth__abc_delays_ps_tried"]
    assert first > meta["closer__synth__abc_target_ps"] >= second
    assert meta["closer__synth__abc_target_ps"] == pytest.approx(3500.0)  # 5 ns less the 30 % margin
    # the synthesized netlist already meets setup at ss without wires: the margin the routing takes
    assert meta["synth__timing__setup__ws__corner__ss_100C_1v60"] > 0
    run = FlowPaths(tmp_path / "run", "gcd")
    assert run.synth_attempt_log("balanced").is_file() and run.synth_attempt_log("balanced+syn2").is_file()


def test_an_unchanged_rerun_reuses_both_synthesis_attempts(tmp_path: Path, pdk_paths):
    """Both ABC scripts run at 5 ns and share the node folders: the rerun puts each attempt's nodes
    back before its script (closer.flow.runner._restore_attempt), so nothing is synthesized again
    and the metadata is the same; a changed clock period reruns them, as a fresh run would give."""
    from closer.flow.runner import run_flow
    from closer.paths import repo_paths

    for tool in ("verilator", "yosys", "sta"):
        require_tool(tool)
    folder = _gcd_at(tmp_path, repo_paths(), 5.0)
    out = tmp_path / "run"
    first = run_flow(str(folder), to="sta", out=out)
    meta = FlowPaths(out, "gcd").metadata.read_bytes()
    assert json.loads(meta)["closer__synth__abc_scripts_tried"] == ["balanced", "balanced+syn2"]
    again = run_flow(str(folder), to="sta", out=out)
    assert again.all_reused, [(s.name, s.reused) for s in again.steps]
    assert FlowPaths(out, "gcd").metadata.read_bytes() == meta
    assert not any(s.reused for s in first.steps)
    # another period: the restored nodes' inputs changed, so they run again, as in a fresh folder
    _gcd_at(tmp_path / "p45", repo_paths(), 4.5)
    shutil.rmtree(folder)
    shutil.copytree(tmp_path / "p45" / "gcd", folder)
    changed = run_flow(str(folder), to="sta", out=out)
    assert [(s.name, s.reused) for s in changed.steps if s.name in ("synth", "sta")] == [("synth", False), ("sta", False)]
    fresh = run_flow(str(folder), to="sta", out=tmp_path / "fresh")
    assert Path(changed.metadata).read_bytes() == Path(fresh.metadata).read_bytes()
