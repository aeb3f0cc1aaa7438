"""The firdma requirements map and test_spec, both ways.

* The map: every requirement of oracles/firdma/requirements.toml has a check that can fail it,
  every check names a known requirement, and the table in docs/firdma.md is the generated one.
* The oracle: the golden RTL passes test_spec (public conditions, Icarus; Verilator is slow), and
  a representative subset of oracles/firdma/faults/spec_faults.toml (one per area) is killed by
  test_spec under the hidden small-config conditions, with a failure that names a requirement.
  Every fault against the whole hidden set: bench/firdma_faults.py (docs/firdma.md).
"""

from __future__ import annotations

import re

import pytest

from closer.firdma.oracle import (Fault, apply_fault, firdma_paths, load_config, load_faults, load_hidden_runs,
                                  load_seed_set, run_directed, run_max_len, run_spec)
from closer.firdma.requirements import BEGIN, END, render_table, replace_block, requirements_map
from tests.conftest import require_tool

SPEC_FAULTS = load_faults(firdma_paths().spec_faults)
# (fault, hidden config): one per area, each caught early in test_spec (the slow kills run in bench/).
CI_FAULTS = [("lite_arready_tied_high", "small"), ("w1c_aborted_by_any_write", "small"),
             ("start_abort_busy_ignored", "small"), ("unmapped_write_hits_coef", "small"),
             ("decerr_write_ignored", "small"), ("misaligned_word_check", "wide")]
FAILURE_WITH_REQ = re.compile(r"OracleFailure: .*\[([A-Z][A-Z0-9-]*)\]")


def _failure_reqs(log_text: str) -> list[str]:
    return FAILURE_WITH_REQ.findall(log_text)


def test_every_requirement_has_a_check_and_every_check_a_requirement():
    reqs, unknown = requirements_map()
    assert not unknown, f"checks name unknown requirements: {sorted(unknown)}"
    unchecked = [r.id for r in reqs.values() if not r.checks]
    assert not unchecked, f"requirements no check can fail: {unchecked}"
    unrun = {r.id: r.unrun_lens for r in reqs.values() if r.unrun_lens}
    assert not unrun, f"requirements whose LEN limits no run reaches: {unrun}"


def test_len_limits_are_reached_by_named_runs():
    """LEN 0 and 1 in test_directed, 65535 (the largest) in a hidden run's test_max_len."""
    reqs, _ = requirements_map()
    runs = reqs["JOB-RESULTS"].lens_run
    assert set(runs) == {0, 1, 65535}
    assert "test_directed" in runs[0] and "test_directed" in runs[1]
    assert any(where.endswith("test_max_len") and where.startswith("hidden") for where in runs[65535])


def test_docs_table_is_the_generated_one():
    reqs, _ = requirements_map()
    doc = (firdma_paths().design.parent.parent / "docs" / "firdma.md").read_text()
    assert BEGIN in doc and END in doc
    assert replace_block(doc, render_table(reqs)) == doc, "run python -m closer.firdma.requirements --write"


def test_spec_faults_are_many_distinct_and_apply(tmp_path):
    assert len(SPEC_FAULTS) >= 20
    assert len({f.id for f in SPEC_FAULTS}) == len(SPEC_FAULTS)
    golden = firdma_paths().rtl
    for fault in SPEC_FAULTS:
        out = apply_fault(fault, golden, tmp_path / fault.id)
        assert (out / fault.file).read_text() != (golden / fault.file).read_text()
    assert {fid for fid, _ in CI_FAULTS} <= {f.id for f in SPEC_FAULTS}


def test_hidden_conditions_differ_from_public_and_cover_the_spec_knobs():
    public = load_seed_set(firdma_paths().seeds)
    for config, seed_set in load_hidden_runs():
        assert not set(seed_set.seeds) & set(public.seeds)
        assert seed_set.conditions != public.conditions
        assert seed_set.conditions["long_len"] >= public.conditions.get("long_len", 4099)
        assert seed_set.conditions["decerr_prob"] > 0 and seed_set.conditions["exokay_prob"] > 0


@pytest.mark.slow
def test_golden_passes_spec_icarus(tmp_path):
    require_tool("iverilog")
    public = load_seed_set(firdma_paths().seeds)
    result = run_spec(firdma_paths().rtl, load_config("small"), tmp_path / "golden", public.seeds[0],
                      public.conditions)
    assert result.passed, result.log.read_text(errors="replace")[-3000:]
    assert "functional coverage test_spec" in result.log.read_text(errors="replace")


