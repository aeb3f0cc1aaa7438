"""Reading metrics: an ORFS `metadata.json`, an ORFS per-stage log directory, or a Closer metrics
file (the same flat key scheme plus `closer__*` keys, see closer/metrics.py).

Every key is normalized to the `__` qualifier spelling. Every value is checked once here: numbers
must be finite (NaN/Infinity are refused wherever they appear, naming the key) and in range (0 or
a magnitude in [MIN_MAGNITUDE, MAX_MAGNITUDE]; an integer of more than MAX_INT_DIGITS digits is
refused while parsing), objects may not nest (except ORFS's `--hier` form, a bare stage name
holding flat `rest: value` pairs, and `run__` provenance keys, which are flattened back). `Metrics.origin` remembers the file
each key came from, so later errors name the file and the key.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from collections.abc import Iterable, Mapping
from typing import Union

from closer.errors import InputError
from closer.inputs import MAX_INT_DIGITS, read_bytes
from closer.metrics import KNOWN_KEYS, MetricKind, normalize_key, parse_clock_details
from closer.reward.errors import MetricsFileError

MetricValue = Union[int, float, str, bool, None, list]

# ORFS per-stage files: 1_synth.json, 2_1_floorplan.json, ... 6_report.json
STAGE_FILE = re.compile(r"^([1-6])_.*\.json$")
# ORFS --hier: the outer key is a bare stage name such as "finish" or "detailedroute"
HIER_STAGE = re.compile(r"^[a-z][a-z0-9_]*$")

# Accepted magnitude of a non-zero metric number: far outside any physical value in Closer's
# units (um^2, W, ns, counts), and log(value / target) stays finite for any in-range pair.
MIN_MAGNITUDE = 1e-30
MAX_MAGNITUDE = 1e30


class SourceKind(StrEnum):
    ORFS_METADATA = "orfs_metadata"
    ORFS_LOG_DIR = "orfs_log_dir"
    CLOSER_METRICS = "closer_metrics"
    MAPPING = "mapping"  # built in memory by a caller


@dataclass(frozen=True)
class MetricsSource:
    path: str
    kind: SourceKind
    sha256: str | None = None  # of the file; for a log dir, of the stage files in merge order
    files: tuple[str, ...] = ()  # stage files merged, in order (log dir only)


@dataclass(frozen=True)
class Metrics:
    """Flat metrics with normalized keys, and where each key came from."""

    values: Mapping[str, MetricValue]
    origin: Mapping[str, str] = field(default_factory=dict)  # key -> file
    sources: tuple[MetricsSource, ...] = ()

    def where(self, key: str) -> str:
        return self.origin.get(key) or (self.sources[0].path if self.sources else "<metrics>")

    def label(self) -> str:
        return ", ".join(s.path for s in self.sources) or "<metrics>"


def load_metrics(paths: Path | str | Iterable[Path | str]) -> Metrics:
    """Load one or more metrics paths (file or per-stage log dir) and merge them.

    Several paths may not disagree: a key present in two with different values is an error.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    loaded = [_load_one(Path(p)) for p in paths]
    if not loaded:
        raise MetricsFileError("no metrics path given")
    return merge_metrics(loaded)


def metrics_from_mapping(data: Mapping[str, object], label: str = "<metrics>") -> Metrics:
    """Metrics from an in-memory flat mapping (validated and normalized like a file)."""
    values = _flat_values(data, label)
    return Metrics(values, {}, (MetricsSource(label, SourceKind.MAPPING),))


def values_from_bytes(raw: bytes, where: str) -> dict[str, MetricValue]:
    """The validated, normalized flat metrics of one JSON object's bytes; errors name `where`."""
    return _flat_values(_parse_json(where, raw), where)


def merge_metrics(parts: list[Metrics]) -> Metrics:
    values: dict[str, MetricValue] = {}
    origin: dict[str, str] = {}
    for part in parts:
        for key, value in part.values.items():
            if key in values and values[key] != value:
                raise MetricsFileError(
                    f"key '{key}' disagrees: {values[key]!r} in {origin[key]} but {value!r} in "
                    f"{part.where(key)}"
                )
            values[key] = value
            origin[key] = part.where(key)
    return Metrics(values, origin, tuple(s for p in parts for s in p.sources))


def _load_one(path: Path) -> Metrics:
    if path.is_dir():
        return _load_log_dir(path)
    if not path.exists():
        raise MetricsFileError(f"{path}: no such metrics file or directory")
    raw = _read(path)
    data = _parse_json(path, raw)
    values = _flat_values(data, str(path))
    kind = (SourceKind.CLOSER_METRICS if any(k.startswith("closer__") for k in values)
            else SourceKind.ORFS_METADATA)
    source = MetricsSource(str(path), kind, hashlib.sha256(raw).hexdigest())
    return Metrics(values, {k: str(path) for k in values}, (source,))


