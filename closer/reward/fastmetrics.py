"""A fast reader for flat metric records (msgspec), tried before `metrics_file`'s full reader.

`fast_values(raw)` returns the flat metrics of `raw` when it is a flat object of finite, in-range
numbers, strings, booleans, nulls and flat lists of those, under keys already spelled with `__`;
None otherwise, and then `metrics_file` (the reference) decides and words the error. What it
accepts, the reference accepts with the same values (tests/test_reward_fastmetrics.py checks
this on generated good and perturbed records). The checks run in C (msgspec, bytes methods, one
regex), not per value in Python:
- type and upper bound by the msgspec type; the lower bound of a non-zero magnitude (1e-30) by
  leaving any number with an exponent of -20 or below, or nine zeros after its point, to the
  reference (every other non-zero JSON number is at least 1e-28); a `Chunk` whose columns
  decoded typed checks the decoded numbers instead (`min` over each float column, in C), which
  costs far less than those two searches of every byte;
- two equal keys (msgspec keeps the last; the reference refuses): with no backslash in the bytes
  (so no escaped colon), the bytes hold as many colons as the compact re-encoding exactly when
  no pair was dropped (keys hold none; a string's colons are the same in both).
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from itertools import chain, repeat
from typing import Annotated

import msgspec

from closer.metrics import KNOWN_KEYS, MetricKind, parse_clock_details
from closer.reward.metrics_file import MAX_MAGNITUDE, MIN_MAGNITUDE, MetricValue

# an int within 64 bits is below MAX_MAGNITUDE and MAX_INT_DIGITS; a longer one goes to the reference
_Float = Annotated[float, msgspec.Meta(ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)]
_Int = Annotated[int, msgspec.Meta(ge=-2**63, le=2**63 - 1)]
_Scalar = _Float | _Int | str | bool | None
_Value = _Scalar | list[_Scalar]
# A column's type in a chunk's typed decoder, from its first record's value (bool is not an int
# here); the types the column may then hold, for the column scorer (a superset is fine for it).
_TYPED: dict[type, tuple[object, frozenset[type]]] = {
    int: (_Int, frozenset((int,))), float: (_Float | _Int, frozenset((int, float))),
    str: (str, frozenset((str,))), list: (list[_Scalar], frozenset((list,)))}
_DECODER = msgspec.json.Decoder(dict[str, _Value])
_ENCODER = msgspec.json.Encoder()
# e-20 and below; one pattern per letter: a literal start is searched far faster than a class
_TINY_LOWER, _TINY_UPPER = (re.compile(marker + rb"-0*(?:[2-9][0-9]|[1-9][0-9]{2})") for marker in (b"e", b"E"))
_CLOCK_KEYS = frozenset(k for k, known in KNOWN_KEYS.items() if known.kind is MetricKind.CLOCKS)


def fast_values(raw: bytes) -> dict[str, MetricValue] | None:
    if b"\\" in raw or b".000000000" in raw or _tiny_exponent(raw):
        return None
    try:
        data = _DECODER.decode(raw)
    except (msgspec.MsgspecError, ValueError):  # ValueError: invalid UTF-8 inside a string
        return None
    if not data or not _plain_keys(tuple(data)) or raw.count(b":") != _ENCODER.encode(data).count(b":"):
        return None
    for key in _CLOCK_KEYS.intersection(data):
        details = data[key]
        if type(details) is not list or not _clock_details_ok(tuple(details)):
            return None
    return data


def _tiny_exponent(raw: bytes) -> bool:
    """An exponent of -20 or below anywhere (also inside a string: then the reference decides)."""
    if _TINY_LOWER.search(raw) is not None:
        return True
    # metric keys are lower case: most inputs hold no 'E', and memchr finds that faster than a search
    return b"E" in raw and _TINY_UPPER.search(raw) is not None


@lru_cache(maxsize=256)
def _plain_keys(keys: tuple[str, ...]) -> bool:
    """No key of the set is spelled with ':' (which the full reader normalizes and cross-checks)."""
    return not any(":" in key for key in keys)


@lru_cache(maxsize=1024)
def _clock_details_ok(details: tuple[object, ...]) -> bool:
    try:
        parse_clock_details(list(details))
    except ValueError:
        return False
    return True


class Chunk:
    """Many records of one key set, decoded straight into msgspec Structs (no key strings or dicts
    built per record); columns come out by attribute. `rows[i]` is None where record i is not
    of that key set or not plain: read it alone (`fast_values`, then the reference).

    The checks of `fast_values` run once over the chunk's bytes; the duplicate-key check by
    counting colons: a record of the key set holds at least as many pairs as the set has keys,
    so when the raw colons equal keys x records + the colons of the strings read, no record has
    a pair more.

    The records are decoded first with each column typed as the first record's value (a number
    column as int or float, a string column as str, ...), so that `kinds` knows, without a pass
    over the column, which types it holds; when some record does not fit, all are decoded with
    the fast reader's type for every column."""

    def __init__(self, raws: list[bytes], joined: bytes | None = None):
        """`joined`: the records' bytes in one, if at hand (any separator without a colon)."""
        self.keys: tuple[str, ...] = ()
        self.rows: list[msgspec.Struct | None] = [None] * len(raws)
        self.decoded: list[msgspec.Struct] = []
        self._columns: dict[str, tuple] | None = None
        self.kinds: dict[str, frozenset[type]] = {}  # the types each typed column may hold
        if not raws or _holds(b"\\", raws, joined):
            return
        first = _dict_or_none(raws[0])
        if not first or not _plain_keys(tuple(first)):
            return
        keys = tuple(first)
        types = tuple(map(type, first.values()))
        try:
            rows: list[msgspec.Struct | None] = list(map(_struct_decoder(keys, types).decode, raws))
            kinds = {key: _TYPED[kind][1] for key, kind in zip(keys, types) if kind in _TYPED}
            typed = True
        except (msgspec.MsgspecError, ValueError):  # some record has other types, or keys
            whole = b"".join(raws) if joined is None else joined
            if b".000000000" in whole or _tiny_exponent(whole):
                return
            kinds, typed = {}, False
            decode = _struct_decoder(keys).decode
            try:
                rows = list(map(decode, raws))
            except (msgspec.MsgspecError, ValueError):  # some record is not of the key set: one by one
                rows = [_struct_or_none(decode, raw) for raw in raws]
        raw_colons = joined.count(b":") if joined is not None else sum(map(bytes.count, raws, repeat(b":")))
        if None in rows:
            raw_colons -= sum(raw.count(b":") for raw, row in zip(raws, rows) if row is None)
        self.keys, self.rows, self.decoded, self.kinds = keys, rows, [row for row in rows if row is not None], kinds
        if (typed and self._tiny()) or not self._clocks_ok() or not self._no_duplicate(raw_colons):
            self._decline()

    def _decline(self) -> None:
        """No record decoded here: each is read alone."""
        self.keys, self.rows, self.decoded, self._columns, self.kinds = (), [None] * len(self.rows), [], None, {}

    def column(self, key: str) -> tuple:
        """The values of `key` of the decoded rows, in order."""
        if self._columns is None:  # every column at once: one tuple per row, transposed in C
            rows = map(msgspec.structs.astuple, self.decoded)
            self._columns = dict(zip(self.keys, zip(*rows))) if self.decoded else dict.fromkeys(self.keys, ())
        return self._columns[key]

    def values(self, i: int) -> dict[str, MetricValue]:
        return dict(zip(self.keys, msgspec.structs.astuple(self.rows[i])))

    def _tiny(self) -> bool:
        """Some non-zero number of the (typed) decoded rows is below MIN_MAGNITUDE in magnitude:
        the reference refuses it (an int never is; abs(-0.0) is 0.0, which filter drops)."""
        for key in self.keys:
            kinds = self.kinds.get(key)
            if kinds is not None and float not in kinds and list not in kinds:
                continue  # int or str
            column = self.column(key)
            if kinds is not None and list not in kinds:  # int or float
                # most columns are all of one sign, far from 0: one comparison pass without abs()
                if min(column) >= MIN_MAGNITUDE or max(column) <= -MIN_MAGNITUDE:
                    continue
                if min(map(abs, column)) < MIN_MAGNITUDE and \
                        min(filter(None, map(abs, column)), default=MIN_MAGNITUDE) < MIN_MAGNITUDE:
                    return True
            elif kinds is not None:  # lists (of the clock's strings, mostly: one pass over their types)
                items = tuple(chain.from_iterable(column))
                if float in set(map(type, items)) and any(map(_tiny_value, items)):
                    return True
            elif any(map(_tiny_value, column)):  # a column of the untyped type
                return True
        return False

    def _clocks_ok(self) -> bool:
        for key in _CLOCK_KEYS.intersection(self.keys):
            column = self.column(key)
            if self.kinds.get(key) != {list} and any(type(details) is not list for details in column):
                return False
            if not all(map(_clock_details_ok, set(map(tuple, column)))):
                return False
        return True

    def _no_duplicate(self, raw_colons: int) -> bool:
        """`raw_colons`: the colons of the decoded records' bytes."""
        if raw_colons == len(self.decoded) * len(self.keys) + self._string_colons():
            return True
        return raw_colons == _ENCODER.encode(self.decoded).count(b":")

    def _string_colons(self) -> int:
        """Colons inside the string values of the columns whose first value is a string or a list
        (never more than the records hold; fewer only sends the check to re-encoding)."""
        colons = 0
        for key, first in zip(self.keys, msgspec.structs.astuple(self.decoded[0])):
            if type(first) not in (str, list):
                continue
            column = self.column(key)
            try:
                if type(first) is str:  # one join and one count in C; a non-string raises
                    colons += "".join(column).count(":")
                    continue
                counts = Counter(map(tuple, column))
            except TypeError:  # a list among strings, or a string among lists
                return -1
            colons += sum(times * _colons(value) for value, times in counts.items())
        return colons


