"""cocotb functional oracle of gcd (valid/ready request {a, b}, response gcd(a, b)).

Configured only through the environment (the evaluator and the public check set these):
  GCD_WIDTH         operand width (the WIDTH parameter the design was built with)
  GCD_SEEDS         comma-separated seeds; one test per seed
  GCD_COUNT         requests per seed
  GCD_BACKPRESSURE  1: resp_rdy is held low on random cycles, req_val gaps are random
  GCD_EDGE_CASES    1: also run the edge-case test
  GCD_REPORT_DIR    where each test writes <test>.json with its cycle count
Each request waits at most GCD_MAX_CYCLES cycles for its response (default 4096).
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gcd_stimulus import edge_cases, operand_pairs  # noqa: E402

PERIOD_NS = 10
WIDTH = int(os.environ.get("GCD_WIDTH", "16"))
SEEDS = [int(s) for s in os.environ.get("GCD_SEEDS", "1").split(",") if s.strip()]
COUNT = int(os.environ.get("GCD_COUNT", "20"))
BACKPRESSURE = os.environ.get("GCD_BACKPRESSURE", "0") == "1"
EDGE = os.environ.get("GCD_EDGE_CASES", "0") == "1"
MAX_CYCLES = int(os.environ.get("GCD_MAX_CYCLES", "4096"))
REPORT_DIR = os.environ.get("GCD_REPORT_DIR")


async def _reset(dut) -> None:
    cocotb.start_soon(Clock(dut.clk, PERIOD_NS, unit="ns").start())
    dut.reset.value = 1
    dut.req_val.value = 0
    dut.req_msg.value = 0
    dut.resp_rdy.value = 0
    for _ in range(3):
        await FallingEdge(dut.clk)
    dut.reset.value = 0


async def _one_request(dut, a: int, b: int, rng: random.Random | None) -> tuple[int, int]:
    """Drive one request and wait for its response; returns (response, cycles)."""
    cycles = 0
    while True:
        await FallingEdge(dut.clk)
        dut.resp_rdy.value = 0
        if rng is not None and rng.random() < 0.3:
            dut.req_val.value = 0  # an idle cycle before the request
            cycles += 1
            continue
        dut.req_val.value = 1
        dut.req_msg.value = (a << WIDTH) | b
        await ReadOnly()
        accepted = int(dut.req_rdy.value) == 1
        await RisingEdge(dut.clk)
        cycles += 1
        if accepted:
            break
        assert cycles < MAX_CYCLES, f"gcd({a}, {b}): request not accepted in {MAX_CYCLES} cycles"
    while True:
        await FallingEdge(dut.clk)
        dut.req_val.value = 0
        ready = 0 if (rng is not None and rng.random() < 0.4) else 1
        dut.resp_rdy.value = ready
        await ReadOnly()
        done = ready == 1 and int(dut.resp_val.value) == 1
        result = int(dut.resp_msg.value) if done else None
        await RisingEdge(dut.clk)
        cycles += 1
        if done:
            return result, cycles
        assert cycles < MAX_CYCLES, f"gcd({a}, {b}): no response in {MAX_CYCLES} cycles"


async def _check_pairs(dut, name: str, pairs: list[tuple[int, int]], rng: random.Random | None) -> None:
    await _reset(dut)
    total = 0
    wrong = []
    for a, b in pairs:
        got, cycles = await _one_request(dut, a, b, rng)
        total += cycles
        if got != math.gcd(a, b):
            wrong.append(f"gcd({a}, {b}) = {math.gcd(a, b)}, got {got}")
    if REPORT_DIR:
        Path(REPORT_DIR).mkdir(parents=True, exist_ok=True)
        (Path(REPORT_DIR) / f"{name}.json").write_text(json.dumps(
            {"test": name, "requests": len(pairs), "cycles": total, "wrong": len(wrong)}))
    assert not wrong, f"{len(wrong)} of {len(pairs)} wrong: " + "; ".join(wrong[:5])


@cocotb.test()
@cocotb.parametrize(seed=SEEDS)
async def gcd_random(dut, seed: int) -> None:
    """Random requests of one seed, checked against math.gcd."""
    rng = random.Random(seed) if BACKPRESSURE else None
    await _check_pairs(dut, f"seed_{seed}", operand_pairs(seed, COUNT, WIDTH), rng)


if EDGE:
    @cocotb.test()
    async def gcd_edge_cases(dut) -> None:
        """Zero operands, equal operands, the largest values."""
        await _check_pairs(dut, "edge_cases", edge_cases(WIDTH), None)
