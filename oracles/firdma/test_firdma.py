"""cocotb oracle for firdma (designs/firdma/spec.md).

Tests (select one with the runner's testcase):
  test_directed  the fixed edge cases of firdma_jobs.directed_jobs plus register checks (CI smoke)
  test_random    seeded random jobs: FIRDMA_SEEDS="1,2,3", FIRDMA_CONDITIONS=<json of Conditions>
  test_cycles    the fixed workload that measures the `cycles` metric (FIRDMA_METRICS=<json out>)
Build parameters reach the test through FIRDMA_NTAPS and FIRDMA_DATA_W (checked against the DUT).
FIRDMA_REPORT_DIR: if set, each test that completes writes <test>.json there with `cycles`, the sum
over its jobs of the cycles the testbench observed from the START write to the end of the job (the
irq rise, or for a polled job the status read that showed the end): the task harness's workload
cycle count (closer.tasks.checks).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import random
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, SimTimeoutError, with_timeout
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from firdma_jobs import MEM_SIZE, Conditions, Job, directed_jobs, random_jobs
from firdma_model import fir, pack_samples
from firdma_monitor import AxiMonitor, JobWindow

REG_ID, REG_CTRL, REG_STATUS, REG_SRC, REG_DST, REG_LEN = 0x000, 0x004, 0x008, 0x00C, 0x010, 0x014
REG_SHIFT, REG_BURST, REG_CYCLES, REG_NTAPS, REG_COEF = 0x018, 0x01C, 0x020, 0x024, 0x100
ID_VALUE = 0xF1DA0100
ST_BUSY, ST_DONE, ST_ERROR, ST_ABORTED = 1, 2, 4, 8
CYCLES_TOLERANCE = 2
LITE_TIMEOUT_CYCLES = 5000  # an AXI4-Lite access must complete within this
OKAY, SLVERR = 0, 2


class OracleFailure(AssertionError):
    pass


def _pause_pattern(profile: str, rng: random.Random):
    if profile == "none":
        return None
    if profile == "light":
        return itertools.cycle([rng.random() < 0.2 for _ in range(97)])
    if profile == "heavy":
        return itertools.cycle([rng.random() < 0.7 for _ in range(101)])
    if profile == "bursty":
        pattern = []
        for _ in range(8):
            pattern += [True] * rng.randint(1, 20) + [False] * rng.randint(1, 20)
        return itertools.cycle(pattern)
    raise ValueError(f"unknown backpressure profile {profile!r}")


class FirdmaEnv:
    def __init__(self, dut):
        self.dut = dut
        self.data_w = len(dut.m_axi_wdata)
        self.data_bytes = self.data_w // 8
        self.ntaps = int(os.environ.get("FIRDMA_NTAPS", "0"))
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
        self.lite = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst_n,
                                  reset_active_level=False)
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst_n,
                          reset_active_level=False, size=MEM_SIZE)
        for name in ("s_axil", "m_axi"):
            logging.getLogger(f"cocotb.{dut._name}.{name}").setLevel(logging.WARNING)
        self.read_error: tuple[int, int] | None = None
        self.write_error: tuple[int, int] | None = None
        self._install_error_injection()
        self.monitor = AxiMonitor(dut)
        cocotb.start_soon(self.monitor.run())

    def _install_error_injection(self) -> None:
        read_if, write_if = self.ram.read_if, self.ram.write_if
        plain_read, plain_write = read_if._read, write_if._write

        async def faulty_read(address, length):
            if self.read_error and address < self.read_error[1] and address + length > self.read_error[0]:
                raise IOError(f"injected read error at {address:#x}")
            return await plain_read(address, length)

        async def faulty_write(address, data):
            if self.write_error and address < self.write_error[1] and address + len(data) > self.write_error[0]:
                raise IOError(f"injected write error at {address:#x}")
            await plain_write(address, data)

        read_if._read = faulty_read
        write_if._write = faulty_write

    async def reset(self) -> None:
        self.dut.rst_n.value = 0
        await ClockCycles(self.dut.clk, 5)
        self.dut.rst_n.value = 1
        await ClockCycles(self.dut.clk, 2)

    def set_backpressure(self, profile: str, seed: int) -> None:
        rng = random.Random(seed)
        channels = [self.ram.write_if.aw_channel, self.ram.write_if.w_channel, self.ram.write_if.b_channel,
                    self.ram.read_if.ar_channel, self.ram.read_if.r_channel]
        for ch in channels:
            gen = _pause_pattern(profile, rng)
            if gen is None:
                ch.clear_pause_generator()
                ch.pause = False
            else:
                ch.set_pause_generator(gen)

    async def rd(self, addr: int) -> tuple[int, int]:
        resp = await self._bounded(self.lite.read(addr, 4), f"read of register {addr:#05x}")
        return int.from_bytes(resp.data, "little"), int(resp.resp)

    async def wr(self, addr: int, value: int) -> int:
        resp = await self._bounded(self.lite.write(addr, (value & 0xFFFFFFFF).to_bytes(4, "little")),
                                   f"write of register {addr:#05x}")
        return int(resp.resp)

    async def _bounded(self, access, what: str):
        """A register access that never completes (e.g. an empty implementation) fails the test
        instead of hanging the simulation."""
        try:
            return await with_timeout(access, LITE_TIMEOUT_CYCLES * 10, "ns")
        except SimTimeoutError as exc:
            raise OracleFailure(f"{what}: no AXI4-Lite response within {LITE_TIMEOUT_CYCLES} cycles") from exc

    async def reg(self, addr: int) -> int:
        value, resp = await self.rd(addr)
        check(resp == OKAY, f"read of register {addr:#05x} answered {resp}, expected OKAY")
        return value

    async def configure(self, job: Job) -> None:
        for addr, value in ((REG_SRC, job.src), (REG_DST, job.dst), (REG_LEN, job.length),
                            (REG_SHIFT, job.shift), (REG_BURST, job.burst)):
            check(await self.wr(addr, value) == OKAY, f"write of {addr:#05x} not OKAY")
        for k, c in enumerate(job.coefs):
            await self.wr(REG_COEF + 4 * k, c & 0xFFFF)
        await self.wr(REG_STATUS, ST_DONE | ST_ERROR | ST_ABORTED)

    async def wait_done(self, job: Job, budget_cycles: int) -> int:
        """Wait for the end of the job; returns STATUS."""
        if job.irq_en:
            if not self.dut.irq.value:
                await with_timeout(RisingEdge(self.dut.irq), budget_cycles * 10, "ns")
            return await self.reg(REG_STATUS)
        for _ in range(budget_cycles // 32 + 1):
            status = await self.reg(REG_STATUS)
            if not status & ST_BUSY and status & (ST_DONE | ST_ERROR | ST_ABORTED):
                return status
            await ClockCycles(self.dut.clk, 24)
        raise OracleFailure(f"job did not finish within {budget_cycles} cycles")


def check(condition: bool, message: str) -> None:
    if not condition:
        raise OracleFailure(message)


def _budget(env: FirdmaEnv, job: Job) -> int:
    slow = 4 if job.profile in ("heavy", "bursty") else 2
    return (job.length * (env.ntaps + 8) + 1500) * slow


async def run_job(env: FirdmaEnv, job: Job, seed: int) -> dict:
    """Run one job end to end and check everything the spec promises about it."""
    dut, mon = env.dut, env.monitor
    env.dut._log.info("job %s: LEN=%d src=%#x dst=%#x BURST=%d SHIFT=%d profile=%s abort=%s rderr=%s wrerr=%s",
                      job.name, job.length, job.src, job.dst, job.burst, job.shift, job.profile,
                      job.abort_after, job.read_error, job.write_error)
    expected = pack_samples(fir(job.samples, job.coefs, job.shift))
    window_bytes = 2 * max(job.length, 1) + 0x200
    fill = random.Random(seed ^ 0x5A5A).randbytes(window_bytes + 0x400)
    env.ram.write(job.src, pack_samples(job.samples))
    dst_fill_base = job.dst - 0x200
    env.ram.write(dst_fill_base, fill)
    env.read_error, env.write_error = job.read_error, job.write_error
    env.set_backpressure(job.profile, seed)
    await env.configure(job)
    mon.begin_job(JobWindow(job.src, job.dst, job.length, job.burst, expected, env.data_bytes))

    ctrl = 1 | (4 if job.irq_en else 0)
    await env.wr(REG_CTRL, ctrl)
    start_cycle = mon.cycle
    if job.busy_writes:
        await _busy_writes(env, job)
    if job.abort_after is not None:
        await ClockCycles(dut.clk, job.abort_after)
        await env.wr(REG_CTRL, 2 | (4 if job.irq_en else 0))
    elif job.abort_in_write:
        for _ in range(_budget(env, job)):
            if mon.count.aw_bursts:
                break
            await RisingEdge(dut.clk)
        await env.wr(REG_CTRL, 2 | (4 if job.irq_en else 0))
    status = await env.wait_done(job, _budget(env, job))
    done_seen_cycle = mon.cycle
    end_cycle = mon.irq_rise_cycle if job.irq_en else None
    job_start = mon.start_cycle if mon.start_cycle is not None else start_cycle
    observed_cycles = (end_cycle if end_cycle is not None else done_seen_cycle) - job_start
    await ClockCycles(dut.clk, 20)  # later traffic would be flagged by the monitor
    mon.end_job()
    if mon.errors:
        raise OracleFailure(f"{job.name}: " + "; ".join(mon.errors[:8]))

    beat_misaligned = (job.src | job.dst) % env.data_bytes != 0
    hit_read = job.read_error is not None
    hit_write = job.write_error is not None
    err_code = (status >> 8) & 0xF
    flags = status & (ST_DONE | ST_ERROR | ST_ABORTED)
    written = mon.count.bytes_written
    check(not status & ST_BUSY, f"{job.name}: BUSY still set after completion (STATUS={status:#x})")
    check(bin(flags).count("1") == 1, f"{job.name}: expected exactly one of DONE/ERROR/ABORTED, STATUS={status:#x}")
    if beat_misaligned:
        check(flags == ST_ERROR and err_code == 1, f"{job.name}: misaligned address must give ERROR code 1, STATUS={status:#x}")
        check(mon.count.ar_bursts == 0 and mon.count.aw_bursts == 0, f"{job.name}: bus traffic on a misaligned job")
    elif job.length == 0:
        check(flags == ST_DONE, f"{job.name}: LEN=0 must complete with DONE, STATUS={status:#x}")
        check(mon.count.ar_bursts == 0 and mon.count.aw_bursts == 0, f"{job.name}: bus traffic with LEN=0")
    elif hit_read:
        check(flags == ST_ERROR and err_code == 2, f"{job.name}: read error must give ERROR code 2, STATUS={status:#x}")
    elif hit_write:
        check(flags == ST_ERROR and err_code == 3, f"{job.name}: write error must give ERROR code 3, STATUS={status:#x}")
    elif job.abort_after is not None or job.abort_in_write:
        check(flags in (ST_ABORTED, ST_DONE), f"{job.name}: abort must end ABORTED (or DONE if already finished), STATUS={status:#x}")
        check(err_code == 0, f"{job.name}: ERR_CODE set without ERROR")
    else:
        check(flags == ST_DONE and err_code == 0, f"{job.name}: expected DONE, STATUS={status:#x}")
    if flags == ST_DONE:
        check(len(written) == 2 * job.length, f"{job.name}: DONE but {2 * job.length - len(written)} result bytes never written")
        got = env.ram.read(job.dst, 2 * job.length)
        if got != expected:
            bad = next(i for i in range(len(got)) if got[i] != expected[i])
            raise OracleFailure(f"{job.name}: result {bad // 2} in memory differs from the model")
    # Bytes around the destination are untouched (bytes inside it checked per beat by the monitor).
    before = env.ram.read(dst_fill_base, 0x200)
    after = env.ram.read(job.dst + 2 * job.length, window_bytes + 0x200 - 2 * job.length)
    check(before == fill[:0x200], f"{job.name}: memory below DST was modified")
    check(after == fill[0x200 + 2 * job.length:0x200 + 2 * job.length + len(after)],
          f"{job.name}: memory past DST + 2*LEN was modified")
    # Interrupt and CYCLES.
    irq = int(dut.irq.value)
    check(irq == (1 if job.irq_en else 0), f"{job.name}: irq={irq} with IRQ_EN={int(job.irq_en)} and a status flag set")
    cycles = await env.reg(REG_CYCLES)
    if end_cycle is not None and mon.start_cycle is not None and flags and not beat_misaligned and job.length:
        observed = end_cycle - mon.start_cycle
        check(abs(cycles - observed) <= CYCLES_TOLERANCE,
              f"{job.name}: CYCLES={cycles} but the job took {observed} cycles from START to irq")
    # Clearing the flags drops irq; DONE/ERROR/ABORTED are write-1-to-clear.
    await env.wr(REG_STATUS, ST_DONE | ST_ERROR | ST_ABORTED)
    status2 = await env.reg(REG_STATUS)
    check(status2 & 0xF0E == 0, f"{job.name}: STATUS flags not cleared by write-1-to-clear: {status2:#x}")
    await ClockCycles(dut.clk, 2)
    check(int(dut.irq.value) == 0, f"{job.name}: irq still high after clearing the flags")
    return {"job": job.name, "status": status, "cycles": cycles, "start": start_cycle,
            "observed_cycles": observed_cycles}


def write_report(test: str, results: list[dict]) -> None:
    """FIRDMA_REPORT_DIR/<test>.json: the test's jobs and their observed cycles (see the docstring)."""
    folder = os.environ.get("FIRDMA_REPORT_DIR")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    (Path(folder) / f"{test}.json").write_text(json.dumps({
        "test": test, "jobs": len(results), "cycles": sum(r["observed_cycles"] for r in results),
        "per_job": {r["job"]: r["observed_cycles"] for r in results}}))


