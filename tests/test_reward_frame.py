"""The vectorized path is as strict as the scalar one, and agrees with it on gate outcomes."""

from __future__ import annotations

import pytest

from closer.reward import GateUnmeasured, MetricNotFound, MetricsFileError, compute_reward
from closer.reward.frame import score_records

from tests.test_reward_gates import PERTURBATIONS, _perturbed
from tests.test_reward_support import ALL_GATES, closer_values, make_targets, metrics_of

AREA = ("area", "finish__design__instance__area", 3500.0, 1.0)
DELAY = ("delay", "effective_clock_period", 2.5, 1.0)


def test_every_gate_perturbation_fails_in_frame_and_scalar():
    cases = [(g, c) for g, cs in PERTURBATIONS.items() for c in cs]
    records = [metrics_of(closer_values())] + [metrics_of(_perturbed(c)) for _, c in cases]
    for gate in ALL_GATES:
        spec = make_targets([gate], [AREA, DELAY])
        frame = score_records(records, spec)
        for i, record in enumerate(records):
            assert frame["gate"].iloc[i] == compute_reward(record, spec).gate, (gate, i)
        expected_fail = [i + 1 for i, (g, _) in enumerate(cases) if g == gate]
        assert list(frame.index[frame["gate"] == 0]) == expected_fail


def test_unmeasured_required_gate_raises():
    values = closer_values()
    del values["closer__signoff__drc_errors"]
    with pytest.raises(GateUnmeasured, match="1 of 2 results lack a measurement"):
        score_records([metrics_of(closer_values()), metrics_of(values)], make_targets(["drc"], [AREA]))


def test_unmeasured_gate_after_failed_gate_gives_zero():
    values = closer_values()
    del values["closer__signoff__drc_errors"]
    del values["finish__design__instance__area"]
    values["closer__func__tests_failed"] = 1
    frame = score_records([metrics_of(values)], make_targets(["func", "drc"], [AREA]))
    assert frame["reward"].iloc[0] == 0.0 and frame["gate"].iloc[0] == 0


@pytest.mark.parametrize("key, value, error, pattern", [
    ("finish__design__instance__area", "3187", MetricsFileError, "must be a number, got str"),
    ("finish__design__instance__area", -1.0, MetricsFileError, "must be > 0"),
    ("closer__signoff__drc_errors", 0.5, MetricsFileError, "non-negative integer"),
    ("closer__lec__result", "yes", MetricsFileError, "must be one of"),
    ("finish__timing__hold__ws__corner__ss_100C_1v60", "N/A", MetricsFileError, "must be a number"),
])
def test_bad_values_raise(key, value, error, pattern):
    values = closer_values()
    values[key] = value
    with pytest.raises(error, match=pattern):
        score_records([metrics_of(closer_values()), metrics_of(values)],
                      make_targets(ALL_GATES, [AREA, DELAY]))


def test_missing_metric_raises_when_gate_passes():
    values = closer_values()
    del values["finish__timing__setup__ws"]
    with pytest.raises(MetricNotFound, match="row 1: target 'delay'"):
        score_records([metrics_of(closer_values()), metrics_of(values)], make_targets([], [DELAY]))
    with pytest.raises(MetricNotFound, match="no result has"):
        score_records([metrics_of(closer_values())], make_targets([], [("x", "areaa", 1.0, 1.0)]))


def test_null_slack_agrees_between_paths():
    values = closer_values()
    for key in [k for k in values if k.startswith("finish__timing__hold__ws")]:
        values[key] = None
    spec = make_targets(["sta"], [AREA])
    frame = score_records([metrics_of(values)], spec)
    assert frame["gate"].iloc[0] == compute_reward(metrics_of(values), spec).gate == 1
