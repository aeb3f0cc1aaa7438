"""The fast metrics reader (`fastmetrics.fast_values`) against the full reader (`metrics_file`):
on generated good and perturbed records it never accepts what the full reader refuses, takes
the plain records flows write, and gives the same values."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from closer.reward.errors import MetricsFileError
from closer.reward.fastmetrics import Chunk, fast_values
from closer.reward.metrics_file import values_from_bytes

from tests.fuzz_support import assert_fast_within_reference
from tests.test_reward_support import closer_values

PROPERTY = settings(max_examples=100, deadline=None, derandomize=True)

key = st.from_regex(r"[a-z]{1,6}__[a-z]{1,6}__[a-z_]{1,8}", fullmatch=True)
number = st.one_of(st.integers(-10**6, 10**6), st.floats(-1e6, 1e6), st.floats(1e-6, 1e6))
scalar = st.one_of(number, st.text(max_size=10), st.booleans(), st.none())
plain_value = st.one_of(scalar, st.lists(scalar, max_size=3))
odd_value = st.one_of(
    st.floats(), st.sampled_from([1e-31, -1e-31, 1e-30, 1e30, 1e31, 2e30, 5e-324, 0.0, -0.0]),
    st.integers(-2**70, 2**70), st.sampled_from([10**40, 10**41, -10**45]),
    st.text(), st.sampled_from(["a:b", "x\\u003ay", ":", "core_clock: 5.0"]),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.lists(st.lists(st.integers(), max_size=2), max_size=2), st.lists(st.floats(), max_size=2),
)
odd_key = st.one_of(key, st.text(max_size=12), st.sampled_from(["a__b:1", "finish", "run__flow__x", ""]))


def _reference(raw: bytes) -> dict | None:
    try:
        return values_from_bytes(raw, "record.json")
    except MetricsFileError:
        return None


def _same(mine: dict, theirs: dict) -> None:
    assert list(mine) == list(theirs)
    for k in mine:
        a, b = mine[k], theirs[k]
        assert type(a) is type(b) and (a == b or (a != a and b != b)), k
        if isinstance(a, float):
            assert math.copysign(1, a) == math.copysign(1, b), k


def _check(raw: bytes) -> None:
    assert_fast_within_reference(fast_values, _reference, _same, raw)


@PROPERTY
@given(values=st.dictionaries(key, plain_value, min_size=1, max_size=8), indent=st.sampled_from([None, 2]))
def test_plain_records_are_taken_with_the_full_readers_values(values: dict, indent: int | None):
    raw = json.dumps(values, indent=indent).encode()
    mine = fast_values(raw)
    theirs = _reference(raw)
    if theirs is not None and b"\\" not in raw and b"e-" not in raw:
        assert mine is not None, raw
    _check(raw)


@PROPERTY
@given(values=st.dictionaries(key, plain_value, min_size=0, max_size=6), name=odd_key, value=odd_value,
       text=st.sampled_from([None, "dup", "dup-spaced", "cut", "nan", "bom", "array", "colon"]))
def test_the_fast_reader_never_accepts_what_the_full_reader_refuses(values: dict, name: str, value: object,
                                                                     text: str | None):
    values = {**values, name: value}
    raw = json.dumps(values).encode()  # NaN/Infinity the way Python's json writes them
    first = json.dumps(next(iter(values))).encode()
    raw = {
        None: raw, "cut": raw[:-3],
        "dup": raw[:-1] + b"," + first + b":1}", "dup-spaced": raw[:-1] + b", " + first + b" : 1}",
        "nan": raw[:-1] + b', "x__y__z": NaN}', "bom": b"\xef\xbb\xbf" + raw, "array": b"[" + raw + b"]",
        "colon": raw[:-1] + b', "k__k__k": "a:b"}',
    }[text]
    _check(raw)


def test_the_clean_flow_record_is_taken_and_its_duplicate_key_is_not():
    raw = json.dumps(closer_values(), indent=2).encode()
    assert fast_values(raw) == _reference(raw)
    doubled = raw.replace(b'"closer__sim__cycles": 1838', b'"closer__sim__cycles": 1838, "closer__sim__cycles": 7')
    assert fast_values(doubled) is None and _reference(doubled) is None


def _perturbed(raw: bytes, first: bytes, text: str | None) -> bytes:
    return {None: raw, "dup": raw[:-1] + b"," + first + b":1}", "dup-string": raw[:-1] + b"," + first + b':"a:b"}',
            "cut": raw[:-3], "nan": raw[:-1] + b', "x__y__z": NaN}', "escape": raw[:-1] + b', "k__k__k": "\\u003a"}',
            "tiny": raw[:-1] + b', "k__k__k": 1e-31}'}[text]


def _typed_like_the_reference(raws: list[bytes]) -> Chunk:
    """The chunk of `raws`; every row it decodes typed has the full reader's values."""
    chunk = Chunk(raws)
    for i, raw in enumerate(raws):
        if chunk.rows[i] is not None:
            theirs = _reference(raw)
            assert theirs is not None, raw
            _same(chunk.values(i), theirs)
    return chunk


