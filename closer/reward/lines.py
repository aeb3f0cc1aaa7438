"""The output lines of `closer reward batch`, built column-wise from scored columns.

Each line is the bytes `orjson.dumps` gives for the dict {input, schema_version, reward, gate,
penalty_total, terms} of the scalar result (`batch.scalar_line`). The fixed parts are encoded
once; a column of numbers, booleans and nulls is encoded by one `orjson.dumps` of the whole list,
split at its commas (none occurs inside such a value; NaN and infinity come out as null, as the
scalar path's None and orjson's own infinity do); a line is one join.
"""

from __future__ import annotations

from itertools import repeat
from typing import Iterable

import orjson

from closer.reward.columns import Scored, TermColumns
from closer.reward.models import SCHEMA_VERSION
from closer.reward.targets import LoadedTargets, Target


def result_lines(scored: Scored, labels: list[str], targets: LoadedTargets) -> list[bytes]:
    """One line per result of `scored` (`columns.score_columns`), labelled by `labels`."""
    n = len(labels)
    if not n:
        return []
    parts: list[Iterable[bytes] | bytes] = [
        b'{"input":"', _unquoted(labels),
        b'","schema_version":' + orjson.dumps(SCHEMA_VERSION) + b',"reward":', _encoded(scored.reward),
        b',"gate":', _encoded(scored.gate), b',"penalty_total":', _encoded(scored.penalty_total), b',"terms":{']
    for number, target in enumerate(targets.targets.targets):
        parts.extend(_term_parts(scored.terms[target.name], target, first=number == 0))
    parts.append(b"}}")
    return list(map(b"".join, zip(*_merged(parts, n))))


def _term_parts(term: TermColumns, target: Target, first: bool) -> list[Iterable[bytes] | bytes]:
    return [(b"" if first else b",") + orjson.dumps(target.name) + b':{"metric":' + orjson.dumps(target.metric)
            + b',"value":', _encoded(term.value),
            b',"target":' + orjson.dumps(target.target) + b',"weight":' + orjson.dumps(target.weight) + b',"ratio":',
            _encoded(term.ratio), b',"loss":', _encoded(term.loss), b',"penalty":', _encoded(term.penalty),
            b',"met":', _encoded(term.met), b"}"]


def _encoded(column: list) -> list[bytes]:
    """Each value's JSON; `column` holds only numbers, booleans and None (never an empty list)."""
    return orjson.dumps(column)[1:-1].split(b",")


def _unquoted(labels: list[str]) -> list[bytes]:
    """Each label's JSON string without its quotes, from one `orjson.dumps` of them all split at
    each `","`: with no escaped quote in it every quote is a string's start or end. A label
    holding a quote (rare in a path) sends them to one `orjson.dumps` each."""
    encoded = orjson.dumps(labels)
    if b'\\"' in encoded:
        return [orjson.dumps(label)[1:-1] for label in labels]
    return encoded[2:-2].split(b'","')


def _merged(parts: list[Iterable[bytes] | bytes], n: int) -> list[Iterable[bytes]]:
    """Runs of fixed parts joined into one, each repeated for the `n` lines."""
    merged: list[Iterable[bytes]] = []
    fixed = b""
    for part in parts:
        if isinstance(part, bytes):
            fixed += part
            continue
        if fixed:
            merged.append(repeat(fixed, n))
            fixed = b""
        merged.append(part)
    if fixed:
        merged.append(repeat(fixed, n))
    return merged
