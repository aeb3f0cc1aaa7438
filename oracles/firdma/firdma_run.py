"""Run one firdma job end to end and check everything the spec promises about it (the job half of
the oracle; the register and protocol half is firdma_spec). Every check names its requirement."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from cocotb.triggers import ClockCycles, RisingEdge

from firdma_env import (CTRL_ABORT, CTRL_IRQ_EN, CTRL_START, ID_VALUE, OKAY, REG_BURST, REG_COEF,
                        REG_CTRL, REG_CYCLES, REG_DST, REG_ID, REG_LEN, REG_NTAPS, REG_SHIFT, REG_SRC,
                        REG_STATUS, SLVERR, ST_ABORTED, ST_BUSY, ST_DONE, ST_ERROR, ST_FLAGS, FirdmaEnv,
                        OracleFailure, PROGRESS_STEP_CYCLES, check, known)
from firdma_jobs import Job
from firdma_model import fir, pack_samples
from firdma_monitor import JobWindow

CYCLES_TOLERANCE = 2


def budget_cycles(env: FirdmaEnv, job: Job) -> int:
    slow = {"heavy": 4, "bursty": 4, "drain": 12, "rstall": 12}.get(job.profile, 2)
    return (job.length * (env.ntaps + 8) + 1500) * slow + (3500 if job.profile == "bstall" else 0)


async def configure(env: FirdmaEnv, job: Job) -> None:
    for addr, value in ((REG_SRC, job.src), (REG_DST, job.dst), (REG_LEN, job.length),
                        (REG_SHIFT, job.shift), (REG_BURST, job.burst)):
        check(await env.wr(addr, value) == OKAY, "LITE-ONE-RESPONSE", f"write of {addr:#05x} not OKAY")
    for k, c in enumerate(job.coefs):
        await env.wr(REG_COEF + 4 * k, c & 0xFFFF)
    await env.wr(REG_STATUS, ST_FLAGS)


async def wait_done(env: FirdmaEnv, job: Job, budget: int) -> int:
    """Wait for the end of the job; returns STATUS. A job that never ends fails with the monitor's
    own messages attached (they usually say why)."""
    if job.irq_en:
        await env.wait_irq(budget, job.name)
        return await env.reg(REG_STATUS)
    for _ in range(budget // 32 + 1):
        status = await env.reg(REG_STATUS)
        if not status & ST_BUSY and status & ST_FLAGS:
            return status
        env.check_progress(job.name)
        await ClockCycles(env.dut.clk, 24)
    raise OracleFailure(f"[JOB-BUSY] {job.name}: job did not finish within {budget} cycles{env.monitor_tail()}")


async def _abort_when_writing(env: FirdmaEnv, job: Job, budget: int) -> None:
    """ABORT as soon as the first write burst starts (or `abort_pending_writes` bursts wait), then
    `abort_delay` cycles later."""
    count = env.monitor.count
    for waited in range(budget):
        if count.aw_bursts - count.b_resps >= max(1, job.abort_pending_writes):
            break
        if waited % PROGRESS_STEP_CYCLES == 0:  # a job that never writes fails now, not after its budget
            env.check_progress(job.name)
        await RisingEdge(env.dut.clk)
    if job.abort_delay:
        await ClockCycles(env.dut.clk, job.abort_delay)
    env.coverage.hit("abort with writes in flight")
    await env.wr(REG_CTRL, job.abort_ctrl | (CTRL_IRQ_EN if job.irq_en else 0))


async def _abort_after(env: FirdmaEnv, job: Job, cycles: int) -> None:
    await ClockCycles(env.dut.clk, cycles)
    count = env.monitor.count
    if count.ar_bursts and not count.aw_bursts:
        env.coverage.hit("abort during reads")
    elif count.aw_bursts > count.b_resps:
        env.coverage.hit("abort with writes in flight")
    await env.wr(REG_CTRL, job.abort_ctrl | (CTRL_IRQ_EN if job.irq_en else 0))


async def stage_job(env: FirdmaEnv, job: Job, seed: int) -> tuple[bytes, bytes, int, int]:
    """Samples and a random fill around the destination into memory, responses and backpressure
    set, registers programmed, the monitor told; returns (expected result bytes, the fill, its
    base address, the checked window's size)."""
    expected = pack_samples(fir(job.samples, job.coefs, job.shift))
    window_bytes = 2 * max(job.length, 1) + 0x200
    fill = random.Random(seed ^ 0x5A5A).randbytes(window_bytes + 0x400)
    env.ram.write(job.src, pack_samples(job.samples))
    dst_fill_base = job.dst - 0x200
    env.ram.write(dst_fill_base, fill)
    env.set_responses(job.read_error, job.write_error, job.error_resp, job.ok_resp)
    env.set_backpressure(job.profile, seed)
    await configure(env, job)
    burst = 1 if job.burst == 0 else min(job.burst, 16)  # the value BURST stores
    stops = (job.abort_after is not None or job.abort_in_write or job.abort_pending_writes or job.read_error
             or job.write_error)
    env.monitor.begin_job(JobWindow(job.src, job.dst, job.length, burst, expected, env.data_bytes,
                                    "ERR-DRAIN" if stops else "JOB-COMPLETE"))
    return expected, fill, dst_fill_base, window_bytes


async def run_job(env: FirdmaEnv, job: Job, seed: int) -> dict:
    """Run one job end to end and check everything the spec promises about it."""
    dut, mon = env.dut, env.monitor
    dut._log.info("job %s: LEN=%d src=%#x dst=%#x BURST=%d SHIFT=%d profile=%s abort=%s rderr=%s wrerr=%s resp=%d/%d",
                  job.name, job.length, job.src, job.dst, job.burst, job.shift, job.profile,
                  job.abort_after, job.read_error, job.write_error, job.error_resp, job.ok_resp)
    expected, fill, dst_fill_base, window_bytes = await stage_job(env, job, seed)

    budget = budget_cycles(env, job)
    await env.wr(REG_CTRL, job.start_ctrl | (CTRL_IRQ_EN if job.irq_en else 0))
    start_cycle = mon.cycle
    if job.busy_writes:
        await busy_writes(env, job)
    if job.abort_after is not None:
        await _abort_after(env, job, job.abort_after)
    elif job.abort_in_write or job.abort_pending_writes:
        await _abort_when_writing(env, job, budget)
    status = await wait_done(env, job, budget)
    done_seen_cycle = mon.cycle
    end_cycle = mon.irq_rise_cycle if job.irq_en else None
    job_start = mon.start_cycle if mon.start_cycle is not None else start_cycle
    observed_cycles = (end_cycle if end_cycle is not None else done_seen_cycle) - job_start
    await ClockCycles(dut.clk, 20)  # later traffic would be flagged by the monitor
    mon.end_job()
    if mon.errors:
        raise OracleFailure(f"{job.name}: " + "; ".join(mon.errors[:8]))
    _check_outcome(env, job, status)
    _check_memory(env, job, expected, status, fill, dst_fill_base, window_bytes)
    cycles = await _check_irq_and_cycles(env, job, status, end_cycle)
    return {"job": job.name, "status": status, "cycles": cycles, "start": start_cycle,
            "observed_cycles": observed_cycles}


def _check_outcome(env: FirdmaEnv, job: Job, status: int) -> None:
    mon = env.monitor
    beat_misaligned = (job.src | job.dst) % env.data_bytes != 0
    err_code = (status >> 8) & 0xF
    flags = status & ST_FLAGS
    no_traffic = mon.count.ar_bursts == 0 and mon.count.aw_bursts == 0
    check(not status & ST_BUSY, "JOB-BUSY", f"{job.name}: BUSY still set after completion (STATUS={status:#x})")
    check(bin(flags).count("1") == 1, "JOB-BUSY",
          f"{job.name}: expected exactly one of DONE/ERROR/ABORTED, STATUS={status:#x}")
    if beat_misaligned:
        check(flags == ST_ERROR and err_code == 1, "JOB-ALIGN",
              f"{job.name}: misaligned address must give ERROR code 1, STATUS={status:#x}")
        check(no_traffic, "JOB-ALIGN", f"{job.name}: bus traffic on a misaligned job")
    elif job.length == 0:
        check(flags == ST_DONE, "JOB-EMPTY", f"{job.name}: LEN=0 must complete with DONE, STATUS={status:#x}")
        check(no_traffic, "JOB-EMPTY", f"{job.name}: bus traffic with LEN=0")
    elif job.read_error is not None:
        env.coverage.hit("error on read")
        check(flags == ST_ERROR and err_code == 2, "ERR-RESPONSE",
              f"{job.name}: read response {job.error_resp} must give ERROR code 2, STATUS={status:#x}")
    elif job.write_error is not None:
        env.coverage.hit("error on write")
        check(flags == ST_ERROR and err_code == 3, "ERR-RESPONSE",
              f"{job.name}: write response {job.error_resp} must give ERROR code 3, STATUS={status:#x}")
    elif job.must_abort:
        check(flags == ST_ABORTED and err_code == 0, "CTRL-START-ABORT" if job.abort_ctrl & CTRL_START else "ABORT",
              f"{job.name}: CTRL={job.abort_ctrl:#x} while BUSY must abort the job, STATUS={status:#x}")
    elif job.abort_after is not None or job.abort_in_write or job.abort_pending_writes:
        check(flags in (ST_ABORTED, ST_DONE), "ABORT",
              f"{job.name}: abort must end ABORTED (or DONE if already finished), STATUS={status:#x}")
        check(err_code == 0, "ABORT", f"{job.name}: ERR_CODE set without ERROR")
    else:
        check(flags == ST_DONE and err_code == 0, "ERR-RESPONSE" if job.ok_resp else "JOB-RESULTS",
              f"{job.name}: expected DONE (responses {job.ok_resp}), STATUS={status:#x}")


def _check_memory(env: FirdmaEnv, job: Job, expected: bytes, status: int, fill: bytes, dst_fill_base: int,
                  window_bytes: int) -> None:
    written = env.monitor.count.bytes_written
    req = "JOB-RESULTS" if job.profile == "none" else "READ-BACKPRESSURE"
    if status & ST_FLAGS == ST_DONE:
        check(len(written) == 2 * job.length, req,
              f"{job.name}: DONE but {2 * job.length - len(written)} result bytes never written")
        got = env.ram.read(job.dst, 2 * job.length)
        if got != expected:
            bad = next(i for i in range(len(got)) if got[i] != expected[i])
            raise OracleFailure(f"[{req}] {job.name}: result {bad // 2} in memory differs from the model")
    # Bytes around the destination are untouched (bytes inside it checked per beat by the monitor).
    before = env.ram.read(dst_fill_base, 0x200)
    after = env.ram.read(job.dst + 2 * job.length, window_bytes + 0x200 - 2 * job.length)
    check(before == fill[:0x200], "WRITE-STROBES", f"{job.name}: memory below DST was modified")
    check(after == fill[0x200 + 2 * job.length:0x200 + 2 * job.length + len(after)], "WRITE-STROBES",
          f"{job.name}: memory past DST + 2*LEN was modified")


async def _check_irq_and_cycles(env: FirdmaEnv, job: Job, status: int, end_cycle: int | None) -> int:
    dut, mon = env.dut, env.monitor
    flags = status & ST_FLAGS
    irq = known(dut.irq, "IRQ", f"{job.name}: at the end of the job")
    check(irq == (1 if job.irq_en else 0), "IRQ",
          f"{job.name}: irq={irq} with IRQ_EN={int(job.irq_en)} and a status flag set")
    cycles = await env.reg(REG_CYCLES)
    immediate = (job.src | job.dst) % env.data_bytes != 0 or job.length == 0
    if immediate:
        check(cycles <= CYCLES_TOLERANCE, "CYCLES", f"{job.name}: CYCLES={cycles} for a job that ends at once")
    elif end_cycle is not None and mon.start_cycle is not None and flags:
        observed = end_cycle - mon.start_cycle
        check(abs(cycles - observed) <= CYCLES_TOLERANCE, "CYCLES",
              f"{job.name}: CYCLES={cycles} but the job took {observed} cycles from START to irq")
    # Clearing the flags drops irq; DONE/ERROR/ABORTED are write-1-to-clear.
    await env.wr(REG_STATUS, ST_FLAGS)
    status2 = await env.reg(REG_STATUS)
    check(status2 & 0xF0E == 0, "REG-STATUS-W1C", f"{job.name}: STATUS flags not cleared by write-1-to-clear: {status2:#x}")
    await ClockCycles(dut.clk, 2)
    check(known(dut.irq, "IRQ", f"{job.name}: after clearing the flags") == 0, "IRQ",
          f"{job.name}: irq still high after clearing the flags")
    return cycles


def write_report(test: str, results: list[dict], env: FirdmaEnv | None = None, workload: bool = True) -> None:
    """FIRDMA_REPORT_DIR/<test>.json: the test's jobs and their observed cycles (the workload's cycle
    count; 0 for a test that is not part of the workload) and the functional coverage."""
    coverage = env.coverage.summary() if env is not None else None
    if env is not None:
        env.dut._log.info("functional coverage %s: %d/%d bins (%.1f%%); missed: %s", test, coverage["hit"],
                          coverage["bins"], coverage["percent"], ", ".join(coverage["missed"]) or "none")
    folder = os.environ.get("FIRDMA_REPORT_DIR")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    cycles = sum(r["observed_cycles"] for r in results) if workload else 0
    (Path(folder) / f"{test}.json").write_text(json.dumps({
        "test": test, "jobs": len(results), "cycles": cycles,
        "per_job": {r["job"]: r["observed_cycles"] for r in results}, "coverage": coverage}))


async def busy_writes(env: FirdmaEnv, job: Job) -> None:
    """While BUSY: configuration writes and START are ignored; the job keeps its configuration."""
    await ClockCycles(env.dut.clk, 5)
    status = await env.reg(REG_STATUS)
    check(status & ST_BUSY, "JOB-BUSY", f"{job.name}: BUSY not set while the job runs")
    for addr, value in ((REG_SRC, job.src + 0x40), (REG_DST, job.dst + 0x40), (REG_LEN, job.length + 7),
                        (REG_SHIFT, (job.shift + 1) % 32), (REG_BURST, 1), (REG_COEF, job.coefs[0] ^ 0x1234)):
        check(await env.wr(addr, value) == OKAY, "REG-BUSY-LOCK", f"{job.name}: write of {addr:#05x} while BUSY not OKAY")
    cycles_before = await env.reg(REG_CYCLES)
    await env.wr(REG_CTRL, CTRL_START | (CTRL_IRQ_EN if job.irq_en else 0))   # START while busy: ignored
    cycles_after = await env.reg(REG_CYCLES)
    status = await env.reg(REG_STATUS)
    check(status & ST_BUSY and cycles_after > cycles_before, "CTRL-START-BUSY",
          f"{job.name}: START while BUSY restarted the job (CYCLES {cycles_before} -> {cycles_after}, STATUS={status:#x})")
    for addr, value in ((REG_SRC, job.src), (REG_DST, job.dst), (REG_LEN, job.length),
                        (REG_SHIFT, job.shift), (REG_BURST, job.burst), (REG_COEF, job.coefs[0] & 0xFFFF)):
        got = await env.reg(addr)
        if addr == REG_COEF:
            got &= 0xFFFF
        check(got == value, "REG-BUSY-LOCK", f"{job.name}: register {addr:#05x} changed while BUSY ({got:#x} != {value:#x})")


async def register_checks(env: FirdmaEnv) -> None:
    """The quick register checks every test starts with (firdma_spec has the full set)."""
    check(await env.reg(REG_ID) == ID_VALUE, "REG-ID", "ID register value")
    ntaps = await env.reg(REG_NTAPS)
    check(env.ntaps == 0 or ntaps == env.ntaps, "REG-NTAPS", f"NTAPS register {ntaps} != build parameter {env.ntaps}")
    env.ntaps = ntaps
    check(await env.reg(REG_STATUS) == 0, "REG-RESET", "STATUS after reset must be 0")
    for value, stored in ((0, 1), (40, 16), (7, 7)):
        await env.wr(REG_BURST, value)
        got = await env.reg(REG_BURST)
        check(got == stored, "REG-BURST-CLAMP", f"BURST write {value} reads back {got}, expected {stored}")
    await env.wr(REG_COEF, 0xFFFF8001)
    got = await env.reg(REG_COEF)
    check(got == 0xFFFF8001, "REG-COEF", f"COEF[0] reads back {got:#x}, expected sign-extended 0xffff8001")
    unmapped = [0x028, 0x0FC, 0x200, 0xFFC] + ([REG_COEF + 4 * ntaps] if ntaps < 32 else [])
    for addr in unmapped:
        _, rresp = await env.rd(addr)
        check(rresp == SLVERR, "REG-UNMAPPED", f"read of unmapped {addr:#05x} answered {rresp}, expected SLVERR")
        wresp = await env.wr(addr, 0)
        check(wresp == SLVERR, "REG-UNMAPPED", f"write of unmapped {addr:#05x} answered {wresp}, expected SLVERR")
    check(await env.wr(REG_CTRL, CTRL_ABORT) == OKAY, "CTRL-ABORT-IDLE", "ABORT while idle must be accepted (and ignored)")
    check(await env.reg(REG_STATUS) == 0, "CTRL-ABORT-IDLE", "ABORT while idle changed STATUS")
    check(await env.reg(REG_CTRL) & 3 == 0, "REG-CTRL", "START/ABORT must read 0")