async def _busy_writes(env: FirdmaEnv, job: Job) -> None:
    """While BUSY: configuration writes and START are ignored; the job keeps its configuration."""
    await ClockCycles(env.dut.clk, 5)
    status = await env.reg(REG_STATUS)
    check(status & ST_BUSY, f"{job.name}: BUSY not set while the job runs")
    for addr, value in ((REG_SRC, job.src + 0x40), (REG_DST, job.dst + 0x40), (REG_LEN, job.length + 7),
                        (REG_SHIFT, (job.shift + 1) % 32), (REG_BURST, 1), (REG_COEF, job.coefs[0] ^ 0x1234)):
        await env.wr(addr, value)
    await env.wr(REG_CTRL, 1 | (4 if job.irq_en else 0))   # START while busy: ignored
    for addr, value in ((REG_SRC, job.src), (REG_DST, job.dst), (REG_LEN, job.length),
                        (REG_SHIFT, job.shift), (REG_BURST, job.burst), (REG_COEF, job.coefs[0] & 0xFFFF)):
        got = await env.reg(addr)
        if addr == REG_COEF:
            got &= 0xFFFF
        check(got == value, f"{job.name}: register {addr:#05x} changed while BUSY ({got:#x} != {value:#x})")


async def register_checks(env: FirdmaEnv) -> None:
    check(await env.reg(REG_ID) == ID_VALUE, "ID register value")
    ntaps = await env.reg(REG_NTAPS)
    check(env.ntaps == 0 or ntaps == env.ntaps, f"NTAPS register {ntaps} != build parameter {env.ntaps}")
    env.ntaps = ntaps
    check(await env.reg(REG_STATUS) == 0, "STATUS after reset must be 0")
    for value, stored in ((0, 1), (40, 16), (7, 7)):
        await env.wr(REG_BURST, value)
        got = await env.reg(REG_BURST)
        check(got == stored, f"BURST write {value} reads back {got}, expected {stored}")
    await env.wr(REG_COEF, 0xFFFF8001)
    got = await env.reg(REG_COEF)
    check(got == 0xFFFF8001, f"COEF[0] reads back {got:#x}, expected sign-extended 0xffff8001")
    unmapped = [0x028, 0x0FC, 0x200, 0xFFC] + ([REG_COEF + 4 * ntaps] if ntaps < 32 else [])
    for addr in unmapped:
        _, rresp = await env.rd(addr)
        check(rresp == SLVERR, f"read of unmapped {addr:#05x} answered {rresp}, expected SLVERR")
        wresp = await env.wr(addr, 0)
        check(wresp == SLVERR, f"write of unmapped {addr:#05x} answered {wresp}, expected SLVERR")
    check(await env.wr(REG_CTRL, 2) == OKAY, "ABORT while idle must be accepted (and ignored)")
    check(await env.reg(REG_STATUS) == 0, "ABORT while idle changed STATUS")
    check(await env.reg(REG_CTRL) & 3 == 0, "START/ABORT must read 0")


@cocotb.test()
async def test_directed(dut):
    env = FirdmaEnv(dut)
    await env.reset()
    await register_checks(env)
    results = [await run_job(env, job, seed=1000 + i) for i, job in enumerate(directed_jobs(env.ntaps, env.data_w))]
    write_report("test_directed", results)


@cocotb.test()
async def test_random(dut):
    env = FirdmaEnv(dut)
    await env.reset()
    await register_checks(env)
    seeds = [int(s) for s in os.environ.get("FIRDMA_SEEDS", "1").split(",") if s.strip()]
    cond = Conditions.from_dict(json.loads(os.environ.get("FIRDMA_CONDITIONS", "{}")))
    results = []
    for seed in seeds:
        for job in random_jobs(seed, cond, env.ntaps, env.data_w):
            results.append(await run_job(env, job, seed))
    write_report("test_random", results)


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
    write_report("test_cycles", [result])
    out = os.environ.get("FIRDMA_METRICS")
    if out:
        with open(out, "w") as f:
            json.dump({"cycles": result["cycles"], "len": 1024, "burst": 16, "ntaps": env.ntaps,
                       "data_w": env.data_w, "backpressure": "none"}, f)
