"""Append-only writer and tolerant reader: torn lines are reported with their line number, SIGKILL
at any moment leaves a trajectory that parses, and the schema files match the models."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from closer.paths import schema_path
from closer.trajectory.reader import TrajectoryDamaged, read_trajectory
from closer.trajectory.record import export_schemas, schema_models, schema_text
from closer.trajectory.writer import TrajectoryWriter
from tests.metered_helpers import make_record, write_trajectory

RECORDS = [make_record(i, reward=i / 10, elapsed_s=i * 7.5, layers=["rtl"] if i % 2 else []) for i in range(1, 6)]


def test_round_trip(tmp_path):
    path = write_trajectory(tmp_path / "t.jsonl", RECORDS)
    t = read_trajectory(path)
    assert t.records == RECORDS and t.bad_lines == []
    assert path.read_bytes().endswith(b"\n") and path.read_bytes().count(b"\n") == 5


def test_torn_last_line_is_reported_with_its_line_number(tmp_path):
    path = write_trajectory(tmp_path / "t.jsonl", RECORDS[:3])
    with open(path, "ab") as f:
        f.write(RECORDS[3].model_dump_json().encode()[:40])   # killed mid-write
    t = read_trajectory(path)
    assert [r.seq for r in t.records] == [1, 2, 3]
    assert len(t.bad_lines) == 1
    bad = t.bad_lines[0]
    assert bad.line_no == 4 and bad.last and bad.length_bytes == 40
    assert "t.jsonl:4: torn last line" in bad.describe(path)
    assert path.read_bytes().endswith(RECORDS[3].model_dump_json().encode()[:40])  # not repaired


def test_appending_after_a_torn_line_keeps_it_and_the_new_record(tmp_path):
    path = write_trajectory(tmp_path / "t.jsonl", RECORDS[:2])
    torn = RECORDS[2].model_dump_json().encode()[:55]
    with open(path, "ab") as f:
        f.write(torn)
    write_trajectory(path, [RECORDS[3]])
    t = read_trajectory(path)
    assert [r.seq for r in t.records] == [1, 2, 4]
    assert [(b.line_no, b.last) for b in t.bad_lines] == [(3, False)]
    assert path.read_bytes().splitlines()[2] == torn      # the torn bytes are kept as they were


def test_mid_file_garbage_fails_closed_naming_the_line(tmp_path):
    path = write_trajectory(tmp_path / "t.jsonl", RECORDS[:2])
    with open(path, "ab") as f:
        f.write(b'{"seq": "not a record"}\n\n')
    write_trajectory(path, [RECORDS[2]])
    with pytest.raises(TrajectoryDamaged, match=r"t\.jsonl:3: not a trajectory record"):
        read_trajectory(path)


def test_empty_lines_are_reported(tmp_path):
    path = write_trajectory(tmp_path / "t.jsonl", RECORDS[:2])
    with open(path, "ab") as f:
        f.write(b"\n\n")
    write_trajectory(path, [RECORDS[2]])
    t = read_trajectory(path)
    assert [r.seq for r in t.records] == [1, 2, 3]
    assert [(b.line_no, b.reason == "empty line") for b in t.bad_lines] == [(3, True), (4, True)]


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_a_kill_at_any_byte_leaves_a_parseable_prefix(tmp_path_factory, data):
    full = b"".join(r.model_dump_json().encode() + b"\n" for r in RECORDS)
    cut = data.draw(st.integers(min_value=0, max_value=len(full)))
    path = tmp_path_factory.mktemp("cut") / "t.jsonl"
    path.write_bytes(full[:cut])
    t = read_trajectory(path)
    complete = full[:cut].count(b"\n")
    only_newline_missing = full[cut:cut + 1] == b"\n" and not full[:cut].endswith(b"\n") and cut > 0
    if only_newline_missing:  # every byte of the record is there: it is whole
        assert t.records == RECORDS[:complete + 1] and t.bad_lines == []
    elif full[:cut].endswith(b"\n") or cut == 0:
        assert t.records == RECORDS[:complete] and t.bad_lines == []
    else:
        assert t.records == RECORDS[:complete]
        assert [(b.line_no, b.last) for b in t.bad_lines] == [(complete + 1, True)]


WORKLOAD = textwrap.dedent('''
    import sys
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from tests.metered_helpers import make_record
    from closer.trajectory.writer import TrajectoryWriter
    big = "x" * {size}
    with TrajectoryWriter(Path({path!r})) as w:
        seq = 0
        while True:
            seq += 1
            rec = make_record(seq, reward=seq / 1000, elapsed_s=seq)
            rec.metrics["padding"] = big
            w.append(rec)
''')


RECORD_PADDING = 8_000_000  # big records make a write take long enough to be caught in the middle


def _start_workload(path: Path) -> subprocess.Popen:
    root = str(Path(__file__).resolve().parent.parent)
    script = WORKLOAD.format(root=root, size=RECORD_PADDING, path=str(path))
    return subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE)


def _kill_while_writing(path: Path, proc: subprocess.Popen, timeout_s: float = 60) -> bool:
    """SIGKILL the writer as soon as the file is seen to end mid-record (past the first record)."""
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.001)
    fd = os.open(path, os.O_RDONLY)
    try:
        while time.monotonic() < deadline:
            size = os.fstat(fd).st_size
            if size > RECORD_PADDING + 1000 and os.pread(fd, 1, size - 1) != b"\n":
                os.kill(proc.pid, signal.SIGKILL)
                return True
            assert proc.poll() is None, proc.stderr.read().decode()
    finally:
        os.close(fd)
    os.kill(proc.pid, signal.SIGKILL)
    return False


def _check_killed(path: Path) -> int:
    t = read_trajectory(path)
    n = len(t.records)
    assert n >= 1 and [r.seq for r in t.records] == list(range(1, n + 1))
    assert len(t.bad_lines) <= 1 and all(b.last and b.line_no == n + 1 for b in t.bad_lines)
    # the run can go on: the next record is appended after the torn bytes, which stay reported
    write_trajectory(path, [make_record(n + 1, elapsed_s=n + 1)])
    again = read_trajectory(path)
    assert [r.seq for r in again.records] == list(range(1, n + 2))
    assert [b.line_no for b in again.bad_lines] == [b.line_no for b in t.bad_lines]
    return len(t.bad_lines)


def test_sigkill_caught_mid_write_leaves_a_torn_last_line_that_is_reported(tmp_path):
    torn = 0
    for attempt in range(4):  # a kill can lose the race with the end of the write; retry
        path = tmp_path / f"mid{attempt}.jsonl"
        proc = _start_workload(path)
        caught = _kill_while_writing(path, proc)
        proc.wait()
        torn += _check_killed(path) if caught else 0
        path.unlink()
        if torn:
            break
    assert torn >= 1, "no kill landed mid-write in 4 attempts"


def test_sigkill_at_random_moments_leaves_a_trajectory_that_parses(tmp_path):
    for attempt, delay in enumerate((0.07, 0.23)):
        path = tmp_path / f"rand{attempt}.jsonl"
        proc = _start_workload(path)
        deadline = time.monotonic() + 60
        while (not path.exists() or path.stat().st_size < 2 * RECORD_PADDING) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.005)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        _check_killed(path)
        path.unlink()


def test_schema_files_match_the_models_and_validate_records(tmp_path):
    for name, model in schema_models().items():
        assert schema_path(name).read_text() == schema_text(model), f"regenerate: closer trajectory schemas ({name})"
    schema = json.loads(schema_path("trajectory-record").read_text())
    for rec in RECORDS:
        jsonschema.validate(json.loads(rec.model_dump_json()), schema)
    bad = json.loads(RECORDS[0].model_dump_json()) | {"outcome": "great"}
    try:
        jsonschema.validate(bad, schema)
    except jsonschema.ValidationError:
        pass
    else:
        raise AssertionError("schema accepted an unknown outcome")


def test_writer_rejects_multiline(tmp_path):
    with TrajectoryWriter(tmp_path / "t.jsonl") as w:
        try:
            w.append_line("a\nb")
        except ValueError:
            return
    raise AssertionError("multi-line record accepted")


def test_export_schemas_is_stable():
    before = {p: p.read_text() for p in (schema_path(n) for n in schema_models())}
    export_schemas()
    assert {p: p.read_text() for p in before} == before
