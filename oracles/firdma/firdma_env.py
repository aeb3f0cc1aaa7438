"""The firdma oracle's test bench: clock, reset, the AXI4-Lite master, the AXI4 memory with
backpressure and response injection, the monitor, and `check` (every failure names the
requirement of oracles/firdma/requirements.toml it judges).

The memory is cocotbext-axi's AxiRam with a pause generator on each of its five channels
(`PROFILES`). Response injection: a byte range answering an error (SLVERR or DECERR, `Job`) on
reads or writes, and jobs whose successful responses are EXOKAY instead of OKAY; the data of an
error beat is garbage, never zeros, so a design that uses it writes a wrong result.
"""

from __future__ import annotations

import itertools
import logging
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, SimTimeoutError, with_timeout
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from firdma_check import OracleFailure, check, known  # noqa: F401  (re-exported to the oracle's tests)
from firdma_coverage import Coverage
from firdma_jobs import MEM_SIZE
from firdma_lite import LiteMaster
from firdma_monitor import AxiMonitor

REG_ID, REG_CTRL, REG_STATUS, REG_SRC, REG_DST, REG_LEN = 0x000, 0x004, 0x008, 0x00C, 0x010, 0x014
REG_SHIFT, REG_BURST, REG_CYCLES, REG_NTAPS, REG_COEF = 0x018, 0x01C, 0x020, 0x024, 0x100
REG_NAMES = {REG_ID: "ID", REG_CTRL: "CTRL", REG_STATUS: "STATUS", REG_SRC: "SRC_ADDR", REG_DST: "DST_ADDR",
             REG_LEN: "LEN", REG_SHIFT: "SHIFT", REG_BURST: "BURST", REG_CYCLES: "CYCLES", REG_NTAPS: "NTAPS"}
ID_VALUE = 0xF1DA0100
ST_BUSY, ST_DONE, ST_ERROR, ST_ABORTED = 1, 2, 4, 8
ST_FLAGS = ST_DONE | ST_ERROR | ST_ABORTED
CTRL_START, CTRL_ABORT, CTRL_IRQ_EN = 1, 2, 4
LITE_TIMEOUT_CYCLES = 5000  # an AXI4-Lite access must complete within this
CLOCK_NS = 10
STALL_LIMIT_CYCLES = 40000   # no AXI4 handshake this long while BUSY: the job is stuck
PROGRESS_STEP_CYCLES = 5000
DEEP_QUEUE = 256  # memory-side queue depth in test_spec: outstanding bursts limited only by the engine
OKAY, EXOKAY, SLVERR, DECERR = 0, 1, 2, 3


def _pause_pattern(profile: str, rng: random.Random, channel: str):
    """The pause generator of one memory channel (aw, w, b, ar, r) under a backpressure profile.

    `drain`: write responses pause for long stretches and W beats often, while reads run free, so
    the input buffer, the write queue and the outstanding responses fill. `rstall`: read data
    pauses for long stretches (the outstanding reads fill). `bstall`: write responses pause for 3000
    cycles at a time (every write burst of a short job awaits its response at once)."""
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
    if profile == "drain" and channel == "w":
        return itertools.cycle([rng.random() < 0.6 for _ in range(103)])
    if (profile, channel) == ("bstall", "b"):
        return itertools.cycle([True] * 3000 + [False] * 50)
    if (profile, channel) in (("drain", "b"), ("rstall", "r")):
        return itertools.cycle([True] * rng.randint(250, 400) + [False] * rng.randint(2, 6))
    if profile in ("drain", "rstall", "bstall"):
        return None
    raise ValueError(f"unknown backpressure profile {profile!r}")


