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

import math
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from closer.errors import InputError
from closer.inputs import MAX_INPUT_BYTES
from closer.reward.compute import compute_reward
from closer.reward.errors import MetricsFileError
from closer.reward.fastmetrics import fast_values
from closer.reward.frame import frame_from_records, score_frame
from closer.reward.metrics_file import MetricValue, metrics_from_mapping, values_from_bytes
from closer.reward.models import SCHEMA_VERSION, RewardResult
from closer.reward.targets import LoadedTargets

TERM_FIELDS = ("value", "ratio", "loss", "penalty")


@dataclass(frozen=True)
class Parsed:
    label: str  # the file, or file:line
    values: dict[str, MetricValue] | None
    error: str | None = None


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
    with open(path, "rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            yield f"{path}:{line_no}", raw


def _read(entry: os.DirEntry) -> bytes:
    """`read_bytes`'s checks without its extra stat per file (the directory listing has the type)."""
    if not entry.is_file():
        raise MetricsFileError(f"{entry.path}: metrics file is not a regular file")
    try:
        with open(entry.path, "rb") as handle:
            raw = handle.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise MetricsFileError(f"{entry.path}: metrics file cannot be read: {exc.strerror}") from None
    if len(raw) > MAX_INPUT_BYTES:
        raise MetricsFileError(f"{entry.path}: metrics file is over the {MAX_INPUT_BYTES}-byte limit")
    return raw


def _read_check(path: Path) -> None:
    """The JSONL exists and is a regular file (its lines are read as a stream, not at once)."""
    if not path.exists():
        raise MetricsFileError(f"{path}: no such metrics JSONL file or directory")
    if not path.is_file():
        raise MetricsFileError(f"{path}: not a regular file")


def parse_inputs(path: Path, keep_going: bool = False) -> list[Parsed]:
    parsed = []
    for label, raw in read_inputs(path):
        values = fast_values(raw)
        if values is None:
            try:
                values = values_from_bytes(raw, label)
            except MetricsFileError as exc:
                if not keep_going:
                    raise
                parsed.append(Parsed(label, None, str(exc)))
                continue
        parsed.append(Parsed(label, values))
    return parsed


def score_inputs(path: Path, targets: LoadedTargets, keep_going: bool = False) -> list[bytes]:
    """One JSON line (bytes, no newline) per input, in input order."""
    parsed = parse_inputs(path, keep_going)
    good = [p for p in parsed if p.values is not None]
    lines = dict(_score(good, targets, keep_going))
    return [lines[p.label] if p.values is not None else _error_line(p.label, p.error) for p in parsed]


def _score(good: list[Parsed], targets: LoadedTargets, keep_going: bool) -> Iterator[tuple[str, bytes]]:
    labels = [p.label for p in good]
    if not good:
        return
    try:
        scored = score_frame(frame_from_records([p.values for p in good], targets.targets, labels), targets)
    except InputError:
        if not keep_going:
            raise
        yield from _score_one_by_one(good, targets)  # find which inputs the batch could not score
        return
    yield from zip(labels, _result_lines(scored, labels, targets))


def _result_lines(scored, labels: list[str], targets: LoadedTargets) -> Iterator[bytes]:
    spec = targets.targets
    columns = {name: scored[name].tolist() for name in scored.columns}
    penalties = [columns[f"{t.name}.penalty"] for t in spec.targets]
    for i, label in enumerate(labels):
        terms = {}
        for target in spec.targets:
            term = {field: _number(columns[f"{target.name}.{field}"][i]) for field in TERM_FIELDS}
            value = term["value"]
            terms[target.name] = {"metric": target.metric, "value": value, "target": target.target,
                                  "weight": target.weight, "ratio": term["ratio"], "loss": term["loss"],
                                  "penalty": term["penalty"], "met": None if value is None else value <= target.target}
        total = _penalty_total([column[i] for column in penalties])
        yield orjson.dumps({"input": label, "schema_version": SCHEMA_VERSION, "reward": columns["reward"][i],
                            "gate": columns["gate"][i], "penalty_total": total, "terms": terms})


def _number(value: float) -> float | None:
    return None if math.isnan(value) else value


def _penalty_total(penalties: list[float]) -> float | None:
    """Σ in target order, the scalar path's way (None when a term has no value)."""
    total = 0.0
    for penalty in penalties:
        if math.isnan(penalty):
            return None
        total += penalty
    return total


def _score_one_by_one(good: list[Parsed], targets: LoadedTargets) -> Iterator[tuple[str, bytes]]:
    for p in good:
        try:
            result = compute_reward(metrics_from_mapping(p.values, p.label), targets)
        except InputError as exc:
            yield p.label, _error_line(p.label, f"{p.label}: {exc}")
            continue
        yield p.label, scalar_line(p.label, result)


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
