"""cocotb oracle for firdma (designs/firdma/spec.md).

Tests (select one with the runner's testcase):
  test_directed  the fixed edge cases of firdma_jobs.directed_jobs plus register checks (CI smoke)
  test_random    seeded random jobs: FIRDMA_SEEDS="1,2,3", FIRDMA_CONDITIONS=<json of Conditions>
  test_spec      every register, control, AXI4-Lite protocol and limit check (firdma_spec), with the
                 stalling AXI4-Lite master; its seed is the first of FIRDMA_SEEDS and its stall
                 profiles, LEN limit and response codes come from FIRDMA_CONDITIONS
  test_cycles    the fixed workload that measures the `cycles` metric (FIRDMA_METRICS=<json out>)
  test_max_len   one job of LEN = FIRDMA_CONDITIONS' max_len (65535: the largest LEN) across 4 KB
                 boundaries; passes without a job when max_len is 0 (it is too long for most runs)
Build parameters reach the test through FIRDMA_NTAPS and FIRDMA_DATA_W (checked against the DUT).
FIRDMA_REPORT_DIR: if set, each test that completes writes <test>.json there with `cycles`, the sum
over its jobs of the cycles the testbench observed from the START write to the end of the job (the
irq rise, or for a polled job the status read that showed the end): the task harness's workload
cycle count (closer.tasks.checks; test_spec reports 0: it is not part of the workload), and the
test's functional coverage (firdma_coverage). Every failure names its requirement
(requirements.toml).
"""

from __future__ import annotations

import json
import os
import random

import cocotb

from firdma_env import FirdmaEnv
from firdma_jobs import Conditions, Job, directed_jobs, max_len_job, random_jobs
from firdma_run import register_checks, run_job, write_report
from firdma_spec import spec_checks


def _seeds() -> list[int]:
    return [int(s) for s in os.environ.get("FIRDMA_SEEDS", "1").split(",") if s.strip()]


def _conditions() -> Conditions:
    return Conditions.from_dict(json.loads(os.environ.get("FIRDMA_CONDITIONS", "{}")))


@cocotb.test()
async def test_directed(dut):
    env = FirdmaEnv(dut)
    await env.reset()
    await register_checks(env)
    results = [await run_job(env, job, seed=1000 + i) for i, job in enumerate(directed_jobs(env.ntaps, env.data_w))]
    write_report("test_directed", results, env)


@cocotb.test()
async def test_spec(dut):
    seed, cond = _seeds()[0], _conditions()
    profile = random.Random(seed).choice(cond.lite_profiles)
    env = FirdmaEnv(dut, lite="stalling", lite_profile=profile, seed=seed, deep_memory=True)
    dut._log.info("test_spec: seed %d, AXI-Lite profile %s, long LEN %d", seed, profile, cond.long_len)
    await env.reset()
    results = await spec_checks(env, seed, cond)
    write_report("test_spec", results, env, workload=False)


@cocotb.test()
async def test_random(dut):
    env = FirdmaEnv(dut)
    await env.reset()
    await register_checks(env)
    cond = _conditions()
    results = []
    for seed in _seeds():
        for job in random_jobs(seed, cond, env.ntaps, env.data_w):
            results.append(await run_job(env, job, seed))
    write_report("test_random", results, env)


@cocotb.test()
async def test_cycles(dut):
    """The fixed `cycles` workload: LEN=1024, BURST=16, no backpressure."""
    env = FirdmaEnv(dut)
    await env.reset()
    await register_checks(env)
    rng = random.Random(4242)
    job = Job(name="cycles_workload", src=0x0001_0000, dst=0x0008_0000,
              samples=[rng.randint(-32768, 32767) for _ in range(1024)],
              coefs=[rng.randint(-4096, 4095) for _ in range(env.ntaps)], shift=12, burst=16)
    result = await run_job(env, job, seed=4242)
    write_report("test_cycles", [result], env)
    out = os.environ.get("FIRDMA_METRICS")
    if out:
        with open(out, "w") as f:
            json.dump({"cycles": result["cycles"], "len": 1024, "burst": 16, "ntaps": env.ntaps,
                       "data_w": env.data_w, "backpressure": "none"}, f)



@cocotb.test()
async def test_max_len(dut):
    """JOB-RESULTS at the top of LEN's range: every result of a max_len job, its bursts and strobes."""
    cond = _conditions()
    if cond.max_len == 0:
        dut._log.info("test_max_len: max_len is 0 under these conditions, no job")
        write_report("test_max_len", [], None, workload=False)  # every passing test reports
        return
    env = FirdmaEnv(dut)
    await env.reset()
    seed = _seeds()[0]
    result = await run_job(env, max_len_job(seed, cond.max_len, env.ntaps, env.data_w), seed)
    write_report("test_max_len", [result], env, workload=False)
