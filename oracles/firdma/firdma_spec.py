"""The register, control and protocol half of the firdma oracle (test_spec), and the directed jobs
at the limits: what the random jobs cannot reach or reach only by chance.

Runs with the stalling AXI4-Lite master (firdma_lite) so B/R stability and overlapped accesses are
judged. `seed` and `Conditions` make the public and the hidden runs differ (stall patterns, values,
the long job's LEN) while both run every check.
"""

from __future__ import annotations

import random

from cocotb.triggers import ClockCycles

from firdma_env import (CTRL_ABORT, CTRL_IRQ_EN, CTRL_START, DECERR, EXOKAY, ID_VALUE, OKAY, REG_BURST,
                        REG_COEF, REG_CTRL, REG_CYCLES, REG_DST, REG_ID, REG_LEN, REG_NAMES, REG_NTAPS,
                        REG_SHIFT, REG_SRC, REG_STATUS, SLVERR, ST_ABORTED, ST_BUSY, ST_DONE, ST_ERROR,
                        ST_FLAGS, FirdmaEnv, check, known)
from firdma_jobs import DST_BASE, SRC_BASE, Conditions, Job, _rand_coefs, _rand_samples, random_jobs
from firdma_run import budget_cycles, run_job, stage_job

RESET_VALUES = {REG_CTRL: 0, REG_STATUS: 0, REG_SRC: 0, REG_DST: 0, REG_LEN: 0, REG_SHIFT: 0, REG_BURST: 16,
                REG_CYCLES: 0}
PUBLIC_STYLE_JOBS = 6
VALID_OUTPUTS = ("m_axi_awvalid", "m_axi_wvalid", "m_axi_arvalid", "s_axil_bvalid", "s_axil_rvalid")


async def _snapshot(env: FirdmaEnv) -> dict[int, int]:
    """Every mapped register (STATUS without BUSY)."""
    addrs = [*REG_NAMES, *(REG_COEF + 4 * k for k in range(env.ntaps))]
    return {a: await env.reg(a) for a in addrs}


def _unmapped(ntaps: int) -> list[int]:
    return ([*range(0x028, 0x100, 4)] + [*range(REG_COEF + 4 * ntaps, 0x180, 4)]
            + [*range(0x180, 0x1000, 0x40)] + [0x1FC, 0xFFC, 0x02B, 0x181])


async def reset_values(env: FirdmaEnv) -> None:
    check(await env.reg(REG_ID) == ID_VALUE, "REG-ID", "ID register value")
    ntaps = await env.reg(REG_NTAPS)
    check(env.ntaps == 0 or ntaps == env.ntaps, "REG-NTAPS", f"NTAPS register {ntaps} != build parameter {env.ntaps}")
    env.ntaps = ntaps
    for addr, value in RESET_VALUES.items():
        got = await env.reg(addr)
        check(got == value, "REG-RESET", f"{REG_NAMES[addr]} reads {got:#x} after reset, expected {value:#x}")
    for k in range(ntaps):
        got = await env.reg(REG_COEF + 4 * k)
        check(got == 0, "REG-RESET", f"COEF[{k}] reads {got:#x} after reset, expected 0")


