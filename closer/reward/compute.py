"""The scalar reward computation: R = G · exp(−Σ_j w_j · max(0, log(m_j / m*_j))).

Exactness: only IEEE-exact operations (division, multiplication, addition in target order,
comparison) plus `math.log`/`math.exp`; the vectorized path in `frame.py` performs the same
operations in the same order, so the two agree bit for bit.

R is 1.0 exactly when every required gate passes and every weighted target is met. When a
weighted target is unmet but its penalty rounds away (value/target within an ulp of 1, or a
tiny weight), R is held at the largest double below 1.0 so that "1 means met" stays true.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

from closer import __version__
from closer import metrics as mk
from closer.reward.errors import GateUnmeasured, MetricNotFound, MetricsFileError
from closer.reward.gates import GATES, Observation, Observed, observe, require_number
from closer.reward.metrics_file import Metrics
from closer.reward.models import (
    DerivedValue, GateDetail, GateStatus, Provenance, RewardResult, SourceInfo, Term,
)
from closer.reward.targets import GATE_ORDER, GateName, LoadedTargets, Targets

BELOW_ONE = math.nextafter(1.0, 0.0)


def term_loss(value: float, target: float) -> tuple[float, float]:
    """(ratio, loss) with loss = max(0, log(ratio)); the one definition both paths follow."""
    ratio = value / target
    return ratio, max(0.0, math.log(ratio))


def reward_from(gate: int, total: float, any_weighted_unmet: bool) -> float:
    if not gate:
        return 0.0
    reward = math.exp(-total)
    if any_weighted_unmet and reward >= 1.0:
        return BELOW_ONE
    return reward


def compute_reward(metrics: Metrics, targets: Targets | LoadedTargets) -> RewardResult:
    """Score `metrics` against `targets`. Raises GateUnmeasured, MetricNotFound, MetricsFileError."""
    loaded = targets if isinstance(targets, LoadedTargets) else None
    spec = loaded.targets if loaded else targets
    observations = {name: _observe(name, metrics, name in spec.required) for name in GATE_ORDER}
    broken = _broken_derived(metrics, spec)
    for name, reason in broken.items():
        observations[name] = Observation(name, Observed.FAIL, reason, observations[name].values)
    required_set = spec.required | frozenset(broken)
    required = [g for g in GATE_ORDER if g in required_set]
    failed = [g for g in required if observations[g].observed is Observed.FAIL]
    unmeasured = [g for g in required if observations[g].observed is Observed.UNMEASURED]
    if unmeasured and not failed:
        raise GateUnmeasured(_unmeasured_message(metrics, [observations[g] for g in unmeasured]),
                             [g.value for g in unmeasured])
    gate = 0 if failed else 1

    resolver = _Resolver(metrics, spec, allow_missing=gate == 0)
    terms, total, any_weighted_unmet = _score_terms(spec, resolver)
    reward = reward_from(gate, total if total is not None else 0.0, any_weighted_unmet)

    used: dict[str, object] = {}
    for obs in observations.values():
        used.update(obs.values)
    used.update(resolver.used)
    return RewardResult(
        reward=reward,
        gate=gate,
        gates={g.value: _status(g, required_set, observations[g], gate) for g in GATE_ORDER},
        gate_details={
            g.value: GateDetail(required=g in required_set, observed=observations[g].observed.value,
                                reason=observations[g].reason, values=observations[g].values)
            for g in GATE_ORDER
        },
        terms=terms,
        penalty_total=total,
        metrics_used=dict(sorted(used.items())),
        derived=resolver.derived,
        provenance=_provenance(metrics, loaded),
    )


def _broken_derived(metrics: Metrics, spec: Targets) -> dict[GateName, str]:
    """Gate -> reason, for each target whose derived metric is not finite or not > 0: that gate
    fails (and counts as required), so the result is scored 0 instead of left unscored."""
    probe = _Resolver(metrics, spec, allow_missing=True)
    for target in spec.targets:
        try:
            probe.value(target.metric, needed_by=f"target '{target.name}'")
        except (MetricNotFound, MetricsFileError):
            pass  # the scoring pass reports these
    return {GateName(gate): reason for gate, reason in probe.broken.items()}


def _score_terms(spec: Targets, resolver: "_Resolver") -> tuple[dict[str, Term], float | None, bool]:
    """(terms, Σ penalties in target order or None if a value is missing, any weighted unmet)."""
    terms: dict[str, Term] = {}
    total: float | None = 0.0
    any_weighted_unmet = False
    for target in spec.targets:
        value = resolver.term_value(target.name, target.metric)
        if value is None:
            terms[target.name] = Term(metric=target.metric, value=None, target=target.target,
                                      weight=target.weight, ratio=None, loss=None, penalty=None,
                                      met=None)
            total = None
            continue
        ratio, loss = term_loss(value, target.target)
        penalty = target.weight * loss
        met = value <= target.target
        any_weighted_unmet = any_weighted_unmet or (not met and target.weight > 0)
        if total is not None:
            total += penalty
        terms[target.name] = Term(metric=target.metric, value=value, target=target.target,
                                  weight=target.weight, ratio=ratio, loss=loss, penalty=penalty,
                                  met=met)
    return terms, total, any_weighted_unmet


def _observe(name: GateName, metrics: Metrics, required: bool) -> Observation:
    try:
        return observe(GATES[name], metrics)
    except MetricsFileError as exc:
        if required:
            raise
        # a malformed key of a gate the task does not use must not block the reward
        return Observation(name, Observed.UNMEASURED, f"not evaluated: {exc}")


def _status(name: GateName, required: frozenset[GateName], obs: Observation,
            gate: int) -> GateStatus:
    if name not in required:
        return GateStatus.NOT_REQUIRED
    if obs.observed is Observed.UNMEASURED:
        assert gate == 0
        return GateStatus.NOT_MEASURED
    return GateStatus(obs.observed.value)


def _unmeasured_message(metrics: Metrics, observations: list[Observation]) -> str:
    parts = [f"gate '{o.gate.value}' is required but the metrics have {o.reason}"
             for o in observations]
    return f"{metrics.label()}: " + "; ".join(parts)


def _provenance(metrics: Metrics, loaded: LoadedTargets | None) -> Provenance:
    return Provenance(
        closer_version=__version__,
        metrics=[SourceInfo(path=s.path, kind=s.kind.value, sha256=s.sha256, files=list(s.files))
                 for s in metrics.sources],
        targets_path=loaded.path if loaded else None,
        targets_sha256=loaded.sha256 if loaded else None,
        run={k: v for k, v in sorted(metrics.values.items()) if k.startswith("run__")},
    )


@dataclass
class _Resolver:
    """Looks up raw and derived metric values, recording what it read."""

    metrics: Metrics
    spec: Targets
    allow_missing: bool

    def __post_init__(self) -> None:
        self.used: dict[str, object] = {}
        self.derived: dict[str, DerivedValue] = {}
        self.broken: dict[str, str] = {}  # gate -> why a derived value is not finite or not > 0
        self._clock_note = ""

    def term_value(self, term: str, metric: str) -> float | None:
        value = self.value(metric, needed_by=f"target '{term}'")
        if value is not None and value <= 0:
            where = self.metrics.where(metric) if metric in self.metrics.values else self.metrics.label()
            raise MetricsFileError(
                f"{where}: metric '{metric}' of target '{term}' is {value!r}; it must be > 0 "
                "because the reward takes log(value / target)"
            )
        return value

    def value(self, name: str, needed_by: str) -> float | None:
        if name in self.metrics.values:
            number = require_number(self.metrics.values[name], name, self.metrics.where(name))
            self.used[name] = number
            return number
        if name == mk.CLOCK_PERIOD:
            return self._clock_period(needed_by)
        if name in mk.DERIVED:
            return self._derived(mk.DERIVED[name], needed_by)
        if self.allow_missing and mk.looks_like_key(name):
            return None
        raise MetricNotFound(self._not_found(name, needed_by))

    def _derived(self, derived: mk.DerivedMetric, needed_by: str) -> float | None:
        if derived.name in self.derived:
            return self.derived[derived.name].value
        inputs: dict[str, float] = {}
        for name in derived.inputs:
            value = self.value(name, needed_by=f"{needed_by} via {derived.name} "
                                              f"({derived.formula})")
            if value is None:
                return None
            inputs[name] = value
        result = derived.compute(*inputs.values())
        if not math.isfinite(result) or result <= 0:
            self.broken.setdefault(derived.gate, (
                f"derived metric '{derived.name}' = {derived.formula} is {result!r} from {inputs}; "
                "it must be finite and > 0"))
            return None
        note = self._clock_note if mk.CLOCK_PERIOD in inputs else ""
        self.derived[derived.name] = DerivedValue(value=result, unit=derived.unit,
                                                  formula=derived.formula, inputs=inputs, note=note)
        return result

    def _clock_period(self, needed_by: str) -> float | None:
        if self.spec.clock_period is not None:
            self._clock_note = "clock_period from the targets file"
            return self.spec.clock_period
        details = self.metrics.values.get(mk.CLOCKS_DETAILS)
        if details is None:
            if self.allow_missing:
                return None
            raise MetricNotFound(
                f"{self.metrics.label()}: {needed_by} needs the clock period, but the metrics "
                f"have no '{mk.CLOCKS_DETAILS}' (ORFS's per-stage logs lack it; genMetrics.py adds "
                "it to metadata.json) and the targets file sets no clock_period"
            )
        where = self.metrics.where(mk.CLOCKS_DETAILS)
        try:
            clocks = mk.parse_clock_details(details)
        except ValueError as exc:
            raise MetricsFileError(f"{where}: key '{mk.CLOCKS_DETAILS}': {exc}") from None
        if len(clocks) != 1:
            raise MetricsFileError(
                f"{where}: key '{mk.CLOCKS_DETAILS}' lists {len(clocks)} clocks {sorted(clocks)}; "
                "set clock_period in the targets file to say which period to use"
            )
        self.used[mk.CLOCKS_DETAILS] = details
        (name, period), = clocks.items()
        self._clock_note = f"clock_period from {mk.CLOCKS_DETAILS} (clock '{name}')"
        return period

    def _not_found(self, name: str, needed_by: str) -> str:
        candidates = list(self.metrics.values) + list(mk.DERIVED)
        close = difflib.get_close_matches(name, candidates, n=5, cutoff=0.6)
        if not close:
            close = difflib.get_close_matches(name, candidates, n=5, cutoff=0.3)
        hint = f"; closest keys: {', '.join(close)}" if close else ""
        return (f"{self.metrics.label()}: {needed_by} names metric '{name}', which the metrics do "
                f"not have{hint}")
