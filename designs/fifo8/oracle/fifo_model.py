"""Reference model of fifo8: a FWFT FIFO of 2**DEPTH_LOG2 words, one cycle at a time."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field


@dataclass
class FifoModel:
    depth: int
    words: deque = field(default_factory=deque)

    @property
    def full(self) -> bool:
        return len(self.words) == self.depth

    @property
    def empty(self) -> bool:
        return not self.words

    def clock(self, push: bool, data: int, pop: bool) -> int | None:
        """One rising edge; returns the word popped (None if none). A push while full and a pop
        while empty are ignored; both at once move one word through."""
        do_push, do_pop = push and not self.full, pop and not self.empty
        popped = self.words.popleft() if do_pop else None
        if do_push:
            self.words.append(data)
        return popped


def random_cycles(seed: int, width: int, pressure: bool):
    """Endless (push, data, pop) per cycle; with pressure the consumer stalls in bursts."""
    rng = random.Random(seed)
    stall = 0
    while True:
        if pressure and stall == 0 and rng.random() < 0.1:
            stall = rng.randint(2, 12)
        pop = stall == 0 and rng.random() < (0.5 if pressure else 0.7)
        stall = max(0, stall - 1)
        yield rng.random() < 0.7, rng.getrandbits(width), pop


def edge_cycles(depth: int, width: int):
    """Fill past full, drain past empty, push and pop together at full and at empty."""
    top = (1 << width) - 1
    steps = [(True, (i * 37) & top, False) for i in range(depth + 2)]   # fill, then push while full
    steps += [(True, top, True)]                                        # push+pop while full
    steps += [(False, 0, True) for _ in range(depth + 2)]               # drain, then pop while empty
    steps += [(True, top, True), (False, 0, True), (True, 0, True), (False, 0, True)]
    return steps
