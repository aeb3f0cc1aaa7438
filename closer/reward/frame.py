"""The vectorized reward path: many results at once, as a pandas DataFrame (one row per result).

It interprets the same gate declarations (`gates.GATES`) and derived-metric formulas
(`closer.metrics.DERIVED`) as the scalar path and performs the same IEEE operations in the same
order. Division, multiplication, addition and comparison are exact in both numpy and Python;
`log` and `exp` are taken with `math.log`/`math.exp` mapped over the column (numpy's own SIMD
log/exp may differ in the last bit), so `score_frame` equals `compute_reward` bit for bit.

Only the reward, the gate and the terms are computed here; gate details and provenance are the
scalar path's job. Gates the task does not require are not evaluated (they count as 1).
A NaN cell means "this result has no such key".
"""

from __future__ import annotations

import math
import operator
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from closer import metrics as mk
from closer.reward.columns import needed_keys
from closer.reward.compute import BELOW_ONE
from closer.reward.errors import GateUnmeasured, MetricNotFound, MetricsFileError
from closer.reward.gates import GATES, Check, Op
from closer.reward.metrics_file import Metrics
from closer.reward.targets import GATE_ORDER, LoadedTargets, Targets


def _slack_key(key: str) -> bool:
    """Keys of `>= 0` slack checks, where null means "no path checked" (+inf, as gates.py reads it)."""
    return any(check.op is Op.GE_ZERO and (key == check.key or key.startswith(
        check.key + mk.CORNER_QUALIFIER)) for gate in GATES.values() for check in gate.checks)


