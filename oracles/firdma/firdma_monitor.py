"""Cycle-by-cycle AXI monitors for the firdma oracle.

One coroutine samples every channel at each rising edge and checks, against the current job:
VALID/READY stability (payload held while VALID waits for READY), INCR bursts of full-width beats,
aligned addresses, bursts of at most BURST beats that never cross 4 KB, reads only inside the
source and writes only inside the destination, WLAST placement, every strobed byte equal to the
reference result, no traffic while no job runs, and (at the end of a job) every issued burst
completed. Violations are collected as messages, each led by the requirement id it breaks
(oracles/firdma/requirements.toml); the test fails on the first job that has any. It also feeds
the functional coverage (firdma_coverage) and finds the cycle START was written (both AXI4-Lite
handshakes of a CTRL write with bit 0, in whichever order they came).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cocotb.triggers import FallingEdge

from firdma_check import OracleFailure
from firdma_coverage import RESP_NAMES, Coverage

AW_FIELDS = ("awaddr", "awlen", "awsize", "awburst")
AR_FIELDS = ("araddr", "arlen", "arsize", "arburst")
W_FIELDS = ("wdata", "wstrb", "wlast")
# The requirement a design output judged while its VALID is high serves, for an X/Z failure.
FIELD_REQ = {"wdata": "WRITE-STROBES", "wstrb": "WRITE-STROBES", "wlast": "WRITE-WLAST",
             "bresp": "LITE-HANDSHAKE", "rdata": "LITE-HANDSHAKE", "rresp": "LITE-HANDSHAKE"}


def _int(signal) -> int | None:
    value = signal.value
    try:
        return int(value)
    except ValueError:
        return None  # X or Z


@dataclass
class JobWindow:
    """What the monitor needs to judge one job's traffic."""
    src: int
    dst: int
    length: int
    burst: int
    expected: bytes          # the 2*LEN result bytes
    data_bytes: int
    stop_req: str = "JOB-COMPLETE"   # the requirement an incomplete burst at the end breaks

    def read_end(self) -> int:
        beats = -(-2 * self.length // self.data_bytes)
        return self.src + beats * self.data_bytes


@dataclass
class Channel:
    valid: str
    ready: str
    fields: tuple[str, ...]
    design_sends: bool = True        # the design drives VALID and the payload (else READY)
    prev_waiting: bool = False
    prev_payload: tuple = ()


@dataclass
class Counters:
    ar_bursts: int = 0
    ar_beats: int = 0
    r_beats: int = 0
    aw_bursts: int = 0
    w_beats: int = 0
    w_bursts_done: int = 0
    b_resps: int = 0
    bytes_written: set[int] = field(default_factory=set)


class AxiMonitor:
    def __init__(self, dut, prefix: str = "m_axi", coverage: Coverage | None = None):
        self.dut = dut
        self.coverage = coverage or Coverage()
        self.lite_aw: list[int] = []     # AXI4-Lite write addresses and data not yet paired
        self.lite_w: list[int] = []
        self.p = prefix
        self.cycle = 0
        self.errors: list[str] = []
        self.job: JobWindow | None = None
        self.count = Counters()
        self.pending_aw: list[tuple[int, int]] = []   # (addr, beats) of bursts whose W is incomplete
        self.w_in_burst = 0
        self.start_cycle: int | None = None
        self.irq_rise_cycle: int | None = None
        self.last_activity_cycle = 0   # the last AXI4 handshake (a stuck job shows no progress)
        self.job_begin_cycle = 0
        self._irq_prev = 0
        self.channels = {
            "AW": Channel("awvalid", "awready", AW_FIELDS),
            "W": Channel("wvalid", "wready", W_FIELDS),
            "AR": Channel("arvalid", "arready", AR_FIELDS),
        }
        self.lite = {
            "lite B": Channel("bvalid", "bready", ("bresp",)),
            "lite R": Channel("rvalid", "rready", ("rdata", "rresp")),
            "lite AW": Channel("awvalid", "awready", (), design_sends=False),
            "lite W": Channel("wvalid", "wready", (), design_sends=False),
            "lite AR": Channel("arvalid", "arready", (), design_sends=False),
        }

    def sig(self, name: str):
        return getattr(self.dut, f"{self.p}_{name}")

    def known(self, signal, req: str) -> int:
        """A design output's value where the oracle reads it; X or Z fails the test at once (the bench's
        models would crash on it one edge later), with the monitor's earlier messages."""
        value = signal.value
        if value.is_resolvable:
            return int(value)
        earlier = f"; monitor: {'; '.join(self.errors[:6])}" if self.errors else ""
        raise OracleFailure(f"[{req}] cycle {self.cycle}: {signal._name} is {value} (X or Z) where the oracle "
                            f"reads it{earlier}")

    def error(self, req: str, message: str) -> None:
        if len(self.errors) < 50:
            self.errors.append(f"[{req}] cycle {self.cycle}: {message}")

    def begin_job(self, window: JobWindow) -> None:
        self.job = window
        self.job_begin_cycle = self.cycle
        self.count = Counters()
        self.pending_aw = []
        self.w_in_burst = 0
        self.start_cycle = None
        self.irq_rise_cycle = None

    def end_job(self) -> None:
        """Check that every issued burst completed, then treat further traffic as an error."""
        self._check_quiet("at the end of the job")
        self.job = None

    def _check_quiet(self, when: str) -> None:
        c = self.count
        req = self.job.stop_req if self.job is not None else "JOB-COMPLETE"
        if c.r_beats != c.ar_beats:
            self.error(req, f"{when}: {c.ar_beats - c.r_beats} read beats still owed "
                       f"({c.ar_bursts} bursts, {c.ar_beats} beats requested, {c.r_beats} received)")
        if self.pending_aw:
            self.error(req, f"{when}: {len(self.pending_aw)} write bursts missing W beats")
        if c.b_resps != c.aw_bursts:
            self.error(req, f"{when}: {c.aw_bursts - c.b_resps} write responses not yet accepted")

    async def run(self) -> None:
        # Sampled at the falling edge: every signal has settled after the rising edge (DUT flops and
        # the testbench's drivers alike), so these are the values the next rising edge acts on.
        clk = self.dut.clk
        while True:
            await FallingEdge(clk)
            self.cycle += 1
            if _int(self.dut.rst_n) != 1:
                for ch in (*self.channels.values(), *self.lite.values()):
                    ch.prev_waiting = False
                self.lite_aw, self.lite_w = [], []
                continue
            self._sample()

    # ------------------------------------------------------------------ sampling
    def _stable(self, name: str, ch: Channel, sig, req: str = "AXI-HANDSHAKE") -> tuple[bool, tuple]:
        if ch.design_sends:
            valid = self.known(sig(ch.valid), req) == 1
            ready = _int(sig(ch.ready)) == 1
            payload = tuple(self.known(sig(f), FIELD_REQ.get(f, "BURST-FORM")) for f in ch.fields) if valid else ()
        else:
            valid = _int(sig(ch.valid)) == 1
            ready = self.known(sig(ch.ready), req) == 1
            payload = tuple(_int(sig(f)) for f in ch.fields) if valid else ()
        if ch.prev_waiting:
            if not valid:
                self.error(req, f"{name}VALID dropped before READY")
            elif payload != ch.prev_payload:
                self.error(req, f"{name} payload changed while waiting for READY: {ch.prev_payload} -> {payload}")
        ch.prev_waiting = valid and not ready
        if ch.prev_waiting:
            self.coverage.hit(f"wait {name}")
        ch.prev_payload = payload
        return valid and ready, payload

    def _sample(self) -> None:
        for name, ch in self.channels.items():
            fire, payload = self._stable(name, ch, self.sig)
            if fire:
                self._note_activity()
                getattr(self, f"_on_{name.lower()}")(payload)
        lite = lambda n: getattr(self.dut, f"s_axil_{n}")  # noqa: E731
        for name, ch in self.lite.items():
            self._stable(name, ch, lite, "LITE-HANDSHAKE")
        self._sample_responses()
        self._sample_lite_start(lite)
        irq = self.known(self.dut.irq, "IRQ")
        if irq and not self._irq_prev:
            self.irq_rise_cycle = self.cycle
            if self.job is not None:
                self._check_quiet("at the completion interrupt")
        self._irq_prev = irq

    def _note_activity(self) -> None:
        self.last_activity_cycle = self.cycle

    def _sample_responses(self) -> None:
        for ch in ("R", "B"):
            valid, ready = _int(self.sig(f"{ch.lower()}valid")), self.known(self.sig(f"{ch.lower()}ready"), "AXI-HANDSHAKE")
            if valid == 1 and ready == 0:
                self.coverage.hit(f"wait {ch}")
            if valid == 1 and ready == 1:
                self._note_activity()
                resp = _int(self.sig(f"{ch.lower()}resp")) or 0
                self.coverage.hit(f"axi {ch} {RESP_NAMES[resp & 3]}")
                if ch == "R":
                    self.count.r_beats += 1
                else:
                    self.count.b_resps += 1
                    if self.count.b_resps > self.count.w_bursts_done:
                        self.error("WRITE-AFTER-AW", "write response accepted before its burst's last W beat")

    def _sample_lite_start(self, lite) -> None:
        if _int(lite("awvalid")) == 1 and _int(lite("awready")) == 1:
            self.lite_aw.append(_int(lite("awaddr")) or 0)
        if _int(lite("wvalid")) == 1 and _int(lite("wready")) == 1:
            self.lite_w.append(_int(lite("wdata")) or 0)
        while self.lite_aw and self.lite_w:
            addr, data = self.lite_aw.pop(0), self.lite_w.pop(0)
            if self.start_cycle is None and (addr & 0xFFC) == 0x004 and data & 1:
                self.start_cycle = self.cycle

    def _check_burst(self, kind: str, addr: int, alen: int, size: int, burst: int) -> int:
        job = self.job
        beats = alen + 1
        nbytes = job.data_bytes
        if burst != 1:
            self.error("BURST-FORM", f"{kind} burst type {burst} is not INCR")
        if (1 << size) != nbytes:
            self.error("BURST-FORM", f"{kind} size {1 << size} bytes is not the full bus width {nbytes}")
        if addr % nbytes:
            self.error("BURST-FORM", f"{kind} address {addr:#x} is not aligned to {nbytes} bytes")
        if beats > job.burst:
            self.error("BURST-LEN", f"{kind} burst of {beats} beats exceeds BURST={job.burst}")
        if (addr & 0xFFF) + beats * nbytes > 0x1000:
            self.error("BURST-4K", f"{kind} burst {addr:#x}+{beats}x{nbytes} crosses a 4 KB boundary")
        prefix = kind.lower()
        if self.known(self.sig(f"{prefix}id"), "BURST-FORM") != 0 or self.known(self.sig(f"{prefix}lock"), "BURST-FORM") != 0:
            self.error("BURST-FORM", f"{kind}ID or {kind}LOCK not 0")
        self.coverage.hit(f"{kind} burst {beats}")
        if (addr & 0xFFF) + beats * nbytes == 0x1000:
            self.coverage.hit(f"{kind} burst ends at 4 KB")
        return beats

    def _on_ar(self, payload) -> None:
        addr, alen, size, burst = payload
        if self.job is None:
            self.error("JOB-COMPLETE", f"read burst at {addr:#x} while no job is running")
            return
        beats = self._check_burst("AR", addr, alen, size, burst)
        end = addr + beats * self.job.data_bytes
        if addr < self.job.src or end > self.job.read_end():
            self.error("READ-RANGE", f"read {addr:#x}..{end:#x} outside the source {self.job.src:#x}..{self.job.read_end():#x}")
        self.count.ar_bursts += 1
        self.count.ar_beats += beats

    def _on_aw(self, payload) -> None:
        addr, alen, size, burst = payload
        if self.job is None:
            self.error("JOB-COMPLETE", f"write burst at {addr:#x} while no job is running")
            return
        beats = self._check_burst("AW", addr, alen, size, burst)
        self.count.aw_bursts += 1
        self.pending_aw.append((addr, beats))

    def _on_w(self, payload) -> None:
        data, strb, last = payload
        job = self.job
        if job is None:
            self.error("JOB-COMPLETE", "write data beat while no job is running")
            return
        if not self.pending_aw:
            self.error("WRITE-AFTER-AW", "W beat before its write address (not supported by this oracle)")
            return
        addr, beats = self.pending_aw[0]
        beat_addr = addr + self.w_in_burst * job.data_bytes
        self.w_in_burst += 1
        self.count.w_beats += 1
        is_last = self.w_in_burst == beats
        if bool(last) != is_last:
            self.error("WRITE-WLAST", f"WLAST={last} on beat {self.w_in_burst} of a {beats}-beat burst")
        if data is None or strb is None:
            self.error("WRITE-STROBES", "X on WDATA/WSTRB during a write beat")
            strb, data = strb or 0, data or 0
        for lane in range(job.data_bytes):
            if not (strb >> lane) & 1:
                continue
            byte_addr = beat_addr + lane
            offset = byte_addr - job.dst
            if not 0 <= offset < 2 * job.length:
                self.error("WRITE-STROBES", f"byte {byte_addr:#x} written outside the destination "
                           f"{job.dst:#x}..{job.dst + 2 * job.length:#x}")
                continue
            got = (data >> (8 * lane)) & 0xFF
            if got != job.expected[offset]:
                self.error("WRITE-STROBES", f"byte {byte_addr:#x} (result {offset // 2}) written as {got:#04x}, "
                           f"expected {job.expected[offset]:#04x}")
            self.count.bytes_written.add(offset)
        if is_last:
            self.pending_aw.pop(0)
            self.w_in_burst = 0
            self.count.w_bursts_done += 1