async def register_fields(env: FirdmaEnv, rng: random.Random) -> None:
    for addr, value, stored in ((REG_SRC, 0xFFFFFFFF, 0xFFFFFFFF), (REG_DST, 0xA5A55A5A, 0xA5A55A5A),
                                (REG_SRC, 0x80000001, 0x80000001), (REG_DST, 0, 0),
                                (REG_LEN, 0xFFFFFFFF, 0xFFFF), (REG_LEN, 0x00012345, 0x2345),
                                (REG_SHIFT, 0xFFFFFFFF, 31), (REG_SHIFT, 0x25, 5), (REG_SHIFT, 16, 16)):
        await env.wr(addr, value)
        got = await env.reg(addr)
        check(got == stored, "REG-RW", f"{REG_NAMES[addr]} write {value:#x} reads {got:#x}, expected {stored:#x}")
    for value in [*range(0, 34), 40, 0x80000001, 0xFFFFFFFF]:
        await env.wr(REG_BURST, value)
        got = await env.reg(REG_BURST)
        stored = 1 if value == 0 else min(value, 16)
        check(got == stored, "REG-BURST-CLAMP", f"BURST write {value:#x} reads back {got}, expected {stored}")
    coefs = [rng.randint(-32768, 32767) for _ in range(env.ntaps)]
    coefs[0], coefs[-1] = -32768, 32767
    for k, c in enumerate(coefs):
        await env.wr(REG_COEF + 4 * k, (c & 0xFFFF) | (rng.getrandbits(16) << 16))
    for k, c in enumerate(coefs):
        got = await env.reg(REG_COEF + 4 * k)
        check(got == c & 0xFFFFFFFF, "REG-COEF", f"COEF[{k}] reads {got:#x}, expected {c & 0xFFFFFFFF:#x}")
    for ctrl, stored in ((0xFFFFFFFC, CTRL_IRQ_EN), (CTRL_IRQ_EN, CTRL_IRQ_EN), (0, 0)):
        await env.wr(REG_CTRL, ctrl)
        got = await env.reg(REG_CTRL)
        check(got == stored, "REG-CTRL", f"CTRL write {ctrl:#x} reads {got:#x}, expected {stored:#x}")
    check(await env.reg(REG_STATUS) == 0, "REG-CTRL", "writing IRQ_EN changed STATUS")
    for offset in (1, 2, 3):
        await env.wr(REG_SHIFT + offset, 7 + offset)
        got = await env.reg(REG_SHIFT + (offset ^ 3))
        check(got == 7 + offset, "REG-ADDR-LSB", f"SHIFT written at {REG_SHIFT + offset:#x} reads {got} at "
                                                  f"{REG_SHIFT + (offset ^ 3):#x}, expected {7 + offset}")
    got, resp = await env.rd(REG_ID + 2)
    check(resp == OKAY and got == ID_VALUE, "REG-ADDR-LSB", f"ID read at 0x002 gave {got:#x} (resp {resp})")


async def unmapped_and_readonly(env: FirdmaEnv) -> None:
    before = await _snapshot(env)
    for addr in _unmapped(env.ntaps):
        resp = await env.wr(addr, 0xFFFFFFFF)
        check(resp == SLVERR, "REG-UNMAPPED", f"write of unmapped {addr:#05x} answered {resp}, expected SLVERR")
        _, resp = await env.rd(addr)
        check(resp == SLVERR, "REG-UNMAPPED", f"read of unmapped {addr:#05x} answered {resp}, expected SLVERR")
    after = await _snapshot(env)
    changed = [f"{a:#05x}: {before[a]:#x} -> {after[a]:#x}" for a in before if before[a] != after[a]]
    check(not changed, "REG-UNMAPPED", f"writes to unmapped addresses changed registers: {', '.join(changed[:4])}")
    await readonly_writes(env)


async def readonly_writes(env: FirdmaEnv) -> None:
    before = await _snapshot(env)
    for addr in (REG_ID, REG_CYCLES, REG_NTAPS):
        for value in (0xFFFFFFFF, 0):
            resp = await env.wr(addr, value)
            check(resp == OKAY, "REG-RO-WRITE", f"write of read-only {REG_NAMES[addr]} answered {resp}, expected OKAY")
    after = await _snapshot(env)
    changed = [f"{a:#05x}: {before[a]:#x} -> {after[a]:#x}" for a in before if before[a] != after[a]]
    check(not changed, "REG-RO-WRITE", f"writes to ID/CYCLES/NTAPS changed registers: {', '.join(changed[:4])}")


