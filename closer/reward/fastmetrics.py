"""A fast reader for flat metric records (msgspec), tried before `metrics_file`'s full reader.

`fast_values(raw)` returns the flat metrics of `raw` when it is a flat object of finite, in-range
numbers, strings, booleans, nulls and flat lists of those, under keys already spelled with `__`;
None otherwise, and then `metrics_file` (the reference) decides and words the error. What it
accepts, the reference accepts with the same values (tests/test_reward_fastmetrics.py checks
this on generated good and perturbed records). The checks run in C (msgspec, bytes methods, one
regex), not per value in Python:
- type and upper bound by the msgspec type; the lower bound of a non-zero magnitude (1e-30) by
  leaving any number with an exponent of -20 or below, or nine zeros after its point, to the
  reference (every other non-zero JSON number is at least 1e-28);
- two equal keys (msgspec keeps the last; the reference refuses): with no backslash in the bytes
  (so no escaped colon), the bytes hold as many colons as the compact re-encoding exactly when
  no pair was dropped (keys hold none; a string's colons are the same in both).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Annotated

import msgspec

from closer.metrics import KNOWN_KEYS, MetricKind, parse_clock_details
from closer.reward.metrics_file import MAX_MAGNITUDE, MetricValue

# an int within 64 bits is below MAX_MAGNITUDE and MAX_INT_DIGITS; a longer one goes to the reference
_Scalar = (Annotated[float, msgspec.Meta(ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)]
           | Annotated[int, msgspec.Meta(ge=-2**63, le=2**63 - 1)] | str | bool | None)
_DECODER = msgspec.json.Decoder(dict[str, _Scalar | list[_Scalar]])
_ENCODER = msgspec.json.Encoder()
_NEGATIVE_EXPONENT = re.compile(rb"-0*([0-9]*)")
_CLOCK_KEYS = frozenset(k for k, known in KNOWN_KEYS.items() if known.kind is MetricKind.CLOCKS)


def fast_values(raw: bytes) -> dict[str, MetricValue] | None:
    if b"\\" in raw or b".000000000" in raw or _tiny_exponent(raw):
        return None
    try:
        data = _DECODER.decode(raw)
    except (msgspec.MsgspecError, ValueError):  # ValueError: invalid UTF-8 inside a string
        return None
    if not data or not _plain_keys(tuple(data)) or raw.count(b":") != _ENCODER.encode(data).count(b":"):
        return None
    for key in _CLOCK_KEYS.intersection(data):
        details = data[key]
        if type(details) is not list or not _clock_details_ok(tuple(details)):
            return None
    return data


def _tiny_exponent(raw: bytes) -> bool:
    """An exponent of -20 or below anywhere (also inside a string: then the reference decides)."""
    for marker in (b"e-", b"E-"):
        at = raw.find(marker)
        while at >= 0:
            digits = _NEGATIVE_EXPONENT.match(raw, at + 1).group(1)
            if len(digits) > 1 and int(digits) >= 20:
                return True
            at = raw.find(marker, at + 2)
    return False


@lru_cache(maxsize=256)
def _plain_keys(keys: tuple[str, ...]) -> bool:
    """No key of the set is spelled with ':' (which the full reader normalizes and cross-checks)."""
    return not any(":" in key for key in keys)


@lru_cache(maxsize=1024)
def _clock_details_ok(details: tuple[object, ...]) -> bool:
    try:
        parse_clock_details(list(details))
    except ValueError:
        return False
    return True
