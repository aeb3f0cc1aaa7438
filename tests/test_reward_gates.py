"""Every gate two ways: passes on the clean gcd result, fails on a perturbed copy. Unmeasured
required gates are errors, never a pass or a silent 0."""

from __future__ import annotations

import json

import pytest

from closer.reward import GateUnmeasured, MetricsFileError, compute_reward
from closer.reward.gates import GATES, gate_table_markdown
from closer.reward.models import result_json

from tests.test_reward_support import ALL_GATES, closer_values, make_targets, metrics_of

AREA = ("area", "finish__design__instance__area", 3500.0, 1.0)


def _score(values: dict, required):
    return compute_reward(metrics_of(values), make_targets(required, [AREA]))


# gate -> perturbations that must make it fail (each a dict of keys to set, None = delete)
PERTURBATIONS = {
    "func": [{"closer__func__tests_failed": 1}, {"closer__func__tests_total": 0}],
    "lec": [{"closer__lec__result": "not_equivalent"}, {"closer__lec__result": "inconclusive"}],
    "gls": [{"closer__gls__tests_failed": 2}, {"closer__gls__tests_total": 0}],
    "sta": [
        {"finish__timing__hold__ws": -0.012},
        {"finish__timing__hold__ws__corner__ff_n40C_1v95": -0.0031},  # one corner only
        {"finish__timing__drv__max_slew": 3},
        {"finish__timing__drv__max_slew__corner__ss_100C_1v60": 1},
        {"finish__timing__drv__max_cap__corner__tt_025C_1v80": 2},
        {"closer__timing__unconstrained_endpoints": 4},
    ],
    "route": [
        {"detailedroute__route__drc_errors": 7},
        {"detailedroute__route__drc_errors": None},  # only iteration keys: did not finish
        {"closer__route__unrouted_nets": 3},  # route DRC-clean but nets left open
    ],
    "drc": [{"closer__signoff__drc_errors": 12}],
    "lvs": [{"closer__signoff__lvs_errors": 1}],
}


def _perturbed(changes: dict) -> dict:
    values = closer_values()
    for key, value in changes.items():
        if value is None:
            del values[key]
        else:
            values[key] = value
    return values


@pytest.mark.parametrize("gate", ALL_GATES)
def test_gate_passes_on_clean_result(gate: str):
    result = _score(closer_values(), [gate])
    assert result.gates[gate] == "pass"
    assert result.gate == 1
    assert result.reward == 1.0


@pytest.mark.parametrize("gate, changes",
                         [(g, c) for g, cs in PERTURBATIONS.items() for c in cs],
                         ids=lambda v: v if isinstance(v, str) else ",".join(v))
def test_gate_fails_on_perturbed_result(gate: str, changes: dict):
    result = _score(_perturbed(changes), [gate])
    assert result.gates[gate] == "fail", result.gate_details[gate]
    assert result.gate == 0
    assert result.reward == 0.0
    # the same perturbation does not matter when the gate is not required
    relaxed = _score(_perturbed(changes), [])
    assert relaxed.gates[gate] == "not_required"
    assert relaxed.gate_details[gate].observed == "fail"
    assert relaxed.reward == 1.0


def test_route_unfinished_reason_names_the_iteration():
    result = _score(_perturbed({"detailedroute__route__drc_errors": None}), ["route"])
    assert "did not finish" in result.gate_details["route"].reason
    assert "detailedroute__route__drc_errors__iter__2" in result.gate_details["route"].reason


def test_sta_reads_every_reported_corner():
    result = _score(closer_values(), ["sta"])
    read = result.gate_details["sta"].values
    for corner in ("ff_n40C_1v95", "ss_100C_1v60", "tt_025C_1v80"):
        assert f"finish__timing__hold__ws__corner__{corner}" in read
        assert f"finish__timing__drv__max_slew__corner__{corner}" in read


def test_sta_with_corners_only_and_no_unconstrained_key_is_measured():
    values = _perturbed({"finish__timing__hold__ws": None, "finish__timing__drv__max_slew": None,
                         "finish__timing__drv__max_cap": None,
                         "closer__timing__unconstrained_endpoints": None})
    assert _score(values, ["sta"]).gates["sta"] == "pass"


