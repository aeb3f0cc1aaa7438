"""Score many metric records in one call: a directory of metrics files or a JSONL of records.

Each input is one flat metrics object (a `*.json` file of the directory, in name order, or one
line of the JSONL). It is read by the fast reader (`fastmetrics`) and, when that declines, by the
full reader of `metrics_file`, which refuses it with an error naming the file (or `file:line`).
The rewards come from the column scorer (`columns.score_columns`, no pandas), bit-identical to
`compute_reward`, which scores the inputs the column pass leaves undecided (and words their
errors); each output line holds the scalar result's `reward`, `gate`, `penalty_total` and
`terms` fields, plus `input`, the file or `file:line` it came from.

Without `keep_going` the first bad input stops the batch before anything is written. With it, a
bad input becomes a line `{"input": ..., "error": ...}` in its place, so no input is lost.
"""

from __future__ import annotations

import errno
import io
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from bisect import bisect_right
from itertools import chain
from operator import attrgetter
from pathlib import Path

import orjson

from closer import collector
from closer.errors import InputError
from closer.inputs import MAX_INPUT_BYTES
from closer.reward.columns import MISSING, needed_keys, score_columns
from closer.reward.compute import compute_reward
from closer.reward.errors import MetricsFileError
from closer.reward.fastmetrics import Chunk, fast_values
from closer.reward.lines import result_lines
from closer.reward.metrics_file import MetricValue, metrics_from_mapping, values_from_bytes
from closer.reward.models import RewardResult
from closer.reward.targets import LoadedTargets, Targets

CHUNK_RECORDS = 256  # files of a directory decoded, scored and dropped together (`fastmetrics.Chunk`);
# with JSONL_BLOCK, a chunk small enough (~0.5 MB) that its several passes stay in the L2 cache
JSONL_BLOCK = 1 << 19  # bytes of whole JSONL lines decoded, scored and dropped together
READ_BLOCK = 1 << 16
_NOATIME = getattr(os, "O_NOATIME", 0)  # Linux only


@dataclass
class Parsed:
    """Every input, read, in chunks (`starts[k]`: the index of chunk k's first input); an input
    its chunk did not decode is in `loose` (its values) or `errors` (its error, with keep_going)."""
    labels: list[str] = field(default_factory=list)  # the file, or file:line, of each input
    chunks: list[Chunk] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    loose: dict[int, dict[str, MetricValue]] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)

    def values(self, i: int) -> dict[str, MetricValue]:
        if i in self.loose:
            return self.loose[i]
        k = bisect_right(self.starts, i) - 1
        return self.chunks[k].values(i - self.starts[k])

    def columns(self, targets: Targets) -> tuple[dict[str, Sequence], dict[str, frozenset[type]]]:
        """The needed keys' columns over every input (MISSING where an input lacks the key or
        was not read), and the types known to be all a column holds (`Chunk.kinds`): straight
        from the chunks when all of them decoded every input with one key set (one flow's
        records), else input by input."""
        keys = {chunk.keys for chunk in self.chunks}
        decoded_all = all(None not in chunk.rows for chunk in self.chunks)
        if not self.loose and not self.errors and len(keys) == 1 and decoded_all:
            wanted = needed_keys(next(iter(keys)), targets)
            if len(self.chunks) == 1:
                chunk = self.chunks[0]
                return {key: chunk.column(key) for key in wanted}, chunk.kinds
            return {key: list(chain.from_iterable(chunk.column(key) for chunk in self.chunks))
                    for key in wanted}, {}
        rows = [{} if i in self.errors else self.values(i) for i in range(len(self.labels))]
        wanted = needed_keys(list(dict.fromkeys(chain.from_iterable(rows))), targets)
        return {key: [row.get(key, MISSING) for row in rows] for key in wanted}, {}


