"""Trajectory reader: whole lines become records; torn lines are reported, not repaired; damage
fails closed.

A torn line (the start of a record cut off by a kill mid-write: an incomplete JSON object that
begins like a record) is never dropped silently and never "fixed": it is listed in `bad_lines`
with its 1-based line number. The usual case is one torn last line left by a run killed
mid-write (`BadLine.last`); a torn line that a resumed run terminated with a newline shows up the
same way, just not last. Anything else is damage and raises `TrajectoryDamaged` naming the file,
the line and the field: a complete line that is not a valid record, bytes that are no record's
start, and records out of order: `seq` must run 1, 2, 3, ... (a torn line may stand for one
missing number), every record has the run's `run_id`, and `elapsed_s`/`ended_at` never go back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from typing import TYPE_CHECKING

from closer.errors import InputError
from closer.trajectory.fastrecord import VIEW_DECODER, VIEW_REFUSALS, RecordView

if TYPE_CHECKING:  # the model validates the lines the fast decoder leaves (imported then: closer.inputs says why)
    from pydantic import ValidationError

    from closer.trajectory.record import TrajectoryRecord

# Every record line starts so (model_dump_json writes schema_version first).
RECORD_START = b'{"schema_version":'
READ_BUFFER_BYTES = 1 << 20  # a million lines read through the default 8 KiB buffer cost twice the CPU


class TrajectoryDamaged(InputError):
    """The trajectory holds bytes that are neither records nor a torn record, or records out of
    order: it cannot be trusted as the ledger."""


@dataclass(frozen=True)
class BadLine:
    line_no: int
    length_bytes: int
    reason: str
    last: bool

    def describe(self, path: Path) -> str:
        where = "torn last line" if self.last else "unparseable line"
        return f"{path}:{self.line_no}: {where} ({self.length_bytes} bytes) ignored: {self.reason}"


@dataclass
class TrajectoryReader:
    """Iterate the records of a trajectory file; after iterating, `bad_lines` lists the rest.

    `views`: yield the fast decoder's `RecordView` for each line it takes (read-only callers such
    as the summarizer; the same attributes), pydantic's `TrajectoryRecord` for the others. Which
    lines are accepted does not depend on it."""

    path: Path
    run_id: str | None = None  # the run's id (run.json); None: the first record's
    bad_lines: list[BadLine] = field(default_factory=list)
    lines: int = 0
    views: bool = False

    def __iter__(self) -> Iterator[TrajectoryRecord | RecordView]:
        self.bad_lines = []
        pending: list[tuple[int, int, str]] = []
        order = _Order(self.path, self.run_id)
        decode = VIEW_DECODER.decode if self.views else _refuse_all
        line_no = 0
        with self._open() as handle:
            for line_no, raw in enumerate(handle, start=1):
                try:  # decode_view inline: a call less per line
                    record = decode(raw)  # JSON allows the trailing newline
                except VIEW_REFUSALS:
                    record = None
                if record is None:
                    record = self._validated(line_no, raw, pending, order)
                    if record is None:
                        continue
                last = order.last  # the common case inline: the next seq of the run, time forward
                if (last is not None and record.seq == last.seq + 1 and record.run_id == last.run_id
                        and record.elapsed_s >= last.elapsed_s and record.ended_at >= last.ended_at):
                    order.last, order.slack = record, 0
                else:
                    order.check(line_no, record)
                yield record
        self.lines = line_no
        self.bad_lines = [BadLine(n, size, why, last=(n == line_no)) for n, size, why in pending]

    def _validated(self, line_no: int, raw: bytes, pending: list[tuple[int, int, str]],
                   order: _Order) -> TrajectoryRecord | None:
        """The line's record by pydantic, or None with the line added to `pending` (empty or torn)."""
        from pydantic import ValidationError

        from closer.trajectory.record import TrajectoryRecord

        body = raw.rstrip(b"\n")
        if not body.strip():
            pending.append((line_no, len(raw), "empty line"))
            return None
        try:
            return TrajectoryRecord.model_validate_json(body)
        except ValidationError as exc:
            self._check_torn(line_no, body, exc)
            pending.append((line_no, len(raw), _short_reason(exc)))
            order.torn()
            return None

    def _open(self):
        if self.path.is_dir():
            raise InputError(f"{self.path}: trajectory is a directory, expected a file")
        try:
            return open(self.path, "rb", buffering=READ_BUFFER_BYTES)
        except FileNotFoundError as exc:
            raise InputError(f"trajectory {self.path} does not exist") from exc
        except OSError as exc:
            raise InputError(f"{self.path}: trajectory cannot be read: {exc.strerror}") from None

    def _check_torn(self, line_no: int, body: bytes, exc: ValidationError) -> None:
        """A line that fails validation is torn only if it is an incomplete record's start."""
        where = f"{self.path}:{line_no}"
        if not (body.startswith(RECORD_START) or RECORD_START.startswith(body)):
            raise TrajectoryDamaged(f"{where}: not a trajectory record (no record starts with these "
                                    f"{len(body)} bytes); the trajectory is damaged")
        try:
            json.loads(body)
        except ValueError:
            return  # cut off mid-record: torn
        raise TrajectoryDamaged(f"{where}: invalid record: {_short_reason(exc)}")


