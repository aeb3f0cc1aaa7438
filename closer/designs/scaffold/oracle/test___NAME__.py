"""cocotb oracle of __NAME__ against the reference model (__NAME___model.Model).

Configured only through the environment (tasks.toml [oracle_env] sets these):
  DUT_WIDTH       the WIDTH parameter the design was built with
  DUT_SEEDS       comma-separated seeds; one test per seed
  DUT_COUNT       cycles per seed
  DUT_BUSY        1: rare clears (long runs that saturate)
  DUT_REPORT_DIR  where each test writes <test>.json with its cycle count
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

sys.path.insert(0, str(Path(__file__).resolve().parent))
from __NAME___model import Model, random_cycles  # noqa: E402

WIDTH = int(os.environ.get("DUT_WIDTH", "8"))
SEEDS = [int(s) for s in os.environ.get("DUT_SEEDS", "1").split(",") if s.strip()]
COUNT = int(os.environ.get("DUT_COUNT", "100"))
BUSY = os.environ.get("DUT_BUSY", "0") == "1"
REPORT_DIR = os.environ.get("DUT_REPORT_DIR")


def _check(dut, model: Model, cycle: int) -> list[str]:
    wrong = []
    for port, expected in (("sum", model.sum), ("saturated", int(model.saturated))):
        got = getattr(dut, port).value
        if not got.is_resolvable or int(got) != expected:
            wrong.append(f"cycle {cycle}: {port} = {got}, expected {expected}")
    return wrong


@cocotb.test()
@cocotb.parametrize(seed=SEEDS)
async def random_run(dut, seed: int) -> None:
    """Random clears and additions of one seed, checked every cycle."""
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.reset.value, dut.clear.value, dut.in_valid.value, dut.in_data.value = 1, 0, 0, 0
    for _ in range(2):
        await FallingEdge(dut.clk)
    dut.reset.value = 0
    model, wrong, cycle = Model(WIDTH), [], 0
    for clear, valid, data in random_cycles(seed, WIDTH, COUNT, BUSY):
        dut.clear.value, dut.in_valid.value, dut.in_data.value = int(clear), int(valid), data
        await ReadOnly()
        wrong += _check(dut, model, cycle)
        model.clock(clear, valid, data)
        await RisingEdge(dut.clk)
        await FallingEdge(dut.clk)
        cycle += 1
    if REPORT_DIR:
        Path(REPORT_DIR).mkdir(parents=True, exist_ok=True)
        (Path(REPORT_DIR) / f"seed_{seed}.json").write_text(json.dumps({"test": f"seed_{seed}", "cycles": cycle}))
    assert not wrong, "; ".join(wrong[:5])
