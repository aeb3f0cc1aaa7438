"""The vectorized reward path without pandas: many results at once, as plain columns.

A batch is a mapping from metric key to a column (a list, one value per result, `MISSING` where
a result lacks the key). `score_columns` interprets the gate declarations (`gates.GATES`) and the
derived-metric formulas (`closer.metrics.DERIVED`) as `compute_reward` does: the same Python
operators, `math.log`, `math.exp` and formula functions on the same values in the same order,
mapped over the columns in C (`map`, `compress`, `min`), so each result equals the scalar one
bit for bit.

It scores only what it decides exactly. A result the scalar path would refuse (a malformed value
of a key it reads, a required gate unmeasured, a target metric missing where the gate passes, a
term value not > 0), or one that the column pass cannot follow, is listed in `Scored.undecided`:
the caller asks `compute_reward` for it, which words the error or gives the result. Only the
reward, the gate and the terms are computed here; gate details and provenance are the scalar
path's job. Gates the task does not require are not evaluated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import add, le, lt, mul, ne, neg, truediv

from closer import metrics as mk
from closer.reward.compute import BELOW_ONE
from closer.reward.gates import GATES, Check, Gate, Op, passes
from closer.reward.targets import GATE_ORDER, LoadedTargets, Target, Targets


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()  # the cell of a result that has no such key
_NUMBERS = frozenset((int, float))  # what `gates.require_number` accepts (bool is its own type)


@dataclass
class TermColumns:
    """One target's term per result (None: the result has no value; only where the gate is 0)."""
    value: list[float | None]
    ratio: list[float | None]
    loss: list[float | None]
    penalty: list[float | None]
    met: list[bool | None]


@dataclass
class Scored:
    reward: list[float]
    gate: list[int]
    penalty_total: list[float | None]
    terms: dict[str, TermColumns]
    undecided: set[int]  # rows to hand to `compute_reward`; their cells above are placeholders


def needed_keys(keys: Sequence[str], targets: Targets) -> list[str]:
    """The keys (of `keys`) that scoring against `targets` reads."""
    wanted: set[str] = set()
    prefixes: list[str] = []
    for name in targets.gates.required:
        gate = GATES[name]
        for check in gate.checks:
            wanted.add(check.key)
            if check.per_corner:
                prefixes.append(check.key + mk.CORNER_QUALIFIER)
        if gate.started_prefix:
            prefixes.append(gate.started_prefix)
    pending = [t.metric for t in targets.targets]
    while pending:
        name = pending.pop()
        wanted.add(name)
        if name in mk.DERIVED:
            pending.extend(mk.DERIVED[name].inputs)
    wanted.add(mk.CLOCKS_DETAILS)
    prefixes_t = tuple(prefixes)
    return [k for k in keys if k in wanted or (prefixes_t and k.startswith(prefixes_t))]


def score_columns(columns: Mapping[str, Sequence], n: int, targets: Targets | LoadedTargets,
                  kinds: Mapping[str, frozenset[type]] | None = None) -> Scored:
    """Score `n` results given column by column (at least the `needed_keys`); `kinds`: for some
    columns, the types they may hold (known to the reader; else found by a pass over the column)."""
    spec = targets.targets if isinstance(targets, LoadedTargets) else targets
    if not n:
        return Scored([], [], [], {t.name: TermColumns([], [], [], [], []) for t in spec.targets}, set())
    batch = _Batch(columns, n, spec, kinds)
    values = {t.name: batch.value(t.metric) for t in spec.targets}  # the probe: missing allowed
    failed = set(batch.broken)  # a derived value not finite or not > 0 fails its gate
    unmeasured: set[int] = set()
    for name in GATE_ORDER:
        if name in spec.required:
            gate_failed, gate_unmeasured = batch.gate(GATES[name])
            failed |= gate_failed
            unmeasured |= gate_unmeasured
    batch.undecided |= unmeasured - failed  # the scalar path raises GateUnmeasured
    terms = {t.name: _term(batch, values[t.name], t, failed) for t in spec.targets}
    total = _totals(spec.targets, terms, n)
    reward = list(map(math.exp, map(neg, [0.0 if t is None else t for t in total] if None in total else total)))
    if max(reward) >= 1.0:
        weighted_met = [terms[t.name].met for t in spec.targets if t.weight > 0]
        for row in compress(range(n), map(le, repeat(1.0), reward)):
            if any(met[row] is False for met in weighted_met):
                reward[row] = BELOW_ONE  # a weighted target unmet: not 1, however small its penalty
    gate = [1] * n
    for row in failed:
        reward[row] = 0.0
        gate[row] = 0
    return Scored(reward, gate, total, terms, batch.undecided)