@dataclass
class _Order:
    """The order rules between records (seq, run_id, elapsed_s, ended_at)."""

    path: Path
    run_id: str | None
    last: TrajectoryRecord | RecordView | None = None
    slack: int = 0  # torn lines since the last record: seq numbers they may stand for

    def torn(self) -> None:
        self.slack += 1

    def check(self, line_no: int, rec: TrajectoryRecord | RecordView) -> None:
        last = self.last
        if last is None:
            in_order = 1 <= rec.seq <= 1 + self.slack and (self.run_id is None or rec.run_id == self.run_id)
        else:
            in_order = (last.seq < rec.seq <= last.seq + 1 + self.slack and rec.run_id == last.run_id
                        and rec.elapsed_s >= last.elapsed_s and rec.ended_at >= last.ended_at)
        if not in_order:  # the common case stays cheap; find and word the broken rule
            self._refuse(f"{self.path}:{line_no}", rec)
        self.last, self.slack = rec, 0

    def _refuse(self, where: str, rec: TrajectoryRecord | RecordView) -> None:
        expected = 1 if self.last is None else self.last.seq + 1
        if not expected <= rec.seq <= expected + self.slack:
            raise TrajectoryDamaged(f"{where}: key seq: {rec.seq} where {expected} was expected "
                                    "(duplicated, reordered or missing records)")
        run_id = self.run_id if self.run_id is not None else (self.last.run_id if self.last else rec.run_id)
        if rec.run_id != run_id:
            raise TrajectoryDamaged(f"{where}: key run_id: {rec.run_id!r} is not this run's {run_id!r}")
        if rec.elapsed_s < self.last.elapsed_s:
            raise TrajectoryDamaged(f"{where}: key elapsed_s: {rec.elapsed_s} is before the "
                                    f"previous record's {self.last.elapsed_s} (time ran backwards)")
        raise TrajectoryDamaged(f"{where}: key ended_at: {rec.ended_at.isoformat()} is before "
                                f"the previous record's (time ran backwards)")


@dataclass(frozen=True)
class Trajectory:
    path: Path
    records: list[TrajectoryRecord]
    bad_lines: list[BadLine]


def read_trajectory(path: Path, run_id: str | None = None) -> Trajectory:
    reader = TrajectoryReader(path, run_id)
    records = list(reader)
    return Trajectory(path, records, reader.bad_lines)


def _refuse_all(raw: bytes) -> None:
    return None


def _short_reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    text = f"{where}: {first['msg']}" if where else first["msg"]
    return text[:200] + (f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else "")