async def lite_protocol(env: FirdmaEnv, rng: random.Random) -> None:
    """Overlapped writes (AW/W in every order, an unmapped one among them), then overlapped reads;
    every response in order with its own code and data."""
    lite = env.lite
    values = {REG_SRC: rng.getrandbits(32), REG_DST: rng.getrandbits(32), REG_LEN: rng.getrandbits(16),
              REG_SHIFT: rng.randint(0, 31), REG_COEF: rng.getrandbits(16) | 0x8000}
    writes = []
    for i, (addr, value) in enumerate(values.items()):
        writes.append((addr, lite.issue_write(addr, value, ("together", "aw_first", "w_first")[i % 3])))
        if i == 2:
            writes.append((0x0F0, lite.issue_write(0x0F0, 0xFFFFFFFF, "w_first")))
    for addr, pending in writes:
        await env._bounded(pending.event.wait(), f"overlapped write of {addr:#05x}")
        want = SLVERR if addr == 0x0F0 else OKAY
        check(pending.response.resp == want, "LITE-ONE-RESPONSE",
              f"overlapped write of {addr:#05x} answered {pending.response.resp}, expected {want}")
    expect = {a: (v & 0xFFFF) | 0xFFFF0000 if a == REG_COEF else v for a, v in values.items()}
    order = [*expect, 0x0F0, REG_ID, *reversed(expect)]
    reads = [(a, lite.issue_read(a)) for a in order]
    for addr, pending in reads:
        await env._bounded(pending.event.wait(), f"overlapped read of {addr:#05x}")
        resp = pending.response
        if addr == 0x0F0:
            check(resp.resp == SLVERR, "LITE-ONE-RESPONSE", f"overlapped read of unmapped 0x0f0 answered {resp.resp}")
            continue
        want = ID_VALUE if addr == REG_ID else expect[addr]
        check(resp.resp == OKAY and resp.data == want, "LITE-ONE-RESPONSE",
              f"overlapped read of {addr:#05x} returned {resp.data:#x} (resp {resp.resp}), expected {want:#x}")
    check(lite.b.unexpected == 0 and lite.r.unexpected == 0, "LITE-ONE-RESPONSE",
          f"{lite.b.unexpected} B and {lite.r.unexpected} R responses without an access")
    for order_name in ("aw_first", "w_first"):
        await env.wr(REG_SHIFT, 3, order_name)
        check(await env.reg(REG_SHIFT) == 3, "LITE-WRITE-ORDER", f"a write with {order_name} did not take effect")
        await env.wr(REG_SHIFT, 0, order_name)


def _job(env: FirdmaEnv, rng: random.Random, name: str, n: int, **kw) -> Job:
    fields = dict(src=SRC_BASE + 0x300, dst=DST_BASE + 0x300, samples=_rand_samples(rng, n, False),
                  coefs=_rand_coefs(rng, env.ntaps, False), shift=rng.randint(0, 15), burst=16, irq_en=False)
    fields.update(kw)
    return Job(name=name, **fields)


async def _instant_job(env: FirdmaEnv, ctrl: int, src: int = SRC_BASE, length: int = 0) -> int:
    """Program a job that ends at once (LEN 0, or a misaligned SRC) and start it; returns STATUS."""
    await env.wr(REG_SRC, src)
    await env.wr(REG_DST, DST_BASE)
    await env.wr(REG_LEN, length)
    await env.wr(REG_CTRL, ctrl)
    await ClockCycles(env.dut.clk, 3)
    return await env.reg(REG_STATUS)


async def _irq_is(env: FirdmaEnv, level: int, what: str) -> None:
    await ClockCycles(env.dut.clk, 3)
    irq = known(env.dut.irq, "IRQ", what)
    check(irq == level, "IRQ", f"irq={irq} {what}, expected {level}")