def _term(batch: _Batch, values: list, target: Target, failed: set[int]) -> TermColumns:
    """The term of each result; a value the scalar path refuses (missing where the gate passes,
    not > 0) marks its row undecided and is left out."""
    values = list(values)
    for row, value in enumerate(values if None in values or min(values, default=1) <= 0 else ()):
        if value is None:
            if row not in failed:
                batch.undecided.add(row)
        elif value <= 0:
            batch.undecided.add(row)
            values[row] = None
    if None not in values:
        ratio = list(map(truediv, values, repeat(target.target)))
        # max(0.0, x) without a call per value: max keeps 0.0 unless x > 0.0, as this does
        loss = [x if x > 0.0 else 0.0 for x in map(math.log, ratio)]
        penalty = list(map(mul, repeat(target.weight), loss))
        met = list(map(le, values, repeat(target.target)))
        return TermColumns(list(map(float, values)), ratio, loss, penalty, met)
    ratio = [None if v is None else v / target.target for v in values]
    loss = [None if r is None else max(0.0, math.log(r)) for r in ratio]
    penalty = [None if x is None else target.weight * x for x in loss]
    met = [None if v is None else v <= target.target for v in values]
    return TermColumns([None if v is None else float(v) for v in values], ratio, loss, penalty, met)


def _totals(targets: list[Target], terms: dict[str, TermColumns], n: int) -> list[float | None]:
    """Σ penalties from 0.0 in target order, None once a term has no value."""
    total: list[float | None] = [0.0] * n
    for target in targets:
        penalty = terms[target.name].penalty
        if None in total or None in penalty:
            total = [None if t is None or p is None else t + p for t, p in zip(total, penalty)]
        else:
            total = list(map(add, total, penalty))
    return total