@PROPERTY
@given(base=st.dictionaries(key, plain_value, min_size=1, max_size=6),
       rows=st.lists(st.tuples(st.integers(0, 5), odd_value,
                               st.sampled_from([None, None, "dup", "dup-string", "cut", "nan", "escape", "tiny"])),
                     min_size=1, max_size=6))
def test_a_chunk_takes_only_records_the_full_reader_takes_with_its_values(base: dict, rows: list):
    """Records of one key set, some with a value replaced or the text perturbed: each record the
    chunk decodes is one the full reader accepts, with the same values; the others it leaves."""
    keys = list(base)
    first = json.dumps(keys[0]).encode()
    raws = [json.dumps(base).encode()]
    for at, value, text in rows:
        raws.append(_perturbed(json.dumps({**base, keys[at % len(keys)]: value}).encode(), first, text))
    _typed_like_the_reference(raws)


def test_a_chunk_of_flow_records_is_taken_whole_and_a_duplicate_key_anywhere_refuses_it():
    values = closer_values()
    raws = [json.dumps({**values, "closer__sim__cycles": n}).encode() for n in range(1500, 1520)]
    chunk = Chunk(raws)
    assert all(row is not None for row in chunk.rows)
    assert [chunk.values(i) for i in range(len(raws))] == [_reference(raw) for raw in raws]
    doubled = raws[:]
    doubled[7] = doubled[7][:-1] + b', "run__closer__design_revision": "sha256:0"}'
    assert all(row is None for row in Chunk(doubled).rows)


def _flow_chunk(changes: dict[int, dict]) -> tuple[list[bytes], Chunk]:
    """Twelve flow records (record i with `changes[i]` applied) read as one chunk."""
    values = closer_values()
    raws = [json.dumps({**values, "closer__sim__cycles": 1500 + i, **changes.get(i, {})}).encode()
            for i in range(12)]
    return raws, Chunk(raws)


def test_a_typed_chunk_checks_the_lower_bound_on_the_numbers_it_decoded():
    """A chunk whose columns decoded typed (no byte search for small exponents) still leaves a
    record with a non-zero magnitude below 1e-30 (a float, one in a list, one in a column whose
    first value was null) to the reference, which refuses it; 0, -0.0 and 1e-30 it takes."""
    area = "finish__design__instance__area"
    for bad in ({area: 1e-31}, {area: -5e-324}, {"finish__timing__setup__ws": 1e-300},
                {"constraints__clocks__details": ["core_clock: 5.0000", 1e-31]}):
        raws, chunk = _flow_chunk({5: bad})
        assert all(row is None for row in chunk.rows), bad
        assert _reference(raws[5]) is None and _reference(raws[4]) is not None
    raws, chunk = _flow_chunk({3: {area: 0.0}, 4: {area: -0.0}, 5: {area: 1e-30}, 6: {area: 7}})
    assert all(row is not None for row in chunk.rows)
    assert chunk.kinds[area] == {int, float} and chunk.kinds["closer__sim__cycles"] == {int}
    for i, raw in enumerate(raws):
        _same(chunk.values(i), _reference(raw))
    untyped = "x__y__z"
    raws, chunk = _flow_chunk({i: {untyped: None if i == 0 else 0.5} for i in range(12)})
    assert all(row is not None for row in chunk.rows) and untyped not in chunk.kinds
    raws, chunk = _flow_chunk({i: {untyped: None if i == 0 else 1e-40 if i == 9 else 0.5} for i in range(12)})
    assert all(row is None for row in chunk.rows) and _reference(raws[9]) is None


def test_a_chunk_whose_records_do_not_fit_the_first_ones_types_is_read_untyped():
    """A column typed by the first record (int) holding a float or a null further on: the
    chunk decodes every record with the general type, same values, and claims no column kinds."""
    raws, chunk = _flow_chunk({7: {"closer__sim__cycles": 1507.5}, 8: {"finish__timing__setup__ws": None}})
    assert all(row is not None for row in chunk.rows) and chunk.kinds == {}
    for i, raw in enumerate(raws):
        _same(chunk.values(i), _reference(raw))


small = st.one_of(st.floats(-1e6, 1e6), st.sampled_from([1e-31, -1e-31, 1e-30, 5e-324, 0.0, -0.0, 1e-29]))


@PROPERTY
@given(base=st.dictionaries(key, st.floats(1e-3, 1e6), min_size=1, max_size=6),
       rows=st.lists(st.tuples(st.integers(0, 5), small), min_size=1, max_size=8))
def test_a_typed_chunk_takes_only_records_the_full_reader_takes(base: dict, rows: list):
    """Float records with a float replaced (tiny ones among them): what a chunk decodes typed
    the full reader accepts with the same values; a chunk of in-range floats is taken typed."""
    keys = list(base)
    records = [base] + [{**base, keys[at % len(keys)]: value} for at, value in rows]
    raws = [json.dumps(r).encode() for r in records]
    chunk = _typed_like_the_reference(raws)
    if all(_reference(raw) is not None for raw in raws):
        assert all(row is not None for row in chunk.rows) and set(chunk.kinds) == set(keys)
