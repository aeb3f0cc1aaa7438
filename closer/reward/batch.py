"""Score many metric records in one call: a directory of metrics files or a JSONL of records.

Each input is one flat metrics object (a `*.json` file of the directory, in name order, or one
line of the JSONL). It is read by the fast reader (`fastmetrics`) and, when that declines, by the
full reader of `metrics_file`, which refuses it with an error naming the file (or `file:line`).
The rewards come from the vectorized scorer (`frame.score_frame`), bit-identical to
`compute_reward`; each output line holds the scalar result's `reward`, `gate`, `penalty_total`
and `terms` fields, plus `input`, the file or `file:line` it came from.

Without `keep_going` the first bad input stops the batch before anything is written. With it, a
bad input becomes a line `{"input": ..., "error": ...}` in its place, so no input is lost.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path

import orjson
import pandas as pd

from closer.errors import InputError
from closer.inputs import MAX_INPUT_BYTES
from closer.reward.compute import compute_reward
from closer.reward.errors import MetricsFileError
from closer.reward.fastmetrics import Chunk, fast_values
from closer.reward.frame import frame_from_columns, frame_from_records, score_frame
from closer.reward.lines import result_lines
from closer.reward.metrics_file import MetricValue, metrics_from_mapping, values_from_bytes
from closer.reward.models import RewardResult
from closer.reward.targets import LoadedTargets, Targets

CHUNK_RECORDS = 4096  # inputs decoded together (`fastmetrics.Chunk`)
READ_BLOCK = 1 << 16


@dataclass
class Parsed:
    """Every input, read: chunk k holds inputs k*CHUNK_RECORDS on; an input its chunk did not
    decode is in `loose` (its values) or `errors` (its error, with keep_going)."""
    labels: list[str] = field(default_factory=list)  # the file, or file:line, of each input
    chunks: list[Chunk] = field(default_factory=list)
    loose: dict[int, dict[str, MetricValue]] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)

    def good(self) -> list[int]:
        return [i for i in range(len(self.labels)) if i not in self.errors]

    def values(self, i: int) -> dict[str, MetricValue]:
        return self.loose[i] if i in self.loose else self.chunks[i // CHUNK_RECORDS].values(i % CHUNK_RECORDS)

    def frame(self, good: list[int], targets: Targets) -> pd.DataFrame:
        """The frame of the good inputs: column by column when every one of them was decoded by
        chunks of one key set (one flow's records), else from their values."""
        labels = [self.labels[i] for i in good]
        keys = {chunk.keys for chunk in self.chunks}
        if not self.loose and len(keys) == 1 and () not in keys:
            def column(key: str) -> list:
                return list(chain.from_iterable(chunk.column(key) for chunk in self.chunks))
            return frame_from_columns(next(iter(keys)), column, targets, labels)
        return frame_from_records([self.values(i) for i in good], targets, labels)


def read_inputs(path: Path) -> Iterator[tuple[str, bytes]]:
    """(label, bytes) of each input: the `*.json` files of a directory, else the JSONL's lines."""
    if path.is_dir():
        entries = sorted((e for e in os.scandir(path) if e.name.endswith(".json")), key=lambda e: e.name)
        if not entries:
            raise MetricsFileError(f"{path}: no *.json metrics files in this directory")
        for entry in entries:
            yield entry.path, _read(entry)
        return
    _read_check(path)
    line_no = 0
    with open(path, "rb") as handle:
        while lines := handle.readlines(1 << 22):
            labels = [f"{path}:{n}" for n in range(line_no + 1, line_no + len(lines) + 1)]
            line_no += len(lines)
            yield from zip(labels, lines)


def _read(entry: os.DirEntry) -> bytes:
    """`read_bytes`'s checks without its extra stat per file (the directory listing has the type)."""
    if not entry.is_file():
        raise MetricsFileError(f"{entry.path}: metrics file is not a regular file")
    try:
        raw = _read_up_to(entry.path, MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise MetricsFileError(f"{entry.path}: metrics file cannot be read: {exc.strerror}") from None
    if len(raw) > MAX_INPUT_BYTES:
        raise MetricsFileError(f"{entry.path}: metrics file is over the {MAX_INPUT_BYTES}-byte limit")
    return raw


def _read_up_to(path: str, limit: int) -> bytes:
    """The first `limit` bytes of the file at `path` by plain system calls, in blocks (a file
    object per file, or a buffer of `limit` bytes per read, costs more than a small file's read)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        parts = []
        size = 0
        while size < limit and (part := os.read(fd, min(limit - size, READ_BLOCK))):
            parts.append(part)
            size += len(part)
    finally:
        os.close(fd)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _read_check(path: Path) -> None:
    """The JSONL exists and is a regular file (its lines are read as a stream, not at once)."""
    if not path.exists():
        raise MetricsFileError(f"{path}: no such metrics JSONL file or directory")
    if not path.is_file():
        raise MetricsFileError(f"{path}: not a regular file")


def parse_inputs(path: Path, keep_going: bool = False) -> Parsed:
    parsed = Parsed()
    inputs = read_inputs(path)
    while batch := list(islice(inputs, CHUNK_RECORDS)):
        offset = len(parsed.labels)
        chunk = Chunk([raw for _, raw in batch])
        parsed.labels.extend(label for label, _ in batch)
        parsed.chunks.append(chunk)
        for i, row in enumerate(chunk.rows):
            if row is None:
                _read_alone(parsed, offset + i, batch[i][1], keep_going)
    return parsed


def _read_alone(parsed: Parsed, i: int, raw: bytes, keep_going: bool) -> None:
    label = parsed.labels[i]
    values = fast_values(raw)
    if values is None:
        try:
            values = values_from_bytes(raw, label)
        except MetricsFileError as exc:
            if not keep_going:
                raise
            parsed.errors[i] = str(exc)
            return
    parsed.loose[i] = values


def score_inputs(path: Path, targets: LoadedTargets, keep_going: bool = False) -> list[bytes]:
    """One JSON line (bytes, no newline) per input, in input order."""
    parsed = parse_inputs(path, keep_going)
    good = parsed.good()
    lines = dict(zip(good, _score(parsed, good, targets, keep_going)))
    return [lines[i] if i in lines else _error_line(label, parsed.errors[i]) for i, label in enumerate(parsed.labels)]


def _score(parsed: Parsed, good: list[int], targets: LoadedTargets, keep_going: bool) -> list[bytes]:
    if not good:
        return []
    try:
        scored = score_frame(parsed.frame(good, targets.targets), targets)
    except InputError:
        if not keep_going:
            raise
        return _score_one_by_one(parsed, good, targets)  # find which inputs the batch could not score
    return result_lines(scored, [parsed.labels[i] for i in good], targets)


def _score_one_by_one(parsed: Parsed, good: list[int], targets: LoadedTargets) -> list[bytes]:
    lines = []
    for i in good:
        label = parsed.labels[i]
        try:
            result = compute_reward(metrics_from_mapping(parsed.values(i), label), targets)
        except InputError as exc:
            lines.append(_error_line(label, f"{label}: {exc}"))
            continue
        lines.append(scalar_line(label, result))
    return lines


def scalar_line(label: str, result: RewardResult) -> bytes:
    """The batch line of a scalar result: the same fields, from `compute_reward`."""
    data = result.model_dump(mode="json", include={"schema_version", "reward", "gate", "penalty_total", "terms"})
    return orjson.dumps({"input": label, **data})


def exact(value: object) -> object:
    """`value` (a parsed line) with each float replaced by its 8 bytes: equal means bit-identical."""
    if isinstance(value, float):
        return struct.pack("<d", value)
    if isinstance(value, dict):
        return {k: exact(v) for k, v in value.items()}
    return value


def _error_line(label: str, error: str | None) -> bytes:
    return orjson.dumps({"input": label, "error": error})
