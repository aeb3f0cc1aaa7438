"""The column scorer (`columns.score_columns`, no pandas) against the scalar path: every result it
decides is `compute_reward`'s bit for bit; every result the scalar path refuses it leaves
undecided (two-way: clean results are decided, perturbed ones are not passed)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from closer.errors import InputError
from closer.reward import compute_reward, load_metrics, load_targets
from closer.reward.columns import MISSING, Scored, needed_keys, score_columns

from tests.test_reward_gates import PERTURBATIONS, _perturbed
from tests.test_reward_support import ALL_GATES, GCD_CLOSER, GCD_METADATA, TARGETS, closer_values, make_targets, metrics_of

AREA = ("area", "finish__design__instance__area", 3500.0, 1.0)
DELAY = ("delay", "effective_clock_period", 2.5, 2.0)
ENERGY = ("energy", "energy", 6.0, 0.5)
CLOCKS = "constraints__clocks__details"
# values the scalar path refuses or treats specially, on the keys scoring reads
HOSTILE = [
    {"finish__design__instance__area": "3187"}, {"finish__design__instance__area": -1.0},
    {"finish__design__instance__area": 0}, {"finish__design__instance__area": None},
    {"finish__design__instance__area": True}, {"finish__design__instance__area": MISSING},
    {"closer__signoff__drc_errors": 0.5}, {"closer__signoff__drc_errors": -1},
    {"closer__signoff__drc_errors": 2.0}, {"closer__signoff__drc_errors": MISSING},
    {"closer__lec__result": "yes"}, {"closer__lec__result": 1},
    {"finish__timing__hold__ws__corner__ss_100C_1v60": "N/A"},
    {"finish__timing__hold__ws__corner__ss_100C_1v60": None}, {"finish__timing__hold__ws": None},
    {"finish__timing__setup__ws": None}, {"finish__timing__setup__ws": MISSING},
    {"finish__timing__setup__ws": 9.0},  # a period below 0: the derived delay is broken
    {CLOCKS: ["a: 1.0", "b: 2.0"]}, {CLOCKS: "core_clock: 5.0"}, {CLOCKS: MISSING}, {CLOCKS: ["x"]},
    {"closer__sim__cycles": MISSING}, {"closer__sim__cycles": "many"},
    {"finish__power__total": MISSING}, {"finish__power__total": 1e30, "closer__sim__cycles": 10**25},
    {"detailedroute__route__drc_errors": MISSING},
    {"closer__func__tests_failed": 1, "finish__design__instance__area": MISSING},
]


def _apply(values: dict, changes: dict) -> dict:
    values = dict(values)
    for key, value in changes.items():
        if value is MISSING:
            values.pop(key, None)
        else:
            values[key] = value
    return values


def _columns(records: list[dict], spec) -> dict[str, list]:
    keys = list(dict.fromkeys(k for r in records for k in r))
    return {k: [r.get(k, MISSING) for r in records] for k in needed_keys(keys, spec)}


def _bits(value):
    return value if not isinstance(value, float) else struct.pack("<d", value)


def _readable(records: list[dict]) -> list[dict]:
    """The records the metrics readers accept (the batch scores no other)."""
    readable = []
    for values in records:
        try:
            metrics_of(values)
        except InputError:
            continue
        readable.append(values)
    return readable


def _assert_decided_like_scalar(records: list[dict], spec) -> Scored:
    records = _readable(records)
    scored = score_columns(_columns(records, spec), len(records), spec)
    for row, values in enumerate(records):
        try:
            scalar = compute_reward(metrics_of(values), spec)
        except InputError:
            assert row in scored.undecided, (row, values)  # refused by the scalar path: never passed
            continue
        if row in scored.undecided:
            continue
        assert _bits(scored.reward[row]) == _bits(scalar.reward), row
        assert scored.gate[row] == scalar.gate
        assert _bits(scored.penalty_total[row]) == _bits(scalar.penalty_total)
        for name, term in scalar.terms.items():
            mine = scored.terms[name]
            got = (mine.value[row], mine.ratio[row], mine.loss[row], mine.penalty[row], mine.met[row])
            assert tuple(map(_bits, got)) == tuple(map(_bits, (term.value, term.ratio, term.loss,
                                                               term.penalty, term.met))), (row, name)
    return scored


def test_clean_and_gate_perturbed_results_are_decided_like_the_scalar_path():
    cases = [c for cs in PERTURBATIONS.values() for c in cs]
    records = [closer_values()] + [_perturbed(c) for c in cases]
    for gate in ALL_GATES:
        scored = _assert_decided_like_scalar(records, make_targets([gate], [AREA, DELAY, ENERGY]))
        assert not scored.undecided, gate  # all of them are scored column-wise
        assert scored.gate[0] == 1 and (0 in scored.gate) == (gate in PERTURBATIONS)


def test_hostile_values_are_left_to_the_scalar_path():
    records = [closer_values()] + [_apply(closer_values(), c) for c in HOSTILE]
    for required in (ALL_GATES, [], ["sta"], ["drc", "func"]):
        for terms in ([AREA, DELAY, ENERGY], [DELAY], [AREA]):
            scored = _assert_decided_like_scalar(records, make_targets(required, terms))
            assert 0 not in scored.undecided


def test_a_clock_period_from_the_targets_and_mixed_key_sets():
    records = [closer_values(), _apply(closer_values(), {CLOCKS: MISSING}),
               _apply(closer_values(), {"finish__timing__drv__max_cap__corner__ss_100C_1v60": MISSING})]
    spec = make_targets(ALL_GATES, [AREA, DELAY, ENERGY], clock_period=4.0)
    scored = _assert_decided_like_scalar(records, spec)
    assert not scored.undecided


def test_unknown_metric_and_empty_batch():
    scored = score_columns(_columns([closer_values()], make_targets([], [AREA])), 1,
                           make_targets([], [("x", "areaa", 1.0, 1.0)]))
    assert scored.undecided == {0}
    assert score_columns({}, 0, make_targets([], [AREA])).reward == []


def test_fixtures_with_derived_metrics():
    for name in ("gcd_all_gates", "gcd_met", "gcd_route"):
        spec = load_targets(TARGETS / f"{name}.toml").targets
        records = [dict(load_metrics(GCD_CLOSER).values), dict(load_metrics(GCD_METADATA).values)]
        _assert_decided_like_scalar(records, spec)


positive = st.floats(min_value=1e-9, max_value=1e9, allow_nan=False, allow_infinity=False)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(positive, positive, st.sampled_from([{}] * 4 + HOSTILE),
                          st.lists(st.sampled_from(ALL_GATES), unique=True)), min_size=1, max_size=10),
       st.lists(st.sampled_from(ALL_GATES), unique=True),
       st.lists(st.sampled_from([AREA, DELAY, ENERGY]), min_size=1, max_size=3, unique=True),
       st.sampled_from([None, 2.5]))
def test_any_mix_of_results_is_decided_like_the_scalar_path(rows, required, terms, clock_period):
    spec = make_targets(required, terms, clock_period=clock_period)
    records = []
    for area, slack, changes, failing in rows:
        values = _apply(closer_values(), {"finish__design__instance__area": area,
                                          "finish__timing__setup__ws": slack / 1e9 - 0.5})
        for gate in failing:
            values = _apply(values, PERTURBATIONS.get(gate, [{}])[0] if gate in PERTURBATIONS else {})
        records.append(_apply(values, changes))
    _assert_decided_like_scalar(records, spec)


@pytest.mark.parametrize("changes", [{}, {"closer__signoff__drc_errors": 3}])
def test_a_large_uniform_batch_is_decided(changes):
    """The column fast paths (no per-row loop) on one key set."""
    records = [_apply(closer_values(), {**changes, "finish__design__instance__area": 3000.0 + i})
               for i in range(200)]
    scored = _assert_decided_like_scalar(records, make_targets(ALL_GATES, [AREA, DELAY, ENERGY]))
    assert not scored.undecided