def frame_from_records(records: Sequence[Metrics | Mapping[str, object]], targets: Targets,
                       index: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per result holding only the keys `targets` needs. Mappings must already use the
    normalized `__` key spelling (as `Metrics.values` does). A missing key becomes NaN.
    Built column by column (one list per key), which is what keeps a large batch fast."""
    values_of = [r.values if isinstance(r, Metrics) else r for r in records]
    key_cache: dict[tuple[str, ...], list[str]] = {}
    columns: dict[str, None] = {}  # the needed keys, in first-seen order
    for values in values_of:
        signature = tuple(values)
        if signature not in key_cache:
            key_cache[signature] = needed_keys(signature, targets)
            columns.update(dict.fromkeys(key_cache[signature]))
    if len(key_cache) == 1 and columns:  # one key set (one flow's records): transpose in C
        rows = map(operator.itemgetter(*columns), values_of)
        data = dict(zip(columns, map(list, zip(*rows)))) if len(columns) > 1 else \
            {next(iter(columns)): list(rows)}
    else:
        data = {key: [values.get(key, math.nan) for values in values_of] for key in columns}
    return _frame(data, len(values_of), index)


def frame_from_columns(keys: Sequence[str], column: Callable[[str], list], targets: Targets,
                       index: Sequence[str]) -> pd.DataFrame:
    """`frame_from_records` for records of one key set (`keys`) given column by column."""
    return _frame({key: column(key) for key in needed_keys(keys, targets)}, len(index), index)


def _frame(data: dict[str, list], n: int, index: Sequence[str] | None) -> pd.DataFrame:
    data = {key: _slack_column(key, column) for key, column in data.items()}
    rows = None if index is None else list(index)
    return pd.DataFrame(data, index=rows) if data else pd.DataFrame(index=range(n) if rows is None else rows)


def _slack_column(key: str, column: list[object]) -> list[object]:
    if _slack_key(key) and None in column:  # null: "no path checked", +inf as gates.py reads it
        return [math.inf if value is None else value for value in column]
    return column


def score_records(records: Sequence[Metrics | Mapping[str, object]],
                  targets: Targets | LoadedTargets) -> pd.DataFrame:
    spec = targets.targets if isinstance(targets, LoadedTargets) else targets
    return score_frame(frame_from_records(records, spec), spec)


def score_frame(frame: pd.DataFrame, targets: Targets | LoadedTargets) -> pd.DataFrame:
    """Columns `reward`, `gate`, and per target `<name>.value`, `.ratio`, `.loss`, `.penalty`."""
    spec = targets.targets if isinstance(targets, LoadedTargets) else targets
    n = len(frame)
    resolver = _ColumnResolver(frame, spec)
    target_values = {t.name: resolver.values(t.metric, f"target '{t.name}'") for t in spec.targets}
    failed = resolver.broken.copy()  # a derived value not finite or not > 0 fails its gate
    unmeasured = np.zeros(n, dtype=bool)
    for name in GATE_ORDER:
        if name in spec.required:
            gate_fail, gate_unmeasured = _evaluate_gate(frame, GATES[name])
            failed |= gate_fail
            unmeasured |= gate_unmeasured
    blocked = unmeasured & ~failed
    if blocked.any():
        row = int(np.flatnonzero(blocked)[0])
        raise GateUnmeasured(
            f"{int(blocked.sum())} of {n} results lack a measurement for a required gate "
            f"(first: row {frame.index[row]!r})", [g.value for g in spec.gates.required])
    gate = ~failed

    out = pd.DataFrame(index=frame.index)
    total = np.zeros(n)
    any_weighted_unmet = np.zeros(n, dtype=bool)
    for target in spec.targets:
        values = target_values[target.name]
        missing = np.isnan(values)
        if (missing & gate).any():
            row = frame.index[int(np.flatnonzero(missing & gate)[0])]
            raise MetricNotFound(f"row {row!r}: target '{target.name}' names metric "
                                 f"'{target.metric}', which that result does not have")
        if (values[~missing] <= 0).any():
            row = frame.index[int(np.flatnonzero(~missing & (values <= 0))[0])]
            raise MetricsFileError(f"row {row!r}: metric '{target.metric}' of target "
                                   f"'{target.name}' must be > 0 (the reward takes its log)")
        ratio = values / target.target
        loss = np.maximum(0.0, _map(math.log, ratio))
        penalty = target.weight * loss
        total = total + penalty
        if target.weight > 0:
            any_weighted_unmet |= values > target.target
        out[f"{target.name}.value"] = values
        out[f"{target.name}.ratio"] = ratio
        out[f"{target.name}.loss"] = loss
        out[f"{target.name}.penalty"] = penalty
    exp_part = _map(math.exp, np.where(gate, -total, 0.0))
    reward = np.where(gate, exp_part, 0.0)
    reward = np.where(gate & any_weighted_unmet & (reward >= 1.0), BELOW_ONE, reward)
    out.insert(0, "gate", gate.astype(np.int64))
    out.insert(0, "reward", reward)
    return out


def _map(function, array: np.ndarray) -> np.ndarray:
    return np.fromiter(map(function, array.tolist()), dtype=np.float64, count=len(array))


def _evaluate_gate(frame: pd.DataFrame, gate) -> tuple[np.ndarray, np.ndarray]:
    n = len(frame)
    fail = np.zeros(n, dtype=bool)
    unmeasured = np.zeros(n, dtype=bool)
    for check in gate.checks:
        columns = _check_columns(frame, check)
        present = np.zeros(n, dtype=bool)
        for column in columns:
            ok, has = _check_column(frame, column, check)
            present |= has
            fail |= has & ~ok
        if not check.optional:
            unmeasured |= ~present
    if gate.started_prefix:
        started_cols = [c for c in frame.columns if c.startswith(gate.started_prefix)]
        started = frame[started_cols].notna().any(axis=1).to_numpy() if started_cols else np.zeros(n, bool)
        fail |= unmeasured & started
        unmeasured &= ~started
    return fail, unmeasured & ~fail


def _check_columns(frame: pd.DataFrame, check: Check) -> list[str]:
    if check.per_corner:
        prefix = check.key + mk.CORNER_QUALIFIER
        return [c for c in frame.columns if c == check.key or c.startswith(prefix)]
    return [check.key] if check.key in frame.columns else []


def _check_column(frame: pd.DataFrame, column: str, check: Check) -> tuple[np.ndarray, np.ndarray]:
    series = frame[column]
    has = series.notna().to_numpy()
    if check.op is Op.EQUALS:
        choices = mk.KNOWN_KEYS[check.key].choices
        bad = has & ~series.isin(choices).to_numpy()
        if bad.any():
            row = frame.index[int(np.flatnonzero(bad)[0])]
            raise MetricsFileError(f"row {row!r}: key '{column}' must be one of {list(choices)}, "
                                   f"got {series[row]!r}")
        return (series == check.expected).to_numpy(), has
    values = _numeric(frame, column)
    known = mk.KNOWN_KEYS.get(check.key)
    if known is not None and known.kind is mk.MetricKind.COUNT:
        bad = has & ((values < 0) | (values != np.floor(values)))
        if bad.any():
            row = frame.index[int(np.flatnonzero(bad)[0])]
            raise MetricsFileError(f"row {row!r}: key '{column}' is a count and must be a "
                                   f"non-negative integer, got {series[row]!r}")
    with np.errstate(invalid="ignore"):
        if check.op is Op.EQ_ZERO:
            ok = values == 0
        elif check.op is Op.GE_ZERO:
            ok = values >= 0
        else:
            ok = values > 0
    return ok, has


def _numeric(frame: pd.DataFrame, column: str) -> np.ndarray:
    series = frame[column]
    if series.dtype.kind in "if":
        return series.to_numpy(dtype=np.float64)
    for row, value in series.items():
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise MetricsFileError(f"row {row!r}: key '{column}' must be a number, got "
                                   f"{type(value).__name__} {value!r}")
    return series.to_numpy(dtype=np.float64, na_value=np.nan)


class _ColumnResolver:
    def __init__(self, frame: pd.DataFrame, spec: Targets):
        self.frame = frame
        self.spec = spec
        self.cache: dict[str, np.ndarray] = {}
        self.broken = np.zeros(len(frame), dtype=bool)  # rows with a derived value not finite or <= 0

    def values(self, name: str, needed_by: str) -> np.ndarray:
        if name in self.cache:
            return self.cache[name]
        if name in self.frame.columns:
            result = _numeric(self.frame, name)
        elif name == mk.CLOCK_PERIOD:
            result = self._clock_period(needed_by)
        elif name in mk.DERIVED:
            derived = mk.DERIVED[name]
            inputs = [self.values(i, f"{needed_by} via {name}") for i in derived.inputs]
            with np.errstate(invalid="ignore", over="ignore"):
                result = np.asarray(derived.compute(*inputs), dtype=np.float64)
            measured = ~np.any(np.isnan(np.vstack(inputs)), axis=0)
            with np.errstate(invalid="ignore"):
                bad = measured & (~np.isfinite(result) | (result <= 0))
            self.broken |= bad
            result = np.where(bad, np.nan, result)
        elif mk.looks_like_key(name):
            result = np.full(len(self.frame), np.nan)  # no result has it; fine only where gate is 0
        else:
            raise MetricNotFound(f"{needed_by} names metric '{name}', which no result has")
        self.cache[name] = result
        return result

    def _clock_period(self, needed_by: str) -> np.ndarray:
        n = len(self.frame)
        if self.spec.clock_period is not None:
            return np.full(n, self.spec.clock_period)
        if mk.CLOCKS_DETAILS not in self.frame.columns:
            return np.full(n, np.nan)
        column = self.frame[mk.CLOCKS_DETAILS].tolist()
        if set(map(type, column)) == {list}:  # every row has the list (the fast readers' case)
            keys = list(map(tuple, column))
        else:
            keys = [tuple(d) if isinstance(d, list) else d if isinstance(d, str) else None for d in column]
        first_row = dict(zip(reversed(keys), range(n - 1, -1, -1)))  # each key's first row
        period: dict[object, float] = {None: math.nan}
        for key in sorted(first_row, key=first_row.__getitem__):  # so an error names the first bad row
            if key not in period:
                period[key] = self._one_clock(key, self.frame.index[first_row[key]])
        return np.fromiter(map(period.__getitem__, keys), dtype=np.float64, count=n)

    @staticmethod
    def _one_clock(details: tuple | str, row: object) -> float:
        try:
            clocks = mk.parse_clock_details(list(details) if isinstance(details, tuple) else details)
        except ValueError as exc:
            raise MetricsFileError(f"row {row!r}: key '{mk.CLOCKS_DETAILS}': {exc}") from None
        if len(clocks) != 1:
            raise MetricsFileError(
                f"row {row!r}: key '{mk.CLOCKS_DETAILS}' lists {len(clocks)} clocks; set "
                "clock_period in the targets file")
        return next(iter(clocks.values()))