@pytest.mark.parametrize("gate, missing, phrase", [
    ("func", "closer__func__tests_failed", "no functional test result"),
    ("lec", "closer__lec__result", "no equivalence-check result"),
    ("gls", "closer__gls__tests_failed", "no gate-level simulation result"),
    ("sta", "finish__timing__drv__max_cap", "no finish-stage timing metrics"),
    ("route", "detailedroute__route__drc_errors", "no detailed-routing result"),
    ("drc", "closer__signoff__drc_errors", "no signoff DRC count"),
    ("lvs", "closer__signoff__lvs_errors", "no signoff LVS result"),
])
def test_required_unmeasured_gate_is_an_error(gate: str, missing: str, phrase: str):
    values = {k: v for k, v in closer_values().items()
              if not (k == missing or k.startswith(missing + "__"))}
    with pytest.raises(GateUnmeasured, match=f"gate '{gate}' is required but the metrics have "
                                             f"{phrase}") as info:
        _score(values, [gate])
    assert info.value.gates == [gate]
    # not required: reported, not an error
    assert _score(values, []).gate_details[gate].observed == "unmeasured"


def test_failed_gate_makes_later_unmeasured_gates_not_measured():
    values = {k: v for k, v in closer_values().items()
              if not k.startswith(("closer__signoff__", "finish__", "detailedroute__"))}
    values["closer__func__tests_failed"] = 3
    result = _score(values, ALL_GATES)
    assert result.reward == 0.0 and result.gate == 0
    assert result.gates["func"] == "fail"
    assert result.gates["drc"] == "not_measured"
    assert result.terms["area"].value is None and result.penalty_total is None


@pytest.mark.parametrize("key, value, pattern", [
    ("closer__signoff__drc_errors", -1, "is a count and must be a non-negative integer"),
    ("closer__signoff__drc_errors", 1.5, "is a count and must be a non-negative integer"),
    ("closer__signoff__drc_errors", "0", "must be a number, got str"),
    ("closer__signoff__drc_errors", True, "must be a number, got bool"),
    ("closer__lec__result", "pass", r"must be one of \['equivalent'"),
    ("closer__lec__result", 1, r"must be one of \['equivalent'"),
    ("finish__timing__hold__ws__corner__ss_100C_1v60", "ERR", "must be a number, got str 'ERR'"),
])
def test_malformed_gate_value_is_an_error_when_required(key: str, value, pattern: str):
    values = _perturbed({key: value})
    gate = next(g for g, gd in GATES.items() if any(key.startswith(c.key) for c in gd.checks))
    with pytest.raises(MetricsFileError, match=f"perturbed.json: key '{key}' {pattern}"):
        _score(values, [gate.value])
    # a gate the task does not require is reported as not evaluated instead
    assert "not evaluated" in _score(values, []).gate_details[gate.value].reason


def test_gate_table_lists_every_gate():
    table = gate_table_markdown()
    for gate in ALL_GATES:
        assert f"| {gate} |" in table


def test_null_slack_means_no_path_checked_and_passes():
    values = closer_values()
    values["finish__timing__hold__ws__corner__ss_100C_1v60"] = None
    result = _score(values, ["sta"])
    assert result.gates["sta"] == "pass"
    assert result.gate_details["sta"].values["finish__timing__hold__ws__corner__ss_100C_1v60"] is None
    json.loads(result_json(result), parse_constant=pytest.fail)  # strict JSON, no Infinity


def test_null_count_is_an_error():
    values = closer_values()
    values["closer__signoff__drc_errors"] = None
    with pytest.raises(MetricsFileError, match="'closer__signoff__drc_errors' is null"):
        _score(values, ["drc"])


def test_route_gate_passes_with_zero_unrouted_nets():
    result = _score(_perturbed({"closer__route__unrouted_nets": 0}), ["route"])
    assert result.gates["route"] == "pass"