async def status_and_irq(env: FirdmaEnv) -> None:
    env.monitor.job = None  # no bus traffic is allowed in any of these
    status = await _instant_job(env, CTRL_START)
    check(status == ST_DONE, "JOB-EMPTY", f"LEN=0 job: STATUS={status:#x}, expected DONE")
    check(await env.reg(REG_CYCLES) == 0, "CYCLES", "CYCLES is not 0 after a job that ended at once")
    await _irq_is(env, 0, "with DONE and IRQ_EN=0")
    await env.wr(REG_CTRL, CTRL_IRQ_EN)
    await _irq_is(env, 1, "after setting IRQ_EN with DONE set")
    check(await env.reg(REG_STATUS) == ST_DONE, "REG-CTRL", "writing IRQ_EN alone changed STATUS")
    await env.wr(REG_CTRL, 0)
    await _irq_is(env, 0, "after clearing IRQ_EN with DONE set")
    check(await env.reg(REG_STATUS) == ST_DONE, "IRQ", "clearing IRQ_EN changed STATUS")
    await env.wr(REG_CTRL, CTRL_IRQ_EN)
    for value in (0, ST_ERROR | ST_ABORTED | ST_BUSY | 0xF00 | 0xFFFF0000):
        await env.wr(REG_STATUS, value)
        got = await env.reg(REG_STATUS)
        check(got == ST_DONE, "REG-STATUS-W1C", f"STATUS write {value:#x} with DONE set gives {got:#x}, expected DONE")
    await _irq_is(env, 1, "with DONE still set")
    await env.wr(REG_STATUS, ST_DONE)
    check(await env.reg(REG_STATUS) == 0, "REG-STATUS-W1C", "writing DONE did not clear it")
    await _irq_is(env, 0, "after DONE was cleared")
    await env.wr(REG_CTRL, 0)
    status = await _instant_job(env, CTRL_START, src=SRC_BASE + 1, length=5)
    check(status == ST_ERROR | 0x100, "JOB-ALIGN", f"misaligned job: STATUS={status:#x}, expected ERROR code 1")
    for value in (ST_DONE | ST_ABORTED, 0):
        await env.wr(REG_STATUS, value)
        got = await env.reg(REG_STATUS)
        check(got == ST_ERROR | 0x100, "REG-STATUS-W1C", f"STATUS write {value:#x} with ERROR set gives {got:#x}")
    status = await _instant_job(env, CTRL_START)
    check(status == ST_DONE, "CTRL-START-CLEARS", f"START after an ERROR job: STATUS={status:#x}, expected DONE only")
    status = await _instant_job(env, CTRL_START | CTRL_ABORT, src=SRC_BASE + 1, length=5)
    check(status & ST_ERROR, "CTRL-START-ABORT", f"START|ABORT while idle did not start a job: STATUS={status:#x}")
    check(status == ST_ERROR | 0x100, "CTRL-START-CLEARS",
          f"START|ABORT while idle after a DONE job: STATUS={status:#x}, expected ERROR code 1 only")
    await env.wr(REG_STATUS, ST_ERROR)
    check(await env.reg(REG_STATUS) == 0, "REG-STATUS-W1C", "writing ERROR did not clear ERROR and ERR_CODE")
    check(await env.wr(REG_CTRL, CTRL_ABORT) == OKAY, "CTRL-ABORT-IDLE", "ABORT while idle not OKAY")
    check(await env.reg(REG_STATUS) == 0, "CTRL-ABORT-IDLE", "ABORT while idle changed STATUS")