def _holds(needle: bytes, raws: list[bytes], joined: bytes | None) -> bool:
    """Some record holds `needle`: one search of `joined`, else one per record (joining the
    records of a directory to search them once costs a copy of all their bytes)."""
    if joined is not None:
        return needle in joined
    return any(map(bytes.__contains__, raws, repeat(needle)))


def _tiny_value(value: object) -> bool:
    if type(value) is float:
        return value != 0 and abs(value) < MIN_MAGNITUDE
    return type(value) is list and any(map(_tiny_value, value))


def _colons(value: object) -> int:
    if type(value) is str:
        return value.count(":")
    if type(value) is tuple:
        return sum(item.count(":") for item in value if type(item) is str)
    return 0


def _field(i: int) -> str:
    return f"f{i}"


@lru_cache(maxsize=16)
def _struct_decoder(keys: tuple[str, ...], types: tuple[type, ...] | None = None) -> msgspec.json.Decoder:
    """A decoder of exactly the object with `keys` (any order), each value of the fast reader's
    type or, given `types` (a record's value types, one per key), of the `_TYPED` type of its own."""
    fields = [(_field(i), _Value if types is None or types[i] not in _TYPED else _TYPED[types[i]][0])
              for i in range(len(keys))]
    struct = msgspec.defstruct("MetricsRow", fields, rename=dict(zip(map(_field, range(len(keys))), keys)),
                               forbid_unknown_fields=True, gc=False)  # no cycles: not GC-tracked
    return msgspec.json.Decoder(struct)


def _struct_or_none(decode, raw: bytes) -> msgspec.Struct | None:
    try:
        return decode(raw)
    except (msgspec.MsgspecError, ValueError):
        return None


def _dict_or_none(raw: bytes) -> dict | None:
    try:
        return _DECODER.decode(raw)
    except (msgspec.MsgspecError, ValueError):
        return None
