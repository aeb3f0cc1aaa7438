"""Append-only JSON Lines writer: one record per line, each flushed and fsync'd before return.

A record is written with a single `os.write` loop on an O_APPEND descriptor, so a process killed
at any moment leaves whole lines followed by at most one torn last line (which the reader
reports). If the file already ends in a torn line, a newline is written first so the torn bytes
stay as they were, on their own line, instead of being glued to the next record.
"""

from __future__ import annotations

import os
from pathlib import Path

from typing import TYPE_CHECKING

from closer.trajectory.fastrecord import record_json

if TYPE_CHECKING:
    from closer.trajectory.fastrecord import RecordView
    from closer.trajectory.record import TrajectoryRecord


class TrajectoryWriter:
    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        created = not path.exists()
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if created:
            _fsync_dir(path.parent)
        elif _ends_torn(path):
            self._write_all(b"\n")

    def append(self, record: TrajectoryRecord | RecordView) -> None:
        self.append_line(record_json(record))

    def append_line(self, line: str) -> None:
        if "\n" in line:
            raise ValueError("a trajectory record must serialize to one line")
        self._write_all(line.encode() + b"\n")

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _ends_torn(path: Path) -> bool:
    size = path.stat().st_size
    if size == 0:
        return False
    with open(path, "rb") as f:
        f.seek(size - 1)
        return f.read(1) != b"\n"


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