@pytest.mark.slow
def test_golden_passes_spec_verilator(tmp_path):
    require_tool("verilator")
    public = load_seed_set(firdma_paths().seeds)
    result = run_spec(firdma_paths().rtl, load_config("small"), tmp_path / "golden", public.seeds[0],
                      public.conditions, simulator="verilator")
    assert result.passed, result.log.read_text(errors="replace")[-3000:]


@pytest.mark.slow
def test_golden_passes_max_len_icarus(tmp_path):
    """test_max_len's job and checks on the golden RTL, at a LEN CI can afford (65535 in the hidden
    set: bench/firdma_mutants.py and `seeds --set hidden`, about 10+ minutes)."""
    require_tool("iverilog")
    result = run_max_len(firdma_paths().rtl, load_config("small"), tmp_path / "golden", 7301, 300)
    assert result.passed, result.log.read_text(errors="replace")[-3000:]
    assert "job max_len_300: LEN=300" in result.log.read_text(errors="replace")


@pytest.mark.slow
def test_max_len_kills_the_wrapping_beat_count(tmp_path):
    """A read beat count computed in 16 bits passes every LEN below 65535; test_max_len kills it."""
    require_tool("iverilog")
    fault = next(f for f in SPEC_FAULTS if f.id == "len_max_beats_overflow")
    rtl = apply_fault(fault, firdma_paths().rtl, tmp_path / "rtl")
    result = run_max_len(rtl, load_config("small"), tmp_path / "sim", 7301, 65535)
    assert result.build_ok and result.completed and result.tests == 1
    assert result.failed == 1, "the 16-bit beat count escaped test_max_len"
    assert "JOB-" in "".join(_failure_reqs(result.log.read_text(errors="replace")))


@pytest.mark.parametrize("fault_id,config", CI_FAULTS, ids=[fid for fid, _ in CI_FAULTS])
def test_spec_fault_is_killed_by_hidden_spec(tmp_path, fault_id, config):
    require_tool("iverilog")
    fault = next(f for f in SPEC_FAULTS if f.id == fault_id)
    seed_set = next(s for c, s in load_hidden_runs() if c == config)
    rtl = apply_fault(fault, firdma_paths().rtl, tmp_path / "rtl")
    result = run_spec(rtl, load_config(config), tmp_path / "sim", seed_set.seeds[0], seed_set.conditions)
    assert result.build_ok, f"fault {fault.id} does not compile: {result.log}"
    assert result.completed and result.tests == 1
    assert result.failed == 1, f"fault {fault.id} ({fault.description}) escaped test_spec"
    reqs = _failure_reqs(result.log.read_text(errors="replace"))
    assert reqs, "the failure does not name a requirement"


# Design outputs that are X or Z where the oracle reads them (the bench's AXI models would crash on
# them with a raw ValueError): each must fail naming the requirement the value is judged by.
X_FAULTS = [
    (Fault("x_wdata", "an out-of-range index in the FIR's compressor tree: X results on WDATA", "firdma_fir.sv",
           "l2[2*j+1] = ((l1[3*j] & l1[3*j+1])", "l2[2*j+1] = ((l1[3*j] & l1[3*j-1])"), "WRITE-STROBES"),
    (Fault("x_arvalid", "ARVALID not reset", "firdma_rd_dma.sv", "halted        <= 1'b0;\n            m_axi_arvalid <= 1'b0;",
           "halted        <= 1'b0;"), "AXI-HANDSHAKE"),
    (Fault("x_err_code", "ERR_CODE not reset: X on the AXI4-Lite read data of STATUS", "firdma_regs.sv",
           "st_err_code   <= 4'd0;", ""), "LITE-HANDSHAKE"),
]


@pytest.mark.parametrize("fault,req", X_FAULTS, ids=[f.id for f, _ in X_FAULTS])
def test_x_on_a_checked_output_fails_naming_its_requirement(tmp_path, fault, req):
    require_tool("iverilog")
    rtl = apply_fault(fault, firdma_paths().rtl, tmp_path / "rtl")
    result = run_directed(rtl, load_config("small"), tmp_path / "sim")
    log = result.log.read_text(errors="replace")
    assert result.build_ok and result.completed and result.failed == 1, log[-2000:]
    assert "Can't convert LogicArray" not in log
    assert _failure_reqs(log) == [req], log[-2000:]
    assert "(X or Z)" in log
