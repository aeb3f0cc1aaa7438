"""JSON for the start-up path (the `closer-tool` launcher, the broker's client) without the json
package, whose import (re, enum, collections, ...) costs about 25 ms of CPU here, half of what a
`closer-tool status` may take. It uses the standard library's own C parts of that package
(`_json`: the scanner and the string encoder), so parsing is json.loads's, value for value.

`loads(text)` returns what json.loads returns for `text` and refuses (ValueError) what it refuses;
`dumps(value, indent)` writes exactly what json.dumps(value, indent=indent) writes for dicts with
str keys, lists, tuples, str, int, float, bool and None (tests/test_lightjson.py checks both).
"""

from __future__ import annotations

import _json

_WHITESPACE = " \t\n\r"


class _Context:
    """What the C scanner reads of a json.JSONDecoder: the defaults of json.loads."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__
    memo: dict = {}  # the scanner empties it after each document


_SCAN = _json.make_scanner(_Context())


def loads(text: str | bytes) -> object:
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8")  # json.loads also detects UTF-16/32; nothing here writes those
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _SCAN(text, start)
    except StopIteration:
        raise ValueError(f"Expecting value at char {start}") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"Extra data at char {end}")
    return value


def dumps(value: object, indent: int | None = None) -> str:
    return _encode(value, indent, 0)


def _encode(value: object, indent: int | None, level: int) -> str:
    if isinstance(value, str):
        return _json.encode_basestring_ascii(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError("keys must be str")
        parts = [f"{_json.encode_basestring_ascii(k)}: {_encode(v, indent, level + 1)}" for k, v in value.items()]
        return _container("{", parts, "}", indent, level)
    if isinstance(value, (list, tuple)):
        return _container("[", [_encode(v, indent, level + 1) for v in value], "]", indent, level)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _container(opening: str, parts: list[str], closing: str, indent: int | None, level: int) -> str:
    if not parts:
        return opening + closing
    if indent is None:
        return opening + ", ".join(parts) + closing
    inner = "\n" + " " * (indent * (level + 1))
    return opening + inner + ("," + inner).join(parts) + "\n" + " " * (indent * level) + closing


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)
