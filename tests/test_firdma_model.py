"""firdma: the reference model, the job generator, the configuration files and the fault list
(pure Python, no simulator)."""

from __future__ import annotations

import sys
import tomllib

import pytest

from closer.errors import InputError
from closer.firdma.oracle import RTL_ORDER, apply_fault, firdma_paths, load_config, load_faults, load_seed_set
from closer.firdma.synth import parse_stat

sys.path.insert(0, str(firdma_paths().oracle))
from firdma_jobs import Conditions, directed_jobs, random_jobs  # noqa: E402
from firdma_model import fir, pack_samples, unpack_samples  # noqa: E402


def test_fir_rounds_half_up_with_arithmetic_shift():
    assert fir([3, -3, 5, -1], [1], 1) == [2, -1, 3, 0]          # (-1+1)>>1 = 0, (-3+1)>>1 = -1
    assert fir([1, 2, 3], [1, 1], 0) == [1, 3, 5]                # history x[m<0] = 0


def test_fir_saturates_and_is_exact():
    coefs = [32767] * 32
    assert fir([32767] * 3, coefs, 0) == [32767] * 3
    assert fir([-32768] * 3, coefs, 0) == [-32768] * 3
    # 32 products of 2^30 need 36 bits; the exact sum survives the shift by 31.
    big = fir([-32768] * 32, [-32768] * 32, 31)
    assert big[-1] == ((32 * 2**30 + 2**30) >> 31)


def test_fir_rejects_bad_shift():
    with pytest.raises(ValueError, match="SHIFT"):
        fir([1], [1], 32)


def test_sample_packing_is_little_endian_signed():
    assert pack_samples([1, -2]) == bytes([1, 0, 0xFE, 0xFF])
    assert unpack_samples(pack_samples([-32768, 32767])) == [-32768, 32767]


def test_random_jobs_are_reproducible_and_aligned():
    cond = Conditions(jobs_per_seed=20)
    a, b = random_jobs(3, cond, 4, 64), random_jobs(3, cond, 4, 64)
    assert [j.samples for j in a] == [j.samples for j in b]
    assert random_jobs(4, cond, 4, 64)[0].samples != a[0].samples
    for job in a:
        assert job.src % 8 == 0 and job.dst % 8 == 0
        assert cond.len_min <= job.length <= cond.len_max
        assert job.burst in cond.bursts and len(job.coefs) == 4


def test_directed_jobs_cover_the_edge_cases():
    names = {j.name for j in directed_jobs(4, 32)}
    for needed in ("len_0", "len_1", "crossing_4k", "read_error", "write_error", "abort",
                   "abort_in_write_burst", "misaligned_src", "saturation", "busy_writes"):
        assert needed in names
    crossing = next(j for j in directed_jobs(4, 32) if j.name == "crossing_4k")
    assert (crossing.src & 0xFFF) + 2 * crossing.length > 0x1000


def test_conditions_reject_unknown_keys():
    with pytest.raises(ValueError, match="unknown condition keys"):
        Conditions.from_dict({"jobs": 3})


def test_public_and_hidden_seeds_are_disjoint():
    paths = firdma_paths()
    public = load_seed_set(paths.seeds)
    assert len(public.seeds) == 10
    Conditions.from_dict(public.conditions)
    hidden = tomllib.loads(paths.hidden.read_text())
    hidden_seeds = [s for run in hidden["run"] for s in run["seeds"]]
    assert hidden_seeds and not set(hidden_seeds) & set(public.seeds)
    for run in hidden["run"]:
        Conditions.from_dict(run["conditions"])
        load_config(run["config"])


def test_configs_match_design_toml():
    paths = firdma_paths()
    design = tomllib.loads((paths.design / "design.toml").read_text())
    for name in ("small", "full", "wide"):
        in_design = {"MEM_STYLE": "flop"} | design["configs"][name]["parameters"]  # flop: the RTL default
        assert in_design == load_config(name).parameters
    assert load_config("small").parameters["NTAPS"] == 4 and load_config("small").parameters["FIFO_DEPTH"] == 8
    assert load_config("full").parameters == {"DATA_W": 32, "NTAPS": 16, "FIFO_DEPTH": 512, "MEM_STYLE": "macro"}
    for name in ("small", "full", "wide"):  # the macros and where the floorplan puts them
        config = tomllib.loads(paths.config(name).read_text())
        for key in ("macros", "macro_placements"):
            assert config.get(key, []) == design["configs"][name].get(key, []), (name, key)
    assert design["configs"]["full"]["macro_placements"][0]["instance"].endswith("u_sram")


def test_bad_config_names_file_and_key(tmp_path, monkeypatch):
    paths = firdma_paths()
    bad = tmp_path / "configs"
    bad.mkdir()
    (bad / "broken.toml").write_text("period_ns = 10.0\n[parameters]\nDATA_W = 32\n")
    fake = type(paths)(tmp_path, paths.oracle)
    with pytest.raises(InputError, match=r"broken.toml: missing key parameters.NTAPS"):
        load_config("broken", fake)
    with pytest.raises(InputError, match="no configuration 'nope'"):
        load_config("nope")


def test_faults_apply_to_exactly_one_line(tmp_path):
    faults = load_faults()
    assert len(faults) >= 12
    assert len({f.id for f in faults}) == len(faults)
    golden = firdma_paths().rtl
    for fault in faults:
        out = apply_fault(fault, golden, tmp_path / fault.id)
        before = (golden / fault.file).read_text().splitlines()
        after = (out / fault.file).read_text().splitlines()
        assert len(before) == len(after)
        assert sum(a != b for a, b in zip(before, after)) == 1, fault.id


def test_parse_stat_reads_recorded_yosys_output(tmp_path):
    recorded = """
=== firdma ===
     7916 8.2E+04 cells
      613 1.23E+04   sky130_fd_sc_hd__dfxtp_1
      992 2.98E+04   sky130_fd_sc_hd__edfxtp_1
        1 2.85E+05   sky130_sram_2kbyte_1rw1r_32x512_8
       78  487.968   sky130_fd_sc_hd__nand2b_1
   Chip area for module '\\firdma': 81952.348800
"""
    assert parse_stat(recorded, tmp_path / "stat.txt") == (7916, 81952.3488, 1605, 1)
    with pytest.raises(Exception, match="cannot read"):
        parse_stat("nothing", tmp_path / "stat.txt")


def test_design_folder_loads_with_the_design_model():
    from closer.designs.model import load_design

    design, paths = load_design("firdma")
    assert design.top == "firdma" and design.clock.period_ns == 20.0
    assert [p.name for p in paths.rtl(design)] == RTL_ORDER
    assert {p.name for p in firdma_paths().rtl.glob("*.sv")} == set(RTL_ORDER)
    assert paths.targets(design).is_file()


def test_directed_jobs_reach_the_largest_fir_sum():
    """NTAPS products -32768 x -32768 (the largest sum: an accumulator short of bits wraps it)."""
    for ntaps in (4, 8, 16, 32):
        job = next(j for j in directed_jobs(ntaps, 32) if j.name == "accumulator_max_shift31")
        assert max(fir(job.samples, job.coefs, 31)) == ((ntaps << 30) + (1 << 30)) >> 31
        assert min(fir(job.samples, job.coefs, 31)) == ((-ntaps * 32767 << 15) + (1 << 30)) >> 31