class _Batch:
    """The columns being scored, what was resolved from them, and the rows found undecided."""

    def __init__(self, columns: Mapping[str, Sequence], n: int, spec: Targets,
                 kinds: Mapping[str, frozenset[type]] | None = None):
        self.columns = columns
        self.n = n
        self.spec = spec
        self.undecided: set[int] = set()
        self.broken: set[int] = set()
        self.cache: dict[str, list] = {}
        self.flagged: dict[str, set[int]] = {}  # rows broken or undecided while resolving a name
        self._kinds: dict[str, frozenset[type]] = dict(kinds or {})  # a superset of each column's types

    def kinds(self, key: str) -> frozenset[type]:
        if key not in self._kinds:
            self._kinds[key] = frozenset(map(type, self.columns[key]))
        return self._kinds[key]

    # --- values (the scalar path's `_Resolver.value`, with missing allowed) --------------------
    def value(self, name: str) -> list:
        """Each result's number for `name`, None where it has none (or is undecided)."""
        if name not in self.cache:
            before = self.undecided | self.broken
            self.cache[name] = self._resolve(name)
            self.flagged[name] = (self.undecided | self.broken) - before
        return self.cache[name]

    def _resolve(self, name: str) -> list:
        if name in self.columns:
            return self._raw(name)
        if name == mk.CLOCK_PERIOD:
            return self._clock_period()
        if name in mk.DERIVED:
            return self._derived(mk.DERIVED[name])
        if not mk.looks_like_key(name):
            self.undecided.update(range(self.n))  # MetricNotFound for every result
        return [None] * self.n

    def _raw(self, name: str) -> list:
        column = self.columns[name]
        if self.kinds(name) <= _NUMBERS:
            return column
        # a result without the key resolves it as the scalar path would (derived, or missing)
        missing_ok = mk.looks_like_key(name) and name not in mk.DERIVED and name != mk.CLOCK_PERIOD
        out = []
        for row, value in enumerate(column):
            if type(value) in _NUMBERS:
                out.append(value)
                continue
            if value is not MISSING or not missing_ok:
                self.undecided.add(row)  # null, bool, str or list: `require_number` refuses it
            out.append(None)
        return out

    def _clock_period(self) -> list:
        if self.spec.clock_period is not None:
            return [self.spec.clock_period] * self.n
        column = self.columns.get(mk.CLOCKS_DETAILS)
        if column is None:
            return [None] * self.n
        if self.kinds(mk.CLOCKS_DETAILS) == {list}:  # every result has the list (one flow's records)
            if column.count(column[0]) == self.n:  # the same clocks in all (one compare per list)
                period = _one_period(column[0])
                if period is not None:
                    return [period] * self.n
            keys = list(map(tuple, column))
            periods = {key: _one_period(list(key)) for key in set(keys)}
            if None not in periods.values():
                return list(map(periods.__getitem__, keys))
        periods = {}
        out = []
        for row, details in enumerate(column):
            if details is MISSING or details is None:
                out.append(None)
                continue
            key = tuple(details) if type(details) is list else details
            if key not in periods:
                periods[key] = _one_period(details)
            if periods[key] is None:
                self.undecided.add(row)
            out.append(periods[key])
        return out

    def _derived(self, derived: mk.DerivedMetric) -> list:
        inputs = []
        short: set[int] = set()  # rows where an earlier input was None: the scalar path stops there
        for name in derived.inputs:
            column = self.value(name)
            self.undecided |= short & self.flagged[name]
            inputs.append(column)
            if None in column:
                short.update(row for row, value in enumerate(column) if value is None)
        if not short:
            try:
                out = list(map(derived.compute, *inputs))
            except ArithmeticError:
                out = None
            if out is not None and all(map(math.isfinite, out)) and (not out or min(out) > 0):
                return out
        out = [None] * self.n
        for row, args in enumerate(zip(*inputs)):
            if row in short:
                continue
            try:
                result = derived.compute(*args)
            except ArithmeticError:
                self.undecided.add(row)
                continue
            if math.isfinite(result) and result > 0:
                out[row] = result
            else:
                self.broken.add(row)
        return out

    # --- gates (the scalar path's `gates.observe`) --------------------------------------------
    def gate(self, gate: Gate) -> tuple[set[int], set[int]]:
        """(rows that fail the gate, rows where it is unmeasured)."""
        failed: set[int] = set()
        missing: set[int] = set()
        for check in gate.checks:
            keys = self._check_keys(check)
            for key in keys:
                failed |= self._failing(key, check)
            if not check.optional:
                missing |= self._absent(keys)
        if gate.started_prefix and missing:
            started = [k for k in self.columns if k.startswith(gate.started_prefix)]
            for row in list(missing):
                if any(self.columns[k][row] is not MISSING for k in started):
                    failed.add(row)  # the stage started and did not finish
                    missing.discard(row)
        return failed, missing - failed

    def _check_keys(self, check: Check) -> list[str]:
        if not check.per_corner:
            return [check.key] if check.key in self.columns else []
        prefix = check.key + mk.CORNER_QUALIFIER
        return [k for k in self.columns if k == check.key or k.startswith(prefix)]

    def _absent(self, keys: list[str]) -> set[int]:
        """Rows that have none of `keys`."""
        if keys and any(_Missing not in self.kinds(k) for k in keys):
            return set()
        absent = set(range(self.n))
        for key in keys:
            absent &= {row for row, value in enumerate(self.columns[key]) if value is MISSING}
        return absent

    def _failing(self, key: str, check: Check) -> set[int]:
        column = self.columns[key]
        kinds = self.kinds(key)
        if check.op is Op.EQUALS:
            return self._failing_choice(key, check)
        count = _is_count(check)
        if kinds <= _NUMBERS and check.op is Op.EQ_ZERO and not any(column):
            return set()  # every value 0 (the usual error count): valid and passing, in one pass
        if kinds <= _NUMBERS and not (count and (float in kinds or min(column) < 0)):
            if check.op is Op.EQ_ZERO:
                return set(compress(range(self.n), column))
            if check.op is Op.GE_ZERO:
                return set() if min(column) >= 0 else set(compress(range(self.n), map(lt, column, repeat(0))))
            return set() if min(column) > 0 else set(compress(range(self.n), map(le, column, repeat(0))))
        failed = set()
        for row, value in enumerate(column):
            if value is MISSING or (value is None and check.op is Op.GE_ZERO):
                continue  # no key, or "no path checked" (+inf, a pass)
            if type(value) not in _NUMBERS or (count and (value < 0 or value != int(value))):
                self.undecided.add(row)  # `gates.checked_value` refuses it
            elif not passes(check.op, value, None):
                failed.add(row)
        return failed

    def _failing_choice(self, key: str, check: Check) -> set[int]:
        column = self.columns[key]
        choices = frozenset(mk.KNOWN_KEYS[check.key].choices) if check.key in mk.KNOWN_KEYS else frozenset()
        if self.kinds(key) == {str} and (not choices or set(column) <= choices):
            return set(compress(range(self.n), map(ne, column, repeat(check.expected))))
        failed = set()
        for row, value in enumerate(column):
            if value is MISSING:
                continue
            if type(value) is not str or (choices and value not in choices):
                self.undecided.add(row)
            elif value != check.expected:
                failed.add(row)
        return failed


def _is_count(check: Check) -> bool:
    known = mk.KNOWN_KEYS.get(check.key)
    return known is not None and known.kind is mk.MetricKind.COUNT


def _one_period(details: object) -> float | None:
    """The single clock's period, or None where the scalar path raises."""
    try:
        clocks = mk.parse_clock_details(details)
    except ValueError:
        return None
    if len(clocks) != 1:
        return None
    return next(iter(clocks.values()))
