"""firdma RTL with real tools: Verilator -Wall lint of every configuration (golden and weak),
Yosys synthesis of `small` to sky130_fd_sc_hd and OpenSTA at its 20 ns clock."""

from __future__ import annotations

import subprocess

import pytest

from closer.firdma.oracle import firdma_paths, load_config, rtl_sources, weak_rtl_dir
from closer.firdma.synth import synthesize, sta
from tests.conftest import require_tool


def _lint(sources, config):
    params = [f"-G{k}={v}" if not isinstance(v, str) else f'-G{k}="{v}"' for k, v in config.parameters.items()]
    return subprocess.run([require_tool("verilator"), "--lint-only", "-Wall", "--top-module", "firdma",
                           *params, *map(str, sources)], capture_output=True, text=True)


@pytest.mark.parametrize("name", ["small", "full", "wide"])
def test_golden_lints_clean(name):
    config = load_config(name)
    proc = _lint(rtl_sources(firdma_paths().rtl, config), config)
    assert proc.returncode == 0, proc.stderr


def test_weak_lints_clean(tmp_path):
    config = load_config("weak_full")
    proc = _lint(rtl_sources(weak_rtl_dir(tmp_path / "weak"), config), config)
    assert proc.returncode == 0, proc.stderr


def test_lint_rejects_a_broken_file(tmp_path):
    rtl = weak_rtl_dir(tmp_path / "rtl")
    (rtl / "firdma_ctrl.sv").write_text((rtl / "firdma_ctrl.sv").read_text().replace("wire drained", "wire [1:0] drained"))
    config = load_config("small")
    assert _lint(rtl_sources(rtl, config), config).returncode != 0


def test_small_synthesizes_and_meets_its_clock(tmp_path, pdk_paths):
    require_tool("yosys")
    require_tool("sta")
    config = load_config("small")
    synth = synthesize(firdma_paths().rtl, config, tmp_path / "synth")
    assert synth.cells > 1000 and synth.flops > 500 and synth.area_um2 > 10000
    assert synth.macros == 0
    timing = sta(synth.netlist, config, tmp_path / "synth")   # mapped on tt, timed on tt
    assert timing.period_ns == 20.0
    assert timing.met, f"golden small misses 20 ns: WNS {timing.wns_ns} ns ({timing.log})"
    # The same STA on a deliberately tighter clock must report the violation.
    tight = sta(synth.netlist, type(config)(config.name, config.parameters, 2.0), tmp_path / "tight")
    assert not tight.met and tight.wns_ns < 0
