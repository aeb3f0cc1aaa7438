"""Operand pairs of the gcd oracle: a pure function of (seed, count, width), so a test can
reproduce exactly what a given seed drives (and the anti-gaming tests can build a design that
memorizes the public seeds' answers)."""

from __future__ import annotations

import random


def edge_cases(width: int) -> list[tuple[int, int]]:
    top = (1 << width) - 1
    return [(0, 0), (0, 7 % (top + 1)), (9 % (top + 1), 0), (1, 1), (top, top), (top - 1, (top - 1) // 2),
            (1 << (width - 1), 1 << (width - 2)), (12 % (top + 1), 18 % (top + 1))]


def operand_pairs(seed: int, count: int, width: int) -> list[tuple[int, int]]:
    """Random pairs: a third share a common factor, the rest are uniform (bounded ratio so the
    subtraction-based reference stays within a few hundred cycles per request)."""
    rng = random.Random(seed * 7919 + width)
    top = (1 << width) - 1
    pairs = []
    for i in range(count):
        if i % 3 == 0:
            factor = rng.randint(2, max(2, top >> (width // 2)))
            a = factor * rng.randint(1, max(1, top // factor))
            b = factor * rng.randint(1, max(1, top // factor))
        else:
            a = rng.randint(top >> 3, top)
            b = rng.randint(top >> 3, top)
        pairs.append((a & top, b & top))
    return pairs
