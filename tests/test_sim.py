"""closer.sim runs real cocotb simulations with Icarus and Verilator, both ways."""

from pathlib import Path

import pytest

from closer.errors import ToolError
from closer.sim import CocotbJob, run_cocotb

FIXTURES = Path(__file__).parent / "fixtures" / "sim"


def _job(tmp_path: Path, simulator: str, **kw) -> CocotbJob:
    return CocotbJob(sources=[FIXTURES / "counter.v"], toplevel="counter", test_module="test_counter",
                     test_dir=FIXTURES, build_dir=tmp_path / simulator, simulator=simulator,
                     parameters={"WIDTH": 4}, timeout_s=300, **kw)


@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
def test_correct_design_passes(tmp_path, simulator):
    result = run_cocotb(_job(tmp_path, simulator))
    assert result.passed, result.log.read_text()[-2000:]
    assert (result.tests, result.failed) == (1, 0)


def test_wrong_expectation_fails(tmp_path):
    result = run_cocotb(_job(tmp_path, "icarus", env={"COUNTER_EXPECT_OFFSET": "1"}))
    assert result.completed and result.build_ok
    assert (result.tests, result.failed) == (1, 1)
    assert not result.passed


def test_build_error_is_reported(tmp_path):
    broken = tmp_path / "broken.v"
    broken.write_text((FIXTURES / "counter.v").read_text().replace("endmodule", ""))
    job = _job(tmp_path, "icarus")
    job.sources = [broken]
    with pytest.raises(ToolError, match="build of counter failed"):
        run_cocotb(job)
    result = run_cocotb(job, check_build=False)
    assert not result.build_ok and not result.passed


def test_verilator_split_output_builds(tmp_path):
    # Several C++ files make Verilator's makefile use a precompiled header (see closer.sim).
    job = _job(tmp_path, "verilator", build_args=["--output-split", "1", "--output-split-cfuncs", "1"])
    result = run_cocotb(job)
    assert result.passed, result.log.read_text()[-2000:]
    assert list(job.build_dir.glob("*__pch.h.fast.gch")), "the split build did not use the PCH path"