async def busy_time_writes(env: FirdmaEnv, rng: random.Random) -> dict:
    """While BUSY: IRQ_EN and STATUS are writable; every configuration register (all COEF) is
    locked; an ABORTED job's W1C bit clears alone."""
    job = _job(env, rng, "busy_time_writes", 600, profile="drain", burst=5)
    await stage_job(env, job, rng.getrandbits(16))
    before = await _snapshot(env)
    await env.wr(REG_CTRL, CTRL_START)
    await ClockCycles(env.dut.clk, 30)
    check(await env.reg(REG_STATUS) & ST_BUSY, "JOB-BUSY", "BUSY not set while a job runs")
    for addr in (REG_SRC, REG_DST, REG_LEN, REG_SHIFT, REG_BURST, *(REG_COEF + 4 * k for k in range(env.ntaps))):
        check(await env.wr(addr, before[addr] ^ 0x5A5) == OKAY, "REG-BUSY-LOCK", f"write of {addr:#05x} while BUSY not OKAY")
    await env.wr(REG_CTRL, CTRL_IRQ_EN)
    check(await env.reg(REG_CTRL) == CTRL_IRQ_EN, "REG-BUSY-WRITABLE", "IRQ_EN written while BUSY does not read back")
    await env.wr(REG_STATUS, ST_FLAGS)
    after = await _snapshot(env)
    changed = [f"{a:#05x}" for a in before if a not in (REG_CTRL, REG_STATUS, REG_CYCLES) and before[a] != after[a]]
    check(not changed, "REG-BUSY-LOCK", f"registers changed by writes while BUSY: {', '.join(changed[:6])}")
    check(after[REG_STATUS] & ST_BUSY, "JOB-BUSY", "the job ended early (IRQ_EN or STATUS write while BUSY)")
    await env.wr(REG_CTRL, CTRL_ABORT | CTRL_IRQ_EN)
    await env.wait_irq(budget_cycles(env, job), job.name)
    status = await env.reg(REG_STATUS)
    check(status == ST_ABORTED, "ABORT", f"abort under write backpressure: STATUS={status:#x}, expected ABORTED")
    await ClockCycles(env.dut.clk, 20)
    env.monitor.end_job()
    check(not env.monitor.errors, "JOB-COMPLETE", "monitor: " + "; ".join(env.monitor.errors[:6]))
    for value in (ST_DONE | ST_ERROR, 0):
        await env.wr(REG_STATUS, value)
        check(await env.reg(REG_STATUS) == ST_ABORTED, "REG-STATUS-W1C", f"STATUS write {value:#x} cleared ABORTED")
    check(known(env.dut.irq, "IRQ", "with ABORTED and IRQ_EN set") == 1, "IRQ", "irq low with ABORTED and IRQ_EN set")
    await env.wr(REG_STATUS, ST_ABORTED)
    check(await env.reg(REG_STATUS) == 0, "REG-STATUS-W1C", "writing ABORTED did not clear it")
    await _irq_is(env, 0, "after ABORTED was cleared")
    await readonly_writes(env)  # CYCLES is not 0 now
    await env.wr(REG_CTRL, 0)
    return {"job": job.name, "observed_cycles": 0}


