"""`closer reward` and `closer reward pareto` as a user runs them (the real console script)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from closer.paths import repo_paths, schema_path
from closer.reward import compute_reward, metrics_from_mapping
from closer.reward.pareto import load_result, pareto_set

from tests.test_reward_support import (
    GCD_CLOSER, GCD_METADATA, TARGETS, closer_values, make_targets, write_json,
)

CLOSER = str(repo_paths().venv / "bin" / "closer")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CLOSER, "reward", *map(str, args)], capture_output=True, text=True,
                          timeout=60)


def test_table_output():
    proc = run("--metrics", GCD_METADATA, "--targets", TARGETS / "gcd_route.toml")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "gates" in out and "terms" in out
    assert "finish__design__instance__area" in out and "4503.07" in out
    assert "effective_clock_period = 2.72909 ns" in out
    assert "reward R = 0.650974" in out
    assert "platform sky130hd" in out


def test_json_output_and_merged_metrics(tmp_path: Path):
    signoff = write_json(tmp_path / "closer.json", {
        "closer__signoff__drc_errors": 0, "closer__signoff__lvs_errors": 0})
    proc = run("--metrics", GCD_METADATA, "--metrics", signoff,
               "--targets", TARGETS / "gcd_route.toml", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    jsonschema.validate(data, json.loads(schema_path("reward").read_text()))
    assert {"reward", "gate", "gates", "terms", "metrics_used"} <= set(data)
    assert data["gates"]["route"] == "pass" and data["gates"]["drc"] == "not_required"
    assert data["gate_details"]["drc"]["observed"] == "pass"
    assert data["terms"]["area"] == {**data["terms"]["area"], "metric": "finish__design__instance__area",
                                     "value": 4503.07, "target": 4000.0, "weight": 1.0}
    assert [m["path"] for m in data["provenance"]["metrics"]] == [str(GCD_METADATA), str(signoff)]


def test_zero_reward_still_exits_zero(tmp_path: Path):
    values = closer_values()
    values["closer__signoff__lvs_errors"] = 3
    path = write_json(tmp_path / "metrics.json", values)
    proc = run("--metrics", path, "--targets", TARGETS / "gcd_all_gates.toml", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["reward"] == 0.0 and data["gate"] == 0 and data["gates"]["lvs"] == "fail"


@pytest.mark.parametrize("change, message", [
    ({"finish__design__instance__area": "3187.41"},
     "key 'finish__design__instance__area' must be a number, got str"),
    ({"closer__signoff__drc_errors": None},
     "gate 'drc' is required but the metrics have no signoff DRC count"),
])
def test_invalid_input_exits_two_without_output(tmp_path: Path, change: dict, message: str):
    values = closer_values()
    for key, value in change.items():
        if value is None:
            del values[key]
        else:
            values[key] = value
    path = write_json(tmp_path / "metrics.json", values)
    proc = run("--metrics", path, "--targets", TARGETS / "gcd_all_gates.toml", "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert str(path) in proc.stderr and message in proc.stderr


def test_missing_options_is_a_usage_error():
    proc = run("--metrics", GCD_METADATA)
    assert proc.returncode == 2 and "--targets" in proc.stderr


def _result_file(tmp_path: Path, name: str, area: float, ws: float, targets) -> Path:
    values = closer_values()
    values["finish__design__instance__area"] = area
    values["finish__timing__setup__ws"] = ws
    result = compute_reward(metrics_from_mapping(values, name), targets)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(result.model_dump(mode="json")))
    return path


def test_pareto_shows_raw_values_the_saturated_reward_hides(tmp_path: Path):
    targets = make_targets(["route"], [("area", "finish__design__instance__area", 4000.0, 1.0),
                                       ("delay", "effective_clock_period", 3.0, 1.0)])
    small = _result_file(tmp_path, "small", 2900.0, 2.5, targets)     # R = 1, dominates big
    big = _result_file(tmp_path, "big", 3900.0, 2.1, targets)          # R = 1
    fast = _result_file(tmp_path, "fast", 3500.0, 2.9, targets)        # R = 1, faster than small
    slow = _result_file(tmp_path, "slow", 5000.0, 1.0, targets)        # R < 1, dominated
    for path in (small, big, fast):
        assert load_result(path).reward == 1.0
    proc = run("pareto", small, big, fast, slow, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    front = {Path(r["label"]).stem: r["values"] for r in data["pareto"]}
    assert set(front) == {"small", "fast"}
    assert front["small"] == {"area": 2900.0, "delay": 5.0 - 2.5}
    assert {Path(r["label"]).stem for r in data["dominated"]} == {"big", "slow"}
    text = run("pareto", small, big, fast, slow)
    assert text.returncode == 0 and "2900" in text.stdout and "Pareto set: 2 of 4" in text.stdout


def test_pareto_from_metrics_with_targets_and_infeasible(tmp_path: Path):
    values = closer_values()
    values["detailedroute__route__drc_errors"] = 5
    broken = write_json(tmp_path / "broken.json", values)
    proc = run("pareto", "--targets", TARGETS / "gcd_route.toml", GCD_METADATA, GCD_CLOSER, broken,
               "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [r["label"] for r in data["pareto"]] == [str(GCD_CLOSER)]
    assert [r["label"] for r in data["infeasible"]] == [str(broken)]


def test_pareto_rejects_mixed_targets_and_bad_files(tmp_path: Path):
    a = _result_file(tmp_path, "a", 3000.0, 2.0, make_targets(["route"], [
        ("area", "finish__design__instance__area", 4000.0, 1.0)]))
    b = _result_file(tmp_path, "b", 3000.0, 2.0, make_targets(["route"], [
        ("power", "finish__power__total", 0.001, 1.0)]))
    proc = run("pareto", a, b)
    assert proc.returncode == 2 and "differ" in proc.stderr and proc.stdout == ""
    bad = tmp_path / "bad.json"
    bad.write_text('{"reward": 2}')
    proc = run("pareto", a, bad)
    assert proc.returncode == 2 and "bad.json: not a reward result" in proc.stderr


def test_pareto_keeps_ties():
    targets = make_targets([], [("area", "finish__design__instance__area", 4000.0, 1.0)])
    result = compute_reward(metrics_from_mapping(closer_values(), "x"), targets)
    front = pareto_set([("one", result), ("two", result)])
    assert [r.label for r in front.front] == ["one", "two"]
