"""The fast trajectory decoder (msgspec `RecordView`) against the pydantic `TrajectoryRecord`:
on generated good and perturbed lines it never accepts what pydantic refuses, accepts what the
writer writes, gives the same values, and the reader accepts and refuses the same lines with
and without it."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from closer.budget import ToolClass
from closer.errors import InputError
from closer.trajectory.fastrecord import RecordView, decode_view
from closer.trajectory.reader import TrajectoryReader
from closer.trajectory.record import EditLayer, Outcome, TrajectoryRecord

from tests.fuzz_support import assert_fast_within_reference

PROPERTY = settings(max_examples=120, deadline=None, derandomize=True)
T0 = datetime(2026, 11, 30, tzinfo=timezone.utc)

finite = st.floats(allow_nan=False, allow_infinity=False)
unit = st.floats(min_value=0, max_value=1)
text = st.text(max_size=12)
metric_value = st.one_of(finite, st.integers(-2**70, 2**70), text, st.booleans(), st.none(),
                         st.lists(st.integers(), max_size=2), st.dictionaries(text, st.integers(), max_size=2))


@st.composite
def records(draw) -> TrajectoryRecord:
    start = draw(st.floats(min_value=0, max_value=1e7))
    duration = draw(st.floats(min_value=0, max_value=1e4))
    return TrajectoryRecord(
        seq=draw(st.integers(1, 2**40)), run_id=draw(text),
        started_at=T0 + timedelta(seconds=start), ended_at=T0 + timedelta(seconds=start + duration),
        elapsed_s=start + duration, tool=draw(st.sampled_from(list(ToolClass))),
        args=draw(st.lists(text, max_size=3)), surface_digest=draw(st.none() | text),
        changes={"modified": draw(st.lists(text, max_size=2))},
        layers=draw(st.lists(st.sampled_from(list(EditLayer)), max_size=2)),
        cost={"counted": draw(st.booleans()), "units": draw(st.floats(0, 1e6)),
              "tool_wall_s": draw(st.floats(0, 1e6)), "peak_rss_mb": draw(st.none() | finite)},
        outcome=draw(st.sampled_from(list(Outcome))), message=draw(text),
        exit_codes=draw(st.lists(st.integers(-255, 255), max_size=2)),
        metrics=draw(st.dictionaries(text, metric_value, max_size=3)),
        reward=draw(st.none() | unit), feasible=draw(st.none() | st.booleans()),
        partial_reward=draw(st.none() | unit), best_reward=draw(st.none() | unit),
        remaining=draw(st.dictionaries(text, st.none() | finite, max_size=2)),
        results_dir=draw(st.none() | text),
    )


FIELDS = sorted(TrajectoryRecord.model_fields) + ["cost.units", "cost.counted", "cost.peak_rss_mb",
                                                  "changes.added", "metrics.k", "remaining.k", "extra"]
odd_value = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([2**64, -2**63 - 1, 10**30]),
    st.floats(), st.sampled_from([1.0, -0.0, 1e308, 5e-324, 1.0000001]), text,
    st.sampled_from(["1", "1.0", " 1", "sim", "SIM", "ok", "rtl", "true", "2026-11-30T00:00:00",
                     "2026-11-30T00:00:00Z", "2026-11-30 00:00:00+00:00", "2026-11-30T00:00:00.1234567Z",
                     "2026-11-30T23:59:60Z", "2026-11-30", "1764460800", "2026-11-30T00:00:00+25:00"]),
    st.sampled_from([1764460800, 1764460800.5]),
    st.lists(st.one_of(st.integers(), text, st.none(), st.floats()), max_size=2),
    st.dictionaries(text, st.integers(), max_size=2),
)


def _perturb(data: dict, dotted: str, value: object, delete: bool) -> dict:
    node = data
    *parents, leaf = dotted.split(".")
    for key in parents:
        node = node.setdefault(key, {}) if isinstance(node.get(key), dict) or key not in node else node[key]
        if not isinstance(node, dict):
            return data
    if delete:
        node.pop(leaf, None)
    else:
        node[leaf] = value
    return data


def _pydantic(line: bytes) -> TrajectoryRecord | None:
    try:
        return TrajectoryRecord.model_validate_json(line)
    except ValidationError:
        return None


def _value(item: object) -> object:
    if isinstance(item, RecordView.__mro__[1]):  # a nested view struct
        return {name: _value(getattr(item, name)) for name in item.__struct_fields__}
    if hasattr(type(item), "model_fields"):
        return {name: _value(getattr(item, name)) for name in type(item).model_fields}
    if isinstance(item, float) and math.isnan(item):
        return "nan"
    return item


def _assert_same(view: RecordView, record: TrajectoryRecord) -> None:
    assert set(view.__struct_fields__) == set(TrajectoryRecord.model_fields)
    for name in TrajectoryRecord.model_fields:
        mine, theirs = _value(getattr(view, name)), _value(getattr(record, name))
        assert mine == theirs and type(mine) is type(theirs), name


@PROPERTY
@given(record=records())
def test_the_fast_decoder_takes_what_the_writer_writes_with_the_same_values(record: TrajectoryRecord):
    line = record.model_dump_json().encode()
    view = decode_view(line)
    flat = all(not isinstance(v, (list, dict)) and not (isinstance(v, int) and abs(v) >= 2**63)
               for v in record.metrics.values())
    if flat:  # nested metric values and huge ints are left to pydantic by design
        assert view is not None
    if view is not None:
        _assert_same(view, record)


@PROPERTY
@given(record=records(), field=st.sampled_from(FIELDS), value=odd_value, delete=st.booleans())
def test_the_fast_decoder_never_accepts_what_pydantic_refuses(record: TrajectoryRecord, field: str,
                                                              value: object, delete: bool):
    data = _perturb(json.loads(record.model_dump_json()), field, value, delete)
    line = json.dumps(data).encode()  # NaN/Infinity written the way Python's json writes them
    assert_fast_within_reference(decode_view, _pydantic, _assert_same, line)


@PROPERTY
@given(record=records(), cut=st.integers(0, 2000), junk=st.binary(max_size=8))
def test_the_fast_decoder_never_accepts_damaged_bytes_pydantic_refuses(record: TrajectoryRecord, cut: int,
                                                                       junk: bytes):
    line = record.model_dump_json().encode()
    for damaged in (line[:cut], line[:cut] + junk + line[cut:], line.replace(b'"seq":', b'"seq":1,"seq":', 1)):
        assert_fast_within_reference(decode_view, _pydantic, _assert_same, damaged)


def _read(path: Path, views: bool) -> tuple[str, list]:
    reader = TrajectoryReader(path, views=views)
    try:
        records = [_value(r) for r in reader]
    except InputError as exc:
        return f"refused: {exc}", []
    return "accepted", records + [b.describe(path) for b in reader.bad_lines]


@PROPERTY
@given(first=records(), field=st.sampled_from(FIELDS), value=odd_value, delete=st.booleans(),
       cut=st.none() | st.integers(0, 900))
def test_the_reader_accepts_and_refuses_the_same_lines_with_and_without_the_fast_decoder(
        tmp_path_factory: pytest.TempPathFactory, first: TrajectoryRecord, field: str, value: object,
        delete: bool, cut: int | None):
    second = first.model_copy(update={"seq": first.seq + 1})
    good = [json.loads(r.model_dump_json()) for r in (first, second)]
    bad = json.dumps(_perturb(json.loads(json.dumps(good[1])), field, value, delete)).encode()
    lines = [json.dumps(good[0]).encode(), bad if cut is None else bad[:cut]]
    path = tmp_path_factory.mktemp("fast") / "trajectory.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert _read(path, views=True) == _read(path, views=False)


@pytest.mark.parametrize("view, model", [("RecordView", "TrajectoryRecord"), ("CallCostView", "CallCost"),
                                         ("FileChangesView", "FileChanges")])
def test_each_view_has_exactly_the_fields_of_its_model(view: str, model: str):
    """A field added to the pydantic model must be added to its view (else every record falls
    back to pydantic, silently slow)."""
    from closer.trajectory import fastrecord, record

    assert set(getattr(fastrecord, view).__struct_fields__) == set(getattr(record, model).model_fields)
