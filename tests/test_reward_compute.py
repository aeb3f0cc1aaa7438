"""The reward number on the fixtures, derived metrics, strictness of term values, and the JSON
output against its schema."""

from __future__ import annotations

import json
import math

import jsonschema
import pytest

from closer import metrics as mk
from closer.paths import repo_paths, schema_path
from closer.reward import (
    MetricNotFound, MetricsFileError, compute_reward, load_metrics, load_targets,
)
from closer.reward.frame import score_records
from closer.reward.schemas import SCHEMA_MODELS, render

from tests.test_reward_support import (
    GCD_CLOSER, GCD_LOGS, GCD_METADATA, TARGETS, closer_values, make_targets, metrics_of,
)


def test_issue_example_on_gcd_metadata():
    result = compute_reward(load_metrics(GCD_METADATA), load_targets(TARGETS / "gcd_route.toml"))
    # gcd at a 1.1 ns clock with setup WS -1.62909 ns: effective period 2.72909 ns
    assert result.derived["effective_clock_period"].value == 1.1 - -1.62909
    expected = math.exp(-(math.log(4503.07 / 4000.0) + math.log((1.1 + 1.62909) / 2.0)))
    assert result.reward == expected
    assert 0.65 < result.reward < 0.66
    assert result.gate == 1 and result.gates["route"] == "pass"
    assert result.terms["area"].met is False and result.terms["delay"].penalty > 0
    assert result.metrics_used["detailedroute__route__drc_errors"] == 0
    assert result.metrics_used["constraints__clocks__details"] == ["core_clock: 1.1000"]
    assert result.provenance.run["run__flow__platform"] == "sky130hd"
    assert result.provenance.targets_sha256 and result.provenance.metrics[0].sha256


def test_log_dir_needs_clock_period_from_targets():
    with pytest.raises(MetricNotFound, match="no 'constraints__clocks__details'.*clock_period"):
        compute_reward(load_metrics(GCD_LOGS), load_targets(TARGETS / "gcd_route.toml"))
    from_logs = compute_reward(load_metrics(GCD_LOGS), load_targets(TARGETS / "gcd_route_clock.toml"))
    from_metadata = compute_reward(load_metrics(GCD_METADATA), load_targets(TARGETS / "gcd_route.toml"))
    assert from_logs.reward == from_metadata.reward
    assert "targets file" in from_logs.derived["effective_clock_period"].note


def test_all_gates_with_energy_on_closer_metrics():
    result = compute_reward(load_metrics(GCD_CLOSER), load_targets(TARGETS / "gcd_all_gates.toml"))
    assert set(result.gates.values()) == {"pass"}
    period = 5.0 - 2.38171
    assert result.derived["execution_time"].value == 1838 * period
    assert result.derived["energy"].value == 0.00151253 * (1838 * period)
    total = (math.log(3187.41 / 3000.0) * 1.0 + math.log(period / 2.5) * 2.0
             + math.log(0.00151253 * (1838 * period) / 6.0) * 0.5)
    assert result.reward == pytest.approx(math.exp(-total), rel=1e-15)


def test_met_targets_give_exactly_one():
    result = compute_reward(load_metrics(GCD_CLOSER), load_targets(TARGETS / "gcd_met.toml"))
    assert result.reward == 1.0 and result.penalty_total == 0.0
    assert all(t.met for t in result.terms.values())


def test_targets_clock_period_overrides_the_sdc_clock():
    values = closer_values()
    spec = make_targets([], [("delay", "effective_clock_period", 2.0, 1.0)], clock_period=4.0)
    result = compute_reward(metrics_of(values), spec)
    assert result.terms["delay"].value == 4.0 - 2.38171


def test_several_clocks_need_clock_period():
    values = closer_values()
    values["constraints__clocks__details"] = ["core_clock: 5.0000", "io_clock: 10.0000"]
    spec = make_targets([], [("delay", "effective_clock_period", 2.0, 1.0)])
    with pytest.raises(MetricsFileError, match=r"lists 2 clocks \['core_clock', 'io_clock'\]"):
        compute_reward(metrics_of(values), spec)


@pytest.mark.parametrize("details, pattern", [
    (["core_clock 5.0"], "expected '<clock>: <period>'"),
    (["core_clock: fast"], "is not a number"),
    (["core_clock: -1"], "must be finite and > 0"),
    ([], "non-empty list"),
])
def test_bad_clock_details(details, pattern):
    values = closer_values()
    values["constraints__clocks__details"] = details
    spec = make_targets([], [("delay", "effective_clock_period", 2.0, 1.0)])
    with pytest.raises(MetricsFileError, match=f"key 'constraints__clocks__details': .*{pattern}"):
        compute_reward(metrics_of(values), spec)


@pytest.mark.parametrize("key, value, pattern", [
    ("finish__design__instance__area", 0, "must be > 0 because the reward takes log"),
    ("finish__design__instance__area", -3.0, "must be > 0"),
    ("finish__design__instance__area", "3187.41", "must be a number, got str"),
    ("finish__design__instance__area", None, r"is null \(no value was measured\)"),
    ("finish__design__instance__area", [3187.41], "must be a number, got list"),
])
def test_bad_term_values_fail_naming_key(key, value, pattern):
    values = closer_values()
    values[key] = value
    spec = make_targets([], [("area", "finish__design__instance__area", 3000.0, 1.0)])
    with pytest.raises(MetricsFileError, match=f"perturbed.json: .*'{key}'.*{pattern}"):
        compute_reward(metrics_of(values), spec)


