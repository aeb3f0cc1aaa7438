"""cocotb testbench: runs our firmware images on PicoRV32 (RTL or gate-level netlist).

The programs come from the environment variable CLOSER_FW_PROGRAMS, a JSON list of
{"name", "image", "expect", "max_cycles"} written by `closer.picorv32.oracle`; one cocotb test
per program, named after it. Each test resets the core, loads the flat binary `image` at address 0
of a 64 KiB memory and serves the native memory interface (one-cycle responses) until the program
writes IO_DONE. Pass = IO_RESULT holds `expect`, `trap` was never raised, within `max_cycles`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge

RAM_BYTES = 64 * 1024
IO_RESULT = 0x1000_0000
IO_DONE = 0x1000_0004
CLOCK_PERIOD_NS = 10


class FirmwareFailure(AssertionError):
    pass


class Memory:
    """Byte-addressed RAM plus the two test I/O words."""

    def __init__(self, image: bytes) -> None:
        if len(image) > RAM_BYTES:
            raise FirmwareFailure(f"image of {len(image)} bytes does not fit {RAM_BYTES} bytes of RAM")
        self.ram = bytearray(RAM_BYTES)
        self.ram[: len(image)] = image
        self.result: int | None = None
        self.done = False

    def read(self, addr: int) -> int:
        if addr + 4 > RAM_BYTES:
            raise FirmwareFailure(f"read of unmapped address {addr:#010x}")
        return int.from_bytes(self.ram[addr: addr + 4], "little")

    def write(self, addr: int, data: int, strobe: int) -> None:
        if addr == IO_RESULT:
            self.result = data
            return
        if addr == IO_DONE:
            self.done = True
            return
        if addr + 4 > RAM_BYTES:
            raise FirmwareFailure(f"write of unmapped address {addr:#010x}")
        for lane in range(4):
            if strobe >> lane & 1:
                self.ram[addr + lane] = data >> (8 * lane) & 0xFF


def _int(signal, what: str, cycle: int) -> int:
    value = signal.value
    if not value.is_resolvable:
        raise FirmwareFailure(f"{what} is {value} (X/Z) at cycle {cycle}")
    return int(value)


async def run_program(dut, image: Path, expect: int, max_cycles: int) -> int:
    memory = Memory(image.read_bytes())
    dut.resetn.value = 0
    dut.mem_ready.value = 0
    dut.mem_rdata.value = 0
    for name in ("pcpi_wr", "pcpi_wait", "pcpi_ready"):
        if hasattr(dut, name):
            getattr(dut, name).value = 0
    if hasattr(dut, "pcpi_rd"):
        dut.pcpi_rd.value = 0
    if hasattr(dut, "irq"):
        dut.irq.value = 0
    await ClockCycles(dut.clk, 10, rising=False)
    dut.resetn.value = 1
    for cycle in range(max_cycles):
        await FallingEdge(dut.clk)
        dut.mem_ready.value = 0
        if _int(dut.trap, "trap", cycle):
            raise FirmwareFailure(f"trap raised at cycle {cycle}; result so far {memory.result}")
        if not _int(dut.mem_valid, "mem_valid", cycle):
            continue
        addr = _int(dut.mem_addr, "mem_addr", cycle)
        strobe = _int(dut.mem_wstrb, "mem_wstrb", cycle)
        if strobe:
            memory.write(addr & ~3, _int(dut.mem_wdata, "mem_wdata", cycle), strobe)
        else:
            dut.mem_rdata.value = memory.read(addr & ~3)
        dut.mem_ready.value = 1
        if memory.done:
            got = memory.result
            if got != expect:
                shown = "nothing" if got is None else f"{got:#010x}"
                raise FirmwareFailure(f"result {shown}, expected {expect:#010x} (cycle {cycle})")
            dut._log.info("PASS result %#010x after %d cycles", got, cycle)
            return cycle
    raise FirmwareFailure(f"no IO_DONE within {max_cycles} cycles (result {memory.result})")


def _make_test(program: dict):
    async def firmware(dut) -> None:
        clock = Clock(dut.clk, CLOCK_PERIOD_NS, unit="ns")
        clock.start()
        try:
            await run_program(dut, Path(program["image"]), int(program["expect"]),
                              int(program["max_cycles"]))
        finally:
            clock.stop()

    firmware.__name__ = firmware.__qualname__ = program["name"]
    return cocotb.test(name=program["name"])(firmware)


for _program in json.loads(os.environ.get("CLOSER_FW_PROGRAMS", "[]")):
    globals()[f"test_{_program['name']}"] = _make_test(_program)