def read_chunks(path: Path) -> Iterator[tuple[list[str], list[bytes], bytes | None]]:
    """(labels, bytes of each input, their concatenation if at hand) of the `*.json` files of a
    directory, CHUNK_RECORDS at a time, else of the JSONL's lines, a block of lines at a time
    (each line with its newline, which JSON reads as white space, but the block's last)."""
    if path.is_dir():
        entries = [e for e in os.scandir(path) if e.name.endswith(".json")]
        if not entries:
            raise MetricsFileError(f"{path}: no *.json metrics files in this directory")
        entries.sort(key=attrgetter("name"))
        folder = _Folder(path)
        try:
            for start in range(0, len(entries), CHUNK_RECORDS):
                batch = entries[start:start + CHUNK_RECORDS]
                yield [e.path for e in batch], folder.read_all(batch), None
        finally:
            folder.close()
        return
    _read_check(path)
    line_no = 0
    prefix = f"{path}:"
    for block in _line_blocks(path):
        lines = io.BytesIO(block).readlines()  # a memchr per line: several times faster than split
        if not lines or block.endswith(b"\n"):
            lines.append(b"")  # the empty last line that split would give
        labels = list(map(prefix.__add__, map(str, range(line_no + 1, line_no + len(lines) + 1))))
        line_no += len(lines)
        yield labels, lines, block


def _line_blocks(path: Path) -> Iterator[bytes]:
    """The JSONL's bytes in blocks of whole lines (each without its last newline), read into one
    buffer kept for the whole file (a fresh block per read costs its page faults every time)."""
    buffer = bytearray(JSONL_BLOCK)
    held = 0  # the bytes of a line the last block did not end, at the buffer's start
    with open(path, "rb", buffering=0) as handle:
        while got := _read_into(handle, buffer, held):
            end = held + got
            cut = buffer.rfind(b"\n", 0, end)
            if cut < 0:  # no line ends in the buffer yet
                held = end
                if held == len(buffer):
                    buffer.extend(bytes(len(buffer)))
                continue
            with memoryview(buffer) as view:
                yield bytes(view[:cut])
                view[:end - cut - 1] = view[cut + 1:end]
            held = end - cut - 1
    if held:
        yield bytes(buffer[:held])


def _read_into(handle: io.FileIO, buffer: bytearray, start: int) -> int:
    """Read into `buffer` from `start` on; the bytes read (0 at the end of the file)."""
    with memoryview(buffer) as view:
        return handle.readinto(view[start:])


class _Folder:
    """An open directory, its files opened relative to it (openat: no walk of the whole path per
    file) and, where the process may (it owns them), without updating their access time
    (O_NOATIME: a file written just before its first read costs no inode update for it)."""

    def __init__(self, path: Path):
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self.flags = os.O_RDONLY | os.O_CLOEXEC | _NOATIME

    def read_all(self, entries: list[os.DirEntry]) -> list[bytes]:
        """The bytes of each entry's file, with `read_bytes`'s checks but without its extra stat
        per file (the directory listing has the type). One loop without a call per file: at
        100,000 small files the calls around the three system calls cost as much as a parse."""
        raws = []
        append, read, close, flags, fd_dir = raws.append, os.read, os.close, self.flags, self.fd
        for entry in entries:
            if not entry.is_file():
                raise MetricsFileError(f"{entry.path}: metrics file is not a regular file")
            try:
                try:
                    fd = os.open(entry.name, flags, dir_fd=fd_dir)
                except PermissionError as exc:
                    if exc.errno != errno.EPERM or not flags & _NOATIME:
                        raise
                    self.flags = flags = flags & ~_NOATIME  # another user's file: open them all as plain readers
                    fd = os.open(entry.name, flags, dir_fd=fd_dir)
                try:
                    # a read of a regular file returns less than asked only at its end: a short
                    # block is all of it (no further read to see end of file)
                    raw = read(fd, READ_BLOCK)
                    if len(raw) == READ_BLOCK:
                        raw = _read_rest(fd, raw, MAX_INPUT_BYTES + 1)
                finally:
                    close(fd)
            except OSError as exc:
                raise MetricsFileError(f"{entry.path}: metrics file cannot be read: {exc.strerror}") from None
            if len(raw) > MAX_INPUT_BYTES:
                raise MetricsFileError(f"{entry.path}: metrics file is over the {MAX_INPUT_BYTES}-byte limit")
            append(raw)
        return raws

    def close(self) -> None:
        os.close(self.fd)


