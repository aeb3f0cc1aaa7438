"""Tolerant trajectory reader: whole lines become records; torn lines are reported, not repaired.

A line that does not parse as a `TrajectoryRecord` is never dropped silently and never
"fixed": it is listed in `bad_lines` with its 1-based line number. The usual case is one torn
last line left by a run killed mid-write (`BadLine.last`); a torn line that a resumed run
terminated with a newline shows up the same way, just not last.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from closer.errors import InputError
from closer.trajectory.record import TrajectoryRecord


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
    """Iterate the records of a trajectory file; after iterating, `bad_lines` lists the rest."""

    path: Path
    bad_lines: list[BadLine] = field(default_factory=list)
    lines: int = 0

    def __iter__(self) -> Iterator[TrajectoryRecord]:
        self.bad_lines = []
        pending: list[tuple[int, int, str]] = []
        try:
            handle = open(self.path, "rb")
        except FileNotFoundError as exc:
            raise InputError(f"trajectory {self.path} does not exist") from exc
        line_no = 0
        with handle:
            for line_no, raw in enumerate(handle, start=1):
                body = raw.rstrip(b"\n")
                if not body.strip():
                    pending.append((line_no, len(raw), "empty line"))
                    continue
                try:
                    record = TrajectoryRecord.model_validate_json(body)
                except ValidationError as exc:
                    pending.append((line_no, len(raw), _short_reason(exc)))
                    continue
                yield record
        self.lines = line_no
        self.bad_lines = [BadLine(n, size, why, last=(n == line_no)) for n, size, why in pending]


@dataclass(frozen=True)
class Trajectory:
    path: Path
    records: list[TrajectoryRecord]
    bad_lines: list[BadLine]


def read_trajectory(path: Path) -> Trajectory:
    reader = TrajectoryReader(path)
    records = list(reader)
    return Trajectory(path, records, reader.bad_lines)


def _short_reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    text = f"{where}: {first['msg']}" if where else first["msg"]
    return text[:200] + (f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else "")
