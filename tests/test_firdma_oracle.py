"""firdma oracle, both ways, with real simulators: the golden RTL and the weak-but-correct start
pass the directed oracle; every hand-written faulty variant is rejected.

The CI set runs on Icarus with the small configuration. The Verilator run is marked slow (its C++
build alone takes about a minute); the full seed regressions are `bench/firdma_regress.py`."""

from __future__ import annotations

import pytest

from closer.firdma.oracle import (apply_fault, firdma_paths, load_config, load_faults, run_directed,
                                  weak_rtl_dir)
from tests.conftest import require_tool

FAULTS = load_faults()


def _explain(result) -> str:
    lines = [ln for ln in result.log.read_text(errors="replace").splitlines() if "Oracle" in ln or "Error" in ln]
    return "\n".join(lines[-5:]) or result.log.read_text(errors="replace")[-2000:]


def test_golden_passes_directed_icarus(tmp_path):
    require_tool("iverilog")
    result = run_directed(firdma_paths().rtl, load_config("small"), tmp_path / "golden")
    assert result.passed, _explain(result)
    assert (result.tests, result.failed) == (1, 0)


def test_weak_start_passes_directed_icarus(tmp_path):
    require_tool("iverilog")
    result = run_directed(weak_rtl_dir(tmp_path / "weak-rtl"), load_config("small"), tmp_path / "weak")
    assert result.passed, _explain(result)


@pytest.mark.parametrize("fault", FAULTS, ids=[f.id for f in FAULTS])
def test_fault_is_rejected(tmp_path, fault):
    require_tool("iverilog")
    rtl = apply_fault(fault, firdma_paths().rtl, tmp_path / "rtl")
    result = run_directed(rtl, load_config("small"), tmp_path / "sim")
    assert result.build_ok, f"fault {fault.id} does not compile: {result.log}"
    assert result.completed and result.tests == 1
    assert result.failed == 1, f"fault {fault.id} ({fault.description}) escaped the oracle"


@pytest.mark.slow
def test_golden_passes_directed_verilator(tmp_path):
    require_tool("verilator")
    result = run_directed(firdma_paths().rtl, load_config("small"), tmp_path / "golden", simulator="verilator")
    assert result.passed, _explain(result)
