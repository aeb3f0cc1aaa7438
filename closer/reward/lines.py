"""The output lines of `closer reward batch`, built column-wise from a scored frame.

Each line is the bytes `orjson.dumps` gives for the dict {input, schema_version, reward, gate,
penalty_total, terms} of the scalar result (`batch.scalar_line`): the fixed parts are encoded
once, each column's values once by mapping `orjson.dumps` over it (NaN and infinity come out
as null, as the scalar path's None and orjson's own infinity do), and a line is one join.
"""

from __future__ import annotations

from itertools import repeat
from typing import Iterable

import numpy as np
import orjson
import pandas as pd

from closer.reward.models import SCHEMA_VERSION
from closer.reward.targets import LoadedTargets, Target


def result_lines(scored: pd.DataFrame, labels: list[str], targets: LoadedTargets) -> list[bytes]:
    """One line per row of `scored` (`frame.score_frame`'s output), labelled by `labels`."""
    spec = targets.targets
    parts: list[Iterable[bytes] | bytes] = [b'{"input":', _dumped(labels),
                                            b',"schema_version":' + orjson.dumps(SCHEMA_VERSION) + b',"reward":',
                                            _dumped(scored["reward"].tolist()), b',"gate":',
                                            _dumped(scored["gate"].tolist()), b',"penalty_total":',
                                            _dumped(_penalty_total(scored, spec.targets).tolist()), b',"terms":{']
    for n, target in enumerate(spec.targets):
        parts.extend(_term_parts(scored, target, first=n == 0))
    parts.append(b"}}")
    return list(map(b"".join, zip(*_merged(parts, len(labels)))))


def _term_parts(scored: pd.DataFrame, target: Target, first: bool) -> list[Iterable[bytes] | bytes]:
    column = f"{target.name}."
    values = scored[column + "value"].to_numpy()
    return [(b"" if first else b",") + orjson.dumps(target.name) + b':{"metric":' + orjson.dumps(target.metric)
            + b',"value":', _dumped(values.tolist()),
            b',"target":' + orjson.dumps(target.target) + b',"weight":' + orjson.dumps(target.weight) + b',"ratio":',
            _dumped(scored[column + "ratio"].tolist()), b',"loss":', _dumped(scored[column + "loss"].tolist()),
            b',"penalty":', _dumped(scored[column + "penalty"].tolist()), b',"met":',
            _dumped(_met(values, target.target)), b"}"]


def _met(values: np.ndarray, target: float) -> list[bool | None]:
    """`value <= target`, None where there is no value."""
    met: list[bool | None] = (values <= target).tolist()
    for row in np.flatnonzero(np.isnan(values)).tolist():
        met[row] = None
    return met


def _penalty_total(scored: pd.DataFrame, targets: list[Target]) -> np.ndarray:
    """Σ penalties from 0.0 in target order, as the scalar path adds them; NaN (null) when a term
    has no value."""
    total = np.zeros(len(scored))
    missing = np.zeros(len(scored), dtype=bool)
    for target in targets:
        penalty = scored[f"{target.name}.penalty"].to_numpy()
        missing |= np.isnan(penalty)
        total = total + penalty
    return np.where(missing, np.nan, total)


def _dumped(values: list) -> map:
    return map(orjson.dumps, values)


def _merged(parts: list[Iterable[bytes] | bytes], n: int) -> list[Iterable[bytes]]:
    """Runs of fixed parts joined into one, each repeated for the `n` lines."""
    merged: list[Iterable[bytes]] = []
    fixed = b""
    for part in parts:
        if isinstance(part, bytes):
            fixed += part
            continue
        if fixed:
            merged.append(repeat(fixed, n))
            fixed = b""
        merged.append(part)
    if fixed:
        merged.append(repeat(fixed, n))
    return merged
