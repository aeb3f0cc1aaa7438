"""Bit-exact reference model of the firdma FIR (the normative formula of designs/firdma/spec.md).

    y[n] = sat16((sum_{k<NTAPS} COEF[k] * x[n-k] + rnd) >>> SHIFT),  x[m<0] = 0,
    rnd = 1 << (SHIFT-1) if SHIFT > 0 else 0

Python integers are unbounded, so the sum is exact; `>>` on a negative int is an arithmetic shift.
"""

from __future__ import annotations

import struct

INT16_MIN, INT16_MAX = -32768, 32767


def to_int16(value: int) -> int:
    value &= 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def fir(samples: list[int], coefs: list[int], shift: int) -> list[int]:
    """The LEN results for `samples` (signed 16-bit) with `coefs` (signed 16-bit) and `shift`."""
    if not 0 <= shift <= 31:
        raise ValueError(f"SHIFT must be 0..31, got {shift}")
    rnd = (1 << (shift - 1)) if shift > 0 else 0
    out = []
    for n in range(len(samples)):
        acc = 0
        for k, c in enumerate(coefs):
            if n - k >= 0:
                acc += c * samples[n - k]
        y = (acc + rnd) >> shift
        out.append(max(INT16_MIN, min(INT16_MAX, y)))
    return out


def pack_samples(samples: list[int]) -> bytes:
    """Little-endian signed 16-bit samples, as they sit in memory."""
    return struct.pack(f"<{len(samples)}h", *samples)


def unpack_samples(data: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(data) // 2}h", data))