def _load_log_dir(path: Path) -> Metrics:
    """Merge the stage files like ORFS genMetrics.py: stage 1..6, each stage's files in sorted
    order, a later file's key replacing an earlier one's."""
    stage_files = sorted(
        (p for p in path.iterdir() if STAGE_FILE.match(p.name)),
        key=lambda p: (int(STAGE_FILE.match(p.name).group(1)), p.name),
    )
    if not stage_files:
        hint = "; to read its metadata.json pass that file" if (path / "metadata.json").is_file() else ""
        raise MetricsFileError(
            f"{path}: no ORFS per-stage metrics files (1_synth.json, 2_1_floorplan.json, ...){hint}"
        )
    values: dict[str, MetricValue] = {}
    origin: dict[str, str] = {}
    digest = hashlib.sha256()
    for stage_file in stage_files:
        raw = _read(stage_file)
        digest.update(stage_file.name.encode() + b"\0" + raw)
        for key, value in _flat_values(_parse_json(stage_file, raw), str(stage_file)).items():
            values[key] = value
            origin[key] = str(stage_file)
    source = MetricsSource(str(path), SourceKind.ORFS_LOG_DIR, digest.hexdigest(),
                           tuple(p.name for p in stage_files))
    return Metrics(values, origin, (source,))


def _read(path: Path) -> bytes:
    try:
        return read_bytes(path, "metrics file")
    except InputError as exc:
        raise MetricsFileError(str(exc)) from None


def _parse_json(path: Path | str, raw: bytes) -> object:
    if not raw.strip():
        raise MetricsFileError(f"{path}: file is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MetricsFileError(f"{path}: not UTF-8 text ({exc})") from None
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant, parse_int=_int)
    except RecursionError:
        raise MetricsFileError(f"{path}: JSON nested too deeply; metrics must be flat") from None
    except _LongInt as exc:
        raise MetricsFileError(f"{path}: an integer of {exc.args[0]} digits (more than "
                               f"{MAX_INT_DIGITS}); metric values must be in range") from None
    except json.JSONDecodeError as exc:
        raise MetricsFileError(
            f"{path}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except _DuplicateKey as exc:
        raise MetricsFileError(f"{path}: key '{exc.args[0]}' appears twice") from None


class _DuplicateKey(Exception):
    pass


class _LongInt(Exception):
    pass


def _int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise _LongInt(len(digits.lstrip("-")))
    return int(digits)


class _NonFinite(float):
    """A NaN/Infinity literal; kept as a marker so the error can name its key."""

    def __new__(cls, literal: str):
        obj = super().__new__(cls, literal.replace("Infinity", "inf"))
        obj.literal = literal
        return obj


def _constant(literal: str) -> float:
    return _NonFinite(literal)


def _pairs(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _flat_values(data: object, where: str) -> dict[str, MetricValue]:
    if not isinstance(data, Mapping):
        raise MetricsFileError(f"{where}: expected one JSON object of metrics, got {type(data).__name__}")
    if not data:
        raise MetricsFileError(f"{where}: holds no metrics")
    flat: dict[str, MetricValue] = {}
    raw_key_of: dict[str, str] = {}
    for raw_key, value in data.items():
        if type(value) in _PLAIN_NON_NUMBER:
            items = ((raw_key, value),)  # fast path: nothing to check
        elif isinstance(value, Mapping) and _may_nest(raw_key):
            # ORFS genMetrics.py --hier: {stage: {rest: value}}
            items = tuple((f"{raw_key}__{sub}", v) for sub, v in value.items())
            for full_key, v in items:
                _check_value(full_key, v, where)
        else:
            _check_value(raw_key, value, where)
            items = ((raw_key, value),)
        for full_key, v in items:
            key = normalize_key(full_key)
            if key in flat and flat[key] != v:
                raise MetricsFileError(
                    f"{where}: keys '{raw_key_of[key]}' and '{full_key}' are the same metric "
                    f"(qualifier spelled ':' and '__') with different values {flat[key]!r} and {v!r}"
                )
            flat[key] = v
            raw_key_of[key] = full_key
    _check_shapes(flat, where)
    return flat


def _check_shapes(flat: dict[str, MetricValue], where: str) -> None:
    """Keys of a documented structured shape (the ORFS clock list) are checked when read, used or not."""
    for key, value in flat.items():
        known = KNOWN_KEYS.get(key)
        if known is not None and known.kind is MetricKind.CLOCKS:
            try:
                parse_clock_details(value)
            except ValueError as exc:
                raise MetricsFileError(f"{where}: key '{key}': {exc}") from None


_PLAIN_NON_NUMBER = (str, bool, type(None))


def _may_nest(raw_key: str) -> bool:
    """A bare stage name (ORFS --hier) or a run__ provenance key (run__flow__platform__corners)
    may hold an object; a metric key may not (its value would vanish into sub-keys)."""
    return bool(HIER_STAGE.match(raw_key)) and "__" not in raw_key or raw_key.startswith("run__")


def _check_value(key: str, value: object, where: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        literal = getattr(value, "literal", repr(value))
        raise MetricsFileError(f"{where}: key '{key}' is {literal}; metric values must be finite")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value != 0 \
            and not MIN_MAGNITUDE <= abs(value) <= MAX_MAGNITUDE:
        raise MetricsFileError(f"{where}: key '{key}' is {value!r}; a metric number must be 0 or of "
                               f"magnitude {MIN_MAGNITUDE:g} to {MAX_MAGNITUDE:g}")
    if isinstance(value, Mapping):
        raise MetricsFileError(f"{where}: key '{key}' holds a nested object; metrics must be flat")
    if isinstance(value, list):
        for item in value:
            if isinstance(item, (Mapping, list)):
                raise MetricsFileError(f"{where}: key '{key}' holds a nested structure")
            _check_value(key, item, where)