class FirdmaEnv:
    """One test's bench. `lite` selects the AXI4-Lite master: "cocotbext" (AxiLiteMaster: READY
    always high, one access at a time) or "stalling" (firdma_lite.LiteMaster). `deep_memory`: the
    memory accepts any number of outstanding bursts (else cocotbext's AxiRam takes about four)."""

    def __init__(self, dut, lite: str = "cocotbext", lite_profile: str = "none", seed: int = 0,
                 deep_memory: bool = False):
        self.dut = dut
        self.data_w = len(dut.m_axi_wdata)
        self.data_bytes = self.data_w // 8
        self.ntaps = int(os.environ.get("FIRDMA_NTAPS", "0"))
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        self.coverage = Coverage()
        if lite == "stalling":
            self.lite = LiteMaster(dut, lite_profile, seed)
            cocotb.start_soon(self.lite.run())
        else:
            self.lite = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst_n,
                                      reset_active_level=False)
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst_n,
                          reset_active_level=False, size=MEM_SIZE)
        if deep_memory:  # accept as many bursts as the engine issues (AxiRam queues 2 per channel)
            for ch in (self.ram.read_if.ar_channel, self.ram.read_if.r_channel, self.ram.write_if.aw_channel,
                       self.ram.write_if.w_channel, self.ram.write_if.b_channel):
                ch.queue_occupancy_limit = DEEP_QUEUE
        for name in ("s_axil", "m_axi"):
            logging.getLogger(f"cocotb.{dut._name}.{name}").setLevel(logging.ERROR)
        self.read_error: tuple[int, int] | None = None
        self.write_error: tuple[int, int] | None = None
        self.error_resp = SLVERR
        self.ok_resp = OKAY
        self._install_response_injection()
        self.monitor = AxiMonitor(dut, coverage=self.coverage)
        cocotb.start_soon(self.monitor.run())

    def _install_response_injection(self) -> None:
        read_if, write_if = self.ram.read_if, self.ram.write_if
        plain_read, plain_write = read_if._read, write_if._write
        send_r, send_b = read_if.r_channel.send, write_if.b_channel.send
        garbage = random.Random(0xE77).randbytes(64)

        async def faulty_read(address, length):
            if self.read_error and address < self.read_error[1] and address + length > self.read_error[0]:
                raise IOError(f"injected read error at {address:#x}")
            return await plain_read(address, length)

        async def faulty_write(address, data):
            if self.write_error and address < self.write_error[1] and address + len(data) > self.write_error[0]:
                raise IOError(f"injected write error at {address:#x}")
            await plain_write(address, data)

        async def send_r_coded(r):
            if int(r.rresp) == SLVERR:
                r.rresp = self.error_resp
                r.rdata = int.from_bytes(garbage[:self.data_bytes], "little")
            elif int(r.rresp) == OKAY:
                r.rresp = self.ok_resp
            await send_r(r)

        async def send_b_coded(b):
            b.bresp = self.error_resp if int(b.bresp) == SLVERR else self.ok_resp
            await send_b(b)

        read_if._read, write_if._write = faulty_read, faulty_write
        read_if.r_channel.send, write_if.b_channel.send = send_r_coded, send_b_coded

    def set_responses(self, read_error, write_error, error_resp: int = SLVERR, ok_resp: int = OKAY) -> None:
        self.read_error, self.write_error = read_error, write_error
        self.error_resp, self.ok_resp = error_resp, ok_resp

    async def reset(self, cycles: int = 5) -> None:
        self.dut.rst_n.value = 0
        await ClockCycles(self.dut.clk, cycles)
        self.dut.rst_n.value = 1
        await ClockCycles(self.dut.clk, 2)

    def set_backpressure(self, profile: str, seed: int) -> None:
        rng = random.Random(seed)
        channels = {"aw": self.ram.write_if.aw_channel, "w": self.ram.write_if.w_channel,
                    "b": self.ram.write_if.b_channel, "ar": self.ram.read_if.ar_channel,
                    "r": self.ram.read_if.r_channel}
        for name, ch in channels.items():
            gen = _pause_pattern(profile, rng, name)
            if gen is None:
                ch.clear_pause_generator()
                ch.pause = False
            else:
                ch.set_pause_generator(gen)

    async def rd(self, addr: int) -> tuple[int, int]:
        resp = await self._bounded(self.lite.read(addr, 4) if isinstance(self.lite, AxiLiteMaster)
                                   else self.lite.read(addr), f"read of register {addr:#05x}")
        if isinstance(self.lite, AxiLiteMaster):
            value, code = int.from_bytes(resp.data, "little"), int(resp.resp)
        else:
            value, code = resp.data, resp.resp
        self.coverage.register_access("read", addr, code, self.ntaps)
        return value, code

    async def wr(self, addr: int, value: int, order: str = "together") -> int:
        if isinstance(self.lite, AxiLiteMaster):
            resp = await self._bounded(self.lite.write(addr, (value & 0xFFFFFFFF).to_bytes(4, "little")),
                                       f"write of register {addr:#05x}")
            code = int(resp.resp)
        else:
            code = (await self._bounded(self.lite.write(addr, value, order), f"write of register {addr:#05x}")).resp
        self.coverage.register_access("write", addr, code, self.ntaps)
        return code

    async def _bounded(self, access, what: str):
        """A register access that never completes (e.g. an empty implementation) fails the test
        instead of hanging the simulation."""
        try:
            return await with_timeout(access, LITE_TIMEOUT_CYCLES * CLOCK_NS, "ns")
        except SimTimeoutError as exc:
            raise OracleFailure(f"[LITE-ONE-RESPONSE] {what}: no AXI4-Lite response within "
                                f"{LITE_TIMEOUT_CYCLES} cycles{self.monitor_tail()}") from exc

    def monitor_tail(self) -> str:
        """The monitor's own messages, appended to a failure that is not the monitor's."""
        errors = self.monitor.errors
        return f"; monitor: {'; '.join(errors[:6])}" if errors else ""

    async def reg(self, addr: int, req: str = "LITE-ONE-RESPONSE") -> int:
        value, resp = await self.rd(addr)
        check(resp == OKAY, req, f"read of register {addr:#05x} answered {resp}, expected OKAY")
        return value

    def check_progress(self, what: str) -> None:
        """A job whose bus has been silent for STALL_LIMIT_CYCLES will never end: fail now, not at
        the end of its budget."""
        silent = self.monitor.cycle - max(self.monitor.last_activity_cycle, self.monitor.job_begin_cycle)
        check(silent < STALL_LIMIT_CYCLES, "JOB-BUSY",
              f"{what}: no AXI4 handshake for {silent} cycles while the job runs{self.monitor_tail()}")

    async def wait_irq(self, budget_cycles: int, what: str) -> None:
        irq = self.dut.irq
        for _ in range(0, budget_cycles, PROGRESS_STEP_CYCLES):
            if known(irq, "IRQ", f"{what}: waiting for the completion interrupt") == 1:
                return
            try:
                await with_timeout(RisingEdge(irq), PROGRESS_STEP_CYCLES * CLOCK_NS, "ns")
                return
            except SimTimeoutError:
                self.check_progress(what)
        raise OracleFailure(f"[JOB-BUSY] {what}: the job did not end (no irq) within {budget_cycles} "
                            f"cycles{self.monitor_tail()}")