@pytest.mark.parametrize("ws, required", [(6.0, ["sta"]), (5.0, ["sta"]), (6.0, [])])
def test_effective_period_not_positive_fails_the_sta_gate(ws, required):
    """More setup slack than the clock period (issue 16: `set_max_delay 14` on a 4 ns clock gave
    execution time -14,992 and an unscored run): the sta gate fails, the reward is 0, scored."""
    values = closer_values()
    values["finish__timing__setup__ws"] = ws  # the period is 5 ns
    spec = make_targets(required, [("time", "execution_time", 40000.0, 1.0),
                                   ("delay", "effective_clock_period", 2.0, 1.0)])
    result = compute_reward(metrics_of(values), spec)
    assert result.reward == 0.0 and result.gate == 0
    assert result.gates["sta"] == "fail"
    assert "effective_clock_period" in result.gate_details["sta"].reason
    assert result.terms["time"].value is None and "execution_time" not in result.derived
    frame = score_records([values], spec)
    assert frame["reward"].tolist() == [0.0] and frame["gate"].tolist() == [0]


def test_positive_effective_period_still_scores():
    values = closer_values()
    values["finish__timing__setup__ws"] = 4.0
    spec = make_targets(["sta"], [("delay", "effective_clock_period", 2.0, 1.0)])
    result = compute_reward(metrics_of(values), spec)
    assert result.gate == 1 and result.derived["effective_clock_period"].value == pytest.approx(1.0)
    assert score_records([values], spec)["reward"].tolist() == [result.reward]


def test_unknown_metric_lists_closest_keys():
    spec = make_targets([], [("power", "finish__power__totl", 0.001, 1.0)])
    with pytest.raises(MetricNotFound, match="target 'power' names metric 'finish__power__totl'.*"
                                             "closest keys: finish__power__total"):
        compute_reward(load_metrics(GCD_METADATA), spec)
    spec = make_targets([], [("delay", "effective_clock_periods", 2.0, 1.0)])
    with pytest.raises(MetricNotFound, match="closest keys: effective_clock_period"):
        compute_reward(load_metrics(GCD_METADATA), spec)


def test_weight_zero_target_is_reported_but_free():
    spec = make_targets([], [("area", "finish__design__instance__area", 100.0, 0.0)])
    result = compute_reward(load_metrics(GCD_METADATA), spec)
    assert result.reward == 1.0 and result.terms["area"].met is False
    assert result.terms["area"].penalty == 0.0


def test_unmet_target_below_rounding_still_is_below_one():
    value = 3187.41
    spec = make_targets([], [("area", "finish__design__instance__area", value, 1e-300)])
    values = closer_values()
    values["finish__design__instance__area"] = math.nextafter(value, math.inf)
    result = compute_reward(metrics_of(values), spec)
    assert result.reward == math.nextafter(1.0, 0.0)


def test_json_output_validates_against_schema():
    schema = json.loads(schema_path("reward").read_text())
    for targets in ("gcd_all_gates", "gcd_met"):
        result = compute_reward(load_metrics(GCD_CLOSER), load_targets(TARGETS / f"{targets}.toml"))
        jsonschema.validate(result.model_dump(mode="json"), schema)
    failed = closer_values()
    failed["closer__func__tests_failed"] = 1
    for key in [k for k in failed if k.startswith("finish__")]:
        del failed[key]
    result = compute_reward(metrics_of(failed), load_targets(TARGETS / "gcd_met.toml").targets)
    dumped = result.model_dump(mode="json")
    jsonschema.validate(dumped, schema)
    assert dumped["reward"] == 0.0 and dumped["terms"]["area"]["value"] is None


def test_targets_schema_accepts_fixture_targets():
    import tomllib
    schema = json.loads(schema_path("targets").read_text())
    for path in TARGETS.glob("*.toml"):
        jsonschema.validate(tomllib.loads(path.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"gates": {"required": ["route"]},
                             "targets": [{"name": "a", "metric": "m", "target": 0, "weight": 1}]},
                            schema)


@pytest.mark.parametrize("name", list(SCHEMA_MODELS))
def test_committed_schemas_match_models(name: str):
    assert schema_path(name).read_text() == render(name), \
        "run: .venv/bin/python -m closer.reward.schemas"


def test_docs_tables_match_declarations():
    from closer.reward.gates import gate_table_markdown
    doc = (repo_paths().docs / "reward.md").read_text()
    assert gate_table_markdown() in doc, "regenerate the gate table in docs/reward.md"
    assert mk.markdown_tables() in doc, "regenerate the metric tables in docs/reward.md"


def test_stage_effective_clock_period_for_tasks_that_stop_early():
    values = {"synth__timing__setup__ws": -0.4213, "synth__design__instance__area__stdcell": 2641.28,
              "constraints__clocks__details": ["core_clock: 5.0000"]}
    spec = make_targets([], [("delay", "synth_effective_clock_period", 5.0, 1.0),
                             ("area", "synth__design__instance__area__stdcell", 2000.0, 1.0)])
    result = compute_reward(metrics_of(values), spec)
    assert result.terms["delay"].value == 5.0 + 0.4213
    assert result.derived["synth_effective_clock_period"].formula == \
        "clock_period − synth__timing__setup__ws"
    assert result.reward == math.exp(-(math.log((5.0 + 0.4213) / 5.0) + math.log(2641.28 / 2000.0)))