def limit_jobs(env: FirdmaEnv, cond: Conditions, rng: random.Random) -> list[Job]:
    """Directed jobs at the limits, for the timing-sensitive requirements and the rare responses."""
    beat = env.data_bytes
    jobs = [_job(env, rng, f"misaligned_src_{o}", 6, src=SRC_BASE + 0x300 + o) for o in range(1, beat)]
    jobs += [_job(env, rng, f"misaligned_dst_{o}", 6, dst=DST_BASE + 0x300 + o) for o in range(1, beat)]
    page = SRC_BASE + 0x4000
    jobs += [
        _job(env, rng, "start_and_abort_idle", 33, start_ctrl=CTRL_START | CTRL_ABORT, irq_en=True),
        _job(env, rng, "start_and_abort_busy", 400, abort_ctrl=CTRL_START | CTRL_ABORT, abort_after=60,
             must_abort=True),
        _job(env, rng, "decerr_read_first_beat", 50, read_error=(SRC_BASE + 0x300, SRC_BASE + 0x300 + beat),
             error_resp=DECERR, irq_en=True),
        _job(env, rng, "decerr_write_last_beat", 50, error_resp=DECERR, burst=3,
             write_error=(DST_BASE + 0x300 + ((100 - 1) // beat) * beat, DST_BASE + 0x300 + 100)),
        _job(env, rng, "slverr_read_last_beat", 50, burst=7, profile="rstall",
             read_error=(SRC_BASE + 0x300 + ((100 - 1) // beat) * beat, SRC_BASE + 0x300 + 100)),
        _job(env, rng, "exokay_responses", 77, ok_resp=EXOKAY, burst=6, profile="light", irq_en=True),
        _job(env, rng, "drain_then_abort", 300, profile="drain", abort_pending_writes=1, abort_delay=150,
             must_abort=True, irq_en=True),
        _job(env, rng, "read_stalled", 90, profile="rstall", burst=2, irq_en=True),
        # R stalled from the start: every read burst is issued before the first beat returns, then
        # the abort must wait for all of them.
        _job(env, rng, "abort_reads_stalled", 90, profile="rstall", burst=2, abort_after=60, must_abort=True),
        # B stalled for 3000 cycles: all 8 write bursts of the job await their response at once.
        _job(env, rng, "responses_stalled", 32 * beat // 2, profile="bstall", burst=4, irq_en=True),
        _job(env, rng, "write_queue_full", 200, profile="drain", burst=4, irq_en=True),
        _job(env, rng, "slverr_write_first_beat", 30, write_error=(DST_BASE + 0x300, DST_BASE + 0x300 + beat)),
        *(_job(env, rng, f"burst_{b}", b * beat, burst=b, irq_en=True) for b in (9, 11, 12, 13, 14, 15)),
        _job(env, rng, "burst_clamped_0", 41, burst=0, irq_en=True),
        _job(env, rng, "burst_clamped_31", 97, burst=31, irq_en=True),
        _job(env, rng, "long_len", cond.long_len, src=page - 3 * beat, dst=DST_BASE + 0x1000 - 5 * beat,
             burst=16, irq_en=True, shift=rng.randint(8, 14)),
        # LEN at its maximum, aborted once the first write burst starts: nothing START derives from
        # LEN (beat and sample totals) may wrap. The whole 65535-sample job is test_max_len's.
        _job(env, rng, "max_len_aborted", 0xFFFF, src=page - 3 * beat, dst=DST_BASE + 0x1000 - 5 * beat,
             burst=16, irq_en=True, abort_in_write=True, must_abort=True),
    ]
    return jobs


async def reset_during_job(env: FirdmaEnv, rng: random.Random) -> None:
    job = _job(env, rng, "reset_during_job", 200, burst=8, profile="light")
    await stage_job(env, job, rng.getrandbits(16))
    await env.wr(REG_CTRL, CTRL_START | CTRL_IRQ_EN)
    await ClockCycles(env.dut.clk, 40 + rng.randint(0, 40))
    check(not env.monitor.errors, "JOB-COMPLETE", "monitor: " + "; ".join(env.monitor.errors[:6]))
    env.dut.rst_n.value = 0
    await ClockCycles(env.dut.clk, 2)
    for name in VALID_OUTPUTS:
        check(known(getattr(env.dut, name), "RESET", "while rst_n is 0") == 0, "RESET", f"{name} is 1 while rst_n is 0")
    check(known(env.dut.irq, "RESET", "while rst_n is 0") == 0, "RESET", "irq is 1 while rst_n is 0")
    await ClockCycles(env.dut.clk, 3)
    env.monitor.job = None  # from here on any bus traffic is an error
    env.dut.rst_n.value = 1
    await ClockCycles(env.dut.clk, 2)
    await reset_values(env)
    await ClockCycles(env.dut.clk, 20)
    check(not env.monitor.errors, "RESET", "monitor: " + "; ".join(env.monitor.errors[:6]))


async def spec_checks(env: FirdmaEnv, seed: int, cond: Conditions) -> list[dict]:
    rng = random.Random(seed)
    await reset_values(env)
    await register_fields(env, rng)
    await unmapped_and_readonly(env)
    await lite_protocol(env, rng)
    await status_and_irq(env)
    results = [await busy_time_writes(env, rng)]
    for i, job in enumerate(limit_jobs(env, cond, rng)):
        results.append(await run_job(env, job, seed * 100 + i))
    # Jobs drawn as the public seeds draw theirs (Conditions' defaults) from this run's seed: every
    # kind of public random job also runs here, under this run's AXI4-Lite stalls.
    for job in random_jobs(seed, Conditions(jobs_per_seed=PUBLIC_STYLE_JOBS), env.ntaps, env.data_w):
        results.append(await run_job(env, job, seed))
    await reset_during_job(env, rng)
    results.append(await run_job(env, _job(env, rng, "after_reset", 20, irq_en=True), seed + 1))
    return results
