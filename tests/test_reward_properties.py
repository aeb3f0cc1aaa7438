"""Property tests (hypothesis) of R, and bit-exact agreement of the scalar and vectorized paths."""

from __future__ import annotations

import math
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from closer.reward import compute_reward
from closer.reward.frame import score_records

from tests.test_reward_support import ALL_GATES, closer_values, make_targets, metrics_of

FAILING = {  # one measured failure per gate
    "func": ("closer__func__tests_failed", 1),
    "lec": ("closer__lec__result", "not_equivalent"),
    "gls": ("closer__gls__tests_failed", 1),
    "sta": ("finish__timing__hold__ws__corner__ff_n40C_1v95", -0.004),
    "route": ("detailedroute__route__drc_errors", 3),
    "drc": ("closer__signoff__drc_errors", 2),
    "lvs": ("closer__signoff__lvs_errors", 1),
    "antenna": ("detailedroute__antenna__violating__nets", 2),
}
BASE = closer_values()

positive = st.floats(min_value=1e-9, max_value=1e9, allow_nan=False, allow_infinity=False)
weight = st.one_of(st.just(0.0), st.floats(min_value=0.0, max_value=20.0, allow_nan=False))


@st.composite
def cases(draw, min_terms=1):
    n = draw(st.integers(min_terms, 4))
    values = draw(st.lists(positive, min_size=n, max_size=n))
    targets = draw(st.lists(positive, min_size=n, max_size=n))
    weights = draw(st.lists(weight, min_size=n, max_size=n))
    required = draw(st.lists(st.sampled_from(ALL_GATES), unique=True))
    failing = draw(st.lists(st.sampled_from(ALL_GATES), unique=True))
    return values, targets, weights, required, failing


def _record(values, failing) -> dict:
    record = dict(BASE)
    for j, value in enumerate(values):
        record[f"finish__custom__metric{j}"] = value
    for gate in failing:
        key, bad = FAILING[gate]
        record[key] = bad
    return record


def _targets(targets, weights, required):
    terms = [(f"m{j}", f"finish__custom__metric{j}", t, w)
             for j, (t, w) in enumerate(zip(targets, weights))]
    return make_targets(required, terms)


def _reward(values, targets, weights, required, failing) -> float:
    return compute_reward(metrics_of(_record(values, failing)),
                          _targets(targets, weights, required)).reward


@settings(max_examples=300, deadline=None)
@given(cases())
def test_reward_is_in_unit_interval(case):
    assert 0.0 <= _reward(*case) <= 1.0


@settings(max_examples=300, deadline=None)
@given(cases(), st.data())
def test_improving_any_metric_never_lowers_reward(case, data):
    values, targets, weights, required, failing = case
    j = data.draw(st.integers(0, len(values) - 1))
    better = data.draw(st.floats(min_value=1e-9, max_value=values[j], allow_nan=False))
    improved = list(values)
    improved[j] = better
    assert _reward(improved, targets, weights, required, failing) >= \
        _reward(values, targets, weights, required, failing)


@settings(max_examples=300, deadline=None)
@given(cases())
def test_reward_is_one_exactly_when_gates_pass_and_targets_met(case):
    values, targets, weights, required, failing = case
    gates_pass = not (set(required) & set(failing))
    all_met = all(v <= t for v, t, w in zip(values, targets, weights) if w > 0)
    assert (_reward(*case) == 1.0) == (gates_pass and all_met)


@settings(max_examples=200, deadline=None)
@given(cases(), st.sampled_from(ALL_GATES))
def test_failed_required_gate_gives_zero(case, gate):
    values, targets, weights, required, failing = case
    assert _reward(values, targets, weights, sorted({*required, gate}),
                   sorted({*failing, gate})) == 0.0


@settings(max_examples=200, deadline=None)
@given(cases(), st.floats(min_value=1.0, max_value=1e6, allow_nan=False))
def test_reward_is_continuous_toward_an_unmet_target(case, factor):
    """Moving an unmet value a tiny step toward its target changes R by a tiny amount."""
    values, targets, weights, required, _ = case
    values = [t * factor * 1.5 for t in targets]  # every target unmet
    nudged = [values[0] * (1 - 1e-9)] + values[1:]
    r0 = _reward(values, targets, weights, required, [])
    r1 = _reward(nudged, targets, weights, required, [])
    assert r1 >= r0 and r1 - r0 <= 1e-8 * (weights[0] + 1)


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 4).flatmap(lambda n: st.tuples(
    st.lists(positive, min_size=n, max_size=n), st.lists(weight, min_size=n, max_size=n),
    st.lists(st.sampled_from(ALL_GATES), unique=True),
    st.lists(st.tuples(st.lists(positive, min_size=n, max_size=n),
                       st.lists(st.sampled_from(ALL_GATES), unique=True)), min_size=1, max_size=12))))
def test_vectorized_path_matches_scalar_bit_for_bit(args):
    targets, weights, required, rows = args
    spec = _targets(targets, weights, required)
    records = [metrics_of(_record(values, failing)) for values, failing in rows]
    frame = score_records(records, spec)
    for i, record in enumerate(records):
        scalar = compute_reward(record, spec)
        assert _bits(frame["reward"].iloc[i]) == _bits(scalar.reward)
        assert frame["gate"].iloc[i] == scalar.gate
        for name, term in scalar.terms.items():
            assert frame[f"{name}.value"].iloc[i] == term.value
            assert frame[f"{name}.penalty"].iloc[i] == term.penalty


def test_vectorized_path_on_fixture_with_derived_metrics():
    from closer.reward import load_metrics, load_targets
    from tests.test_reward_support import GCD_CLOSER, GCD_METADATA, TARGETS
    for targets_name in ("gcd_all_gates", "gcd_met", "gcd_route"):
        spec = load_targets(TARGETS / f"{targets_name}.toml")
        records = [load_metrics(GCD_CLOSER)]
        if targets_name == "gcd_route":
            records.append(load_metrics(GCD_METADATA))
        frame = score_records(records, spec)
        for i, record in enumerate(records):
            assert _bits(frame["reward"].iloc[i]) == _bits(compute_reward(record, spec).reward)
    assert math.isfinite(frame["reward"].sum())
