"""closer.sim runs real cocotb simulations with Icarus and Verilator, both ways."""

import os
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


def test_verilator_builds_compile_through_the_callers_ccache(tmp_path, monkeypatch):
    """With $CLOSER_CCACHE_DIR (the session's, see conftest) a second build of the same model
    compiles every object through the cache; without it no cache is used; a sandboxed tool never
    inherits the variable."""
    import subprocess

    from closer.sandbox.tools import for_call
    from closer.sim import CCACHE_ENV, compiler_cache

    cache = Path(os.environ.get(CCACHE_ENV) or tmp_path / "ccache")
    monkeypatch.setenv(CCACHE_ENV, str(cache))

    def hits() -> int:
        stats = subprocess.run(["ccache", "--print-stats"], env={**os.environ, "CCACHE_DIR": str(cache)},
                               capture_output=True, text=True, check=True).stdout
        counts = dict(line.split("\t") for line in stats.splitlines())
        return int(counts["direct_cache_hit"]) + int(counts["preprocessed_cache_hit"])

    assert run_cocotb(_job(tmp_path / "first", "verilator")).passed
    before = hits()
    second = _job(tmp_path / "second", "verilator")
    assert run_cocotb(second).passed
    objects = list(second.build_dir.rglob("*.o"))
    assert objects and hits() - before >= len(objects)  # (other workers' builds may add hits too)
    monkeypatch.delenv(CCACHE_ENV)
    assert compiler_cache() is None
    assert f"--unsetenv {CCACHE_ENV}" in " ".join(for_call(tmp_path / "call").wrap(["true"]))


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