def _read_rest(fd: int, first: bytes, limit: int) -> bytes:
    """`first` and what follows it in `fd`, up to `limit` bytes in all, in blocks."""
    parts = [first]
    size = len(first)
    while size < limit and (part := os.read(fd, min(limit - size, READ_BLOCK))):
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def _read_check(path: Path) -> None:
    """The JSONL exists and is a regular file (its lines are read as a stream, not at once)."""
    if not path.exists():
        raise MetricsFileError(f"{path}: no such metrics JSONL file or directory")
    if not path.is_file():
        raise MetricsFileError(f"{path}: not a regular file")


def parse_chunk(labels: list[str], raws: list[bytes], joined: bytes | None, keep_going: bool = False) -> Parsed:
    """One chunk of inputs (`read_chunks`), read. `joined` is given for a block of JSONL lines:
    a line read alone drops its newline first, so that an error's line and column are those of
    the line by itself."""
    parsed = Parsed(labels=labels)
    chunk = Chunk(raws, joined)
    parsed.starts.append(0)
    parsed.chunks.append(chunk)
    if None in chunk.rows:
        for i, row in enumerate(chunk.rows):
            if row is None:
                raw = raws[i]
                _read_alone(parsed, i, raw[:-1] if joined is not None and raw.endswith(b"\n") else raw, keep_going)
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
    """The output: one JSON line per input, in input order, each ending in a newline, in blocks
    (one per chunk of inputs; joined once here, the lines are freed at once and the output is never
    copied whole). A chunk is read, scored and dropped before the next is read: its values are
    still in the processor's caches."""
    blocks: list[bytes] = []
    with collector.paused():
        for labels, raws, joined in read_chunks(path):
            lines = _score_chunk(parse_chunk(labels, raws, joined, keep_going), targets, keep_going)
            lines.append(b"")  # the last line's newline
            blocks.append(b"\n".join(lines))
    return blocks


def _score_chunk(parsed: Parsed, targets: LoadedTargets, keep_going: bool) -> list[bytes]:
    columns, kinds = parsed.columns(targets.targets)
    scored = score_columns(columns, len(parsed.labels), targets, kinds)
    lines = result_lines(scored, parsed.labels, targets)
    for i in sorted(scored.undecided - parsed.errors.keys()):
        lines[i] = _scalar(parsed, i, targets, keep_going)
    for i, error in parsed.errors.items():
        lines[i] = _error_line(parsed.labels[i], error)
    return lines


def _scalar(parsed: Parsed, i: int, targets: LoadedTargets, keep_going: bool) -> bytes:
    """The scalar path's line for input i, or (keep_going) its error line."""
    label = parsed.labels[i]
    try:
        return scalar_line(label, compute_reward(metrics_from_mapping(parsed.values(i), label), targets))
    except InputError as exc:
        if not keep_going:
            raise
        message = str(exc)
        return _error_line(label, message if message.startswith(label) else f"{label}: {message}")


LINE_KEYS = ("schema_version", "reward", "gate", "penalty_total", "terms")  # the order closer.reward.lines writes


def scalar_line(label: str, result: RewardResult) -> bytes:
    """The batch line of a scalar result: the same fields, from `compute_reward`."""
    data = result.model_dump(mode="json", include=set(LINE_KEYS))
    return orjson.dumps({"input": label, **{key: data[key] for key in LINE_KEYS}})


def exact(value: object) -> object:
    """`value` (a parsed line) with each float replaced by its 8 bytes: equal means bit-identical."""
    if isinstance(value, float):
        return struct.pack("<d", value)
    if isinstance(value, dict):
        return {k: exact(v) for k, v in value.items()}
    return value


def _error_line(label: str, error: str | None) -> bytes:
    return orjson.dumps({"input": label, "error": error})
