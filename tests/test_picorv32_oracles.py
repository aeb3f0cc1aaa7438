"""PicoRV32 firmware oracles (RTL and gate level) and the pilot tasks' oracles, both directions."""

from __future__ import annotations

import shutil
import zlib

import pytest

from closer.designs.fetch import apply_patch, fault_patches, fetch_paths
from closer.picorv32.firmware import (FirmwareImage, build_program, build_programs, config_march,
                                      config_parameters, load_manifest, programs_for)
from closer.picorv32.oracle import gate_level_job, rtl_job, run_suite
from closer.picorv32.synth import parse_worst_slack
from closer.picorv32.tasks import evaluate_fmax, grade_debug, load_debug_hidden, load_fmax_task
from closer.picorv32.upstream import parse_testbench_log
from tests.conftest import require_tool
from tests.picorv32_support import DESIGN, picorv32_source


def _sieve_reference(n: int) -> int:
    primes = [i for i in range(2, n) if all(i % d for d in range(2, int(i ** 0.5) + 1))]
    return (len(primes) << 20) ^ sum(primes)


def test_manifest_expectations_match_independent_references():
    programs = load_manifest().programs
    assert programs["crc32"].expect == zlib.crc32(bytes((i * 7 + 3) % 256 for i in range(256)))
    assert programs["sieve"].expect == _sieve_reference(1000)
    for name in ("alu", "shift", "loadstore", "branch", "muldiv"):  # self-checking: PASS + count
        assert programs[name].expect >> 16 == 0x600D


def test_firmware_builds_for_rv32i(tmp_path):
    require_tool("riscv64-unknown-elf-gcc")
    images = build_programs(programs_for("default"), config_march("default"), tmp_path)
    assert {i.name for i in images} == {"alu", "shift", "loadstore", "branch", "sieve", "crc32"}
    for image in images:
        header = image.elf.read_bytes()[:20]
        assert header[4] == 1 and int.from_bytes(header[18:20], "little") == 243  # ELF32, RISC-V
        assert 0 < image.image.stat().st_size < 64 * 1024


def test_rtl_oracle_passes_rv32im_and_rejects_wrong_expectation(tmp_path):
    src = picorv32_source()
    march = config_march("rv32im")
    good = build_program("muldiv", march, tmp_path / "fw")
    alu = build_program("alu", march, tmp_path / "fw")
    wrong = FirmwareImage("alu_wrong_expect", alu.elf, alu.image, alu.expect + 1, alu.max_cycles)
    suite = run_suite(rtl_job([src / "picorv32.v"], [good, wrong], tmp_path / "sim",
                              config_parameters("rv32im")))
    assert suite.outcomes == {"muldiv": True, "alu_wrong_expect": False}
    assert "expected 0x600d0019" in suite.messages["alu_wrong_expect"]


def test_rtl_oracle_catches_trap(tmp_path):
    """muldiv on the default config (no M extension) raises trap: illegal instruction."""
    src = picorv32_source()
    image = build_program("muldiv", "rv32im_zicsr", tmp_path / "fw")
    suite = run_suite(rtl_job([src / "picorv32.v"], [image], tmp_path / "sim",
                              config_parameters("default")))
    assert suite.outcomes == {"muldiv": False}
    assert "trap raised" in suite.messages["muldiv"]


def test_debug_oracle_two_way(tmp_path):
    src = picorv32_source()
    faults = list(load_debug_hidden().faults)
    golden = grade_debug(src / "picorv32.v", tmp_path / "golden")
    assert golden.repaired == faults and golden.reward == 1.0
    faulty = grade_debug(fetch_paths(DESIGN).debug / "picorv32.v", tmp_path / "faulty")
    assert faulty.repaired == [] and faulty.reward == 0.0 and len(faults) == 4
    # a partial repair: every fault but the first injected -> exactly that one counts as repaired
    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copy2(src / "picorv32.v", partial / "picorv32.v")
    for patch in fault_patches(DESIGN)[1:]:
        apply_patch(patch, partial, tmp_path / f"{patch.stem}.log")
    graded = grade_debug(partial / "picorv32.v", tmp_path / "partial_grade")
    assert graded.repaired == [faults[0]] and graded.reward == 0.25


@pytest.fixture(scope="module")
def fmax_golden(tmp_path_factory):
    src = picorv32_source()
    work = tmp_path_factory.mktemp("fmax_golden")
    return evaluate_fmax(src / "picorv32.v", work), work


def test_fmax_reference_passes_gates_and_is_below_target(fmax_golden):
    result, _ = fmax_golden
    assert result.gate_func and result.gate_gls, result.failed_programs
    assert result.fmax_mhz["tt_025C_1v80"] > result.fmax_mhz["ss_100C_1v60"] > 10.0
    assert 0.3 < result.reward < 1.0  # the target is calibrated above our own baseline
    assert result.cells > 3000 and result.area_um2 > 30000


def test_gate_level_oracle_rejects_wrong_expectation(fmax_golden, tmp_path):
    _, work = fmax_golden
    alu = build_program("alu", config_march("default"), tmp_path / "fw")
    wrong = FirmwareImage("alu_wrong_expect", alu.elf, alu.image, alu.expect ^ 1, alu.max_cycles)
    suite = run_suite(gate_level_job(work / "synth" / "picorv32.netlist.v", [wrong], tmp_path / "gls"))
    assert suite.outcomes == {"alu_wrong_expect": False}


def test_fmax_broken_variant_fails_gate(tmp_path):
    picorv32_source()
    result = evaluate_fmax(fetch_paths(DESIGN).debug / "picorv32.v", tmp_path, measure_failed=False)
    assert not result.gate_func and result.reward == 0.0
    assert {"alu", "shift", "loadstore", "branch"} <= set(result.failed_programs)


def test_fmax_task_definition_is_consistent():
    task = load_fmax_task()
    assert task.evaluation.reward_corner in task.evaluation.corners
    assert set(task.evaluation.gls_programs) <= set(programs_for(task.task.config))


def test_sta_and_upstream_log_parsers(tmp_path):
    log = tmp_path / "sta.log"
    log.write_text("Startpoint: _1_\n...\nworst slack -4.3682\n")
    assert parse_worst_slack(log) == pytest.approx(-4.3682)
    log.write_text("Error: netlist.v, line 3 syntax error\nworst slack 1.0\n")
    with pytest.raises(Exception, match="OpenSTA reported an error"):
        parse_worst_slack(log)
    assert parse_testbench_log("TRAP after 461369 clock cycles\nALL TESTS PASSED.\n") == (True, 461369)
    assert parse_testbench_log("TIMEOUT\n") == (False, None)
