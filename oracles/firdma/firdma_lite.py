"""An AXI4-Lite master for the firdma oracle that exercises the slave's side of the protocol.

cocotbext-axi's AxiLiteMaster holds BREADY/RREADY high and issues one access at a time, so a slave
that drops or changes a B/R response while it waits, or accepts a new address while its response
is still pending, is never caught. This master drives `s_axil_*` directly, one clocked loop per
channel (handshakes sampled at the rising edge, as cocotbext does):

* AW, W and AR are queued; each item waits its own number of cycles before VALID rises, so W may
  come before, after or with its AW (`order`), and several accesses may be in flight at once
  (reads overtake queued writes; responses come back in order per direction, as AXI requires);
* BREADY and RREADY follow a seeded stall pattern (a profile), also while a response is waiting.

Responses are paired with accesses in issue order. Stability of B/R while they wait is judged by
firdma_monitor (it samples every cycle); this module only drives and collects.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from dataclasses import dataclass

from cocotb.triggers import Event, RisingEdge

from firdma_check import known

LITE_PROFILES = ("none", "stall", "heavy")
ORDERS = ("together", "aw_first", "w_first")


@dataclass
class LiteResponse:
    resp: int
    data: int = 0


class _Pending:
    """One access waiting for its response."""

    def __init__(self) -> None:
        self.event = Event()
        self.response: LiteResponse | None = None

    def resolve(self, response: LiteResponse) -> None:
        self.response = response
        self.event.set()


class _Sender:
    """A VALID/payload channel: items (delay_cycles, payload values) sent in order."""

    def __init__(self, dut, valid: str, payload: tuple[str, ...], ready: str):
        self.valid = getattr(dut, valid)
        self.ready = getattr(dut, ready)
        self.payload = [getattr(dut, name) for name in payload]
        self.queue: deque[tuple[int, tuple[int, ...]]] = deque()
        self.current: tuple[int, ...] | None = None
        self.wait_left = 0
        self.driving = False   # what we drive (a value written this step reads back only later)
        self.valid.value = 0

    def reset(self) -> None:
        self.queue.clear()
        self.current = None
        self.driving = False
        self.valid.value = 0

    def step(self) -> bool:
        """Called right after a rising edge; returns True if a handshake happened at that edge."""
        fired = False
        if self.driving and self.ready.value.is_resolvable and int(self.ready.value) == 1:
            fired = True
            self.current = None
            self.driving = False
            self.valid.value = 0
        if self.current is None and self.queue:
            self.wait_left, self.current = self.queue.popleft()
        if self.current is not None and not self.driving:
            if self.wait_left > 0:
                self.wait_left -= 1
            else:
                for sig, value in zip(self.payload, self.current):
                    sig.value = value
                self.driving = True
                self.valid.value = 1
        return fired


class _Receiver:
    """A response channel: READY from a stall pattern; responses resolve waiting accesses in order."""

    def __init__(self, dut, valid: str, ready: str, fields: tuple[str, ...]):
        self.valid = getattr(dut, valid)
        self.ready = getattr(dut, ready)
        self.fields = [getattr(dut, name) for name in fields]
        self.waiting: deque[_Pending] = deque()
        self.unexpected = 0
        self.ready_state = True
        self.ready.value = 1

    def step(self, stall: bool) -> None:
        if self.ready_state and self.valid.value.is_resolvable and int(self.valid.value) == 1:
            values = [known(f, "LITE-HANDSHAKE", "an AXI4-Lite response") for f in self.fields]
            if self.waiting:
                self.waiting.popleft().resolve(LiteResponse(*values))
            else:
                self.unexpected += 1
        self.ready_state = not stall
        self.ready.value = 0 if stall else 1


def _stall_pattern(profile: str, rng: random.Random):
    if profile == "none":
        return itertools.repeat(False)
    share = {"stall": 0.4, "heavy": 0.75}.get(profile)
    if share is None:
        raise ValueError(f"unknown AXI-Lite profile {profile!r}; known: {', '.join(LITE_PROFILES)}")
    return itertools.cycle([rng.random() < share for _ in range(89)])


class LiteMaster:
    """AXI4-Lite master on the `s_axil_*` ports of `dut` (see the module docstring)."""

    def __init__(self, dut, profile: str = "none", seed: int = 0):
        self.dut = dut
        self.aw = _Sender(dut, "s_axil_awvalid", ("s_axil_awaddr", "s_axil_awprot"), "s_axil_awready")
        self.w = _Sender(dut, "s_axil_wvalid", ("s_axil_wdata", "s_axil_wstrb"), "s_axil_wready")
        self.ar = _Sender(dut, "s_axil_arvalid", ("s_axil_araddr", "s_axil_arprot"), "s_axil_arready")
        self.b = _Receiver(dut, "s_axil_bvalid", "s_axil_bready", ("s_axil_bresp",))
        self.r = _Receiver(dut, "s_axil_rvalid", "s_axil_rready", ("s_axil_rresp", "s_axil_rdata"))
        self._wake = Event()
        self.set_profile(profile, seed)

    def set_profile(self, profile: str, seed: int) -> None:
        self.profile = profile
        self.rng = random.Random(seed)
        self._b_stall = _stall_pattern(profile, self.rng)
        self._r_stall = _stall_pattern(profile, self.rng)

    def _delay(self) -> int:
        return 0 if self.profile == "none" else self.rng.choice([0, 0, 1, 2, 5])

    def _idle(self) -> bool:
        return not any((self.aw.queue, self.w.queue, self.ar.queue, self.aw.current, self.w.current,
                        self.ar.current, self.b.waiting, self.r.waiting))

    async def run(self) -> None:
        clk, rst_n = self.dut.clk, self.dut.rst_n
        while True:
            if self._idle():  # nothing in flight: sleep (READY high) until the next access is issued
                for receiver in (self.b, self.r):
                    receiver.ready_state = True
                    receiver.ready.value = 1
                self._wake.clear()
                await self._wake.wait()
            await RisingEdge(clk)
            if not rst_n.value.is_resolvable or int(rst_n.value) == 0:
                for sender in (self.aw, self.w, self.ar):
                    sender.reset()
                continue
            self.aw.step()
            self.w.step()
            self.ar.step()
            self.b.step(next(self._b_stall))
            self.r.step(next(self._r_stall))

    def issue_write(self, addr: int, value: int, order: str = "together", strb: int = 0xF,
                    prot: int = 0) -> _Pending:
        """Queue a write; returns the access, whose `event` is set when its B response arrives."""
        if order not in ORDERS:
            raise ValueError(f"unknown write order {order!r}")
        gap = 1 + self._delay()
        aw_delay, w_delay = {"together": (0, 0), "aw_first": (0, gap), "w_first": (gap, 0)}[order]
        extra = self._delay()
        pending = _Pending()
        self._wake.set()
        self.b.waiting.append(pending)
        self.aw.queue.append((extra + aw_delay, (addr & 0xFFF, prot)))
        self.w.queue.append((extra + w_delay, (value & 0xFFFFFFFF, strb)))
        return pending

    def issue_read(self, addr: int, prot: int = 0) -> _Pending:
        pending = _Pending()
        self._wake.set()
        self.r.waiting.append(pending)
        self.ar.queue.append((self._delay(), (addr & 0xFFF, prot)))
        return pending

    async def write(self, addr: int, value: int, order: str = "together", strb: int = 0xF) -> LiteResponse:
        pending = self.issue_write(addr, value, order, strb)
        await pending.event.wait()
        return pending.response

    async def read(self, addr: int) -> LiteResponse:
        pending = self.issue_read(addr)
        await pending.event.wait()
        return pending.response
