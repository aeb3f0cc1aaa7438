"""Reference model of __NAME__, one clock edge at a time (the oracle compares against it)."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass
class Model:
    width: int
    sum: int = 0

    @property
    def saturated(self) -> bool:
        return self.sum == (1 << self.width) - 1

    def clock(self, clear: bool, valid: bool, data: int) -> None:
        if clear:
            self.sum = 0
        elif valid:
            self.sum = min(self.sum + data, (1 << self.width) - 1)


def random_cycles(seed: int, width: int, count: int, busy: bool):
    """`count` cycles of (clear, in_valid, in_data); `busy` clears rarely so the sum saturates."""
    rng = random.Random(seed)
    for _ in range(count):
        yield rng.random() < (0.02 if busy else 0.1), rng.random() < 0.8, rng.getrandbits(width) >> rng.randint(0, 3)
