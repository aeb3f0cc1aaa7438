"""The reward reads what Closer's own flow writes: recorded output of `closer flow run gcd --to sta`
(tests/fixtures/orfs/gcd_closer_flow_synth, real Yosys/OpenSTA numbers). The live end-to-end run
(flow, then reward) is tests/test_flow.py::test_reward_scores_gcd_metadata."""

from __future__ import annotations

import math

from closer.paths import repo_paths
from closer.reward import compute_reward, load_metrics, load_targets, targets_from_dict
from closer.reward.frame import score_records

from tests.test_reward_support import FIXTURES

RECORDED = FIXTURES / "gcd_closer_flow_synth"
GCD_TARGETS = repo_paths().design_dir("gcd") / "targets.toml"


def test_recorded_metadata_and_stage_dir_agree():
    from_metadata = load_metrics(RECORDED / "metadata.json")
    from_dir = load_metrics(RECORDED / "metrics")
    assert from_dir.sources[0].files == ("1_synth.json", "1_synth_sta.json")
    for key, value in from_dir.values.items():
        assert from_metadata.values[key] == value
    # the flow's nested corner map is flattened like ORFS --hier output
    assert from_metadata.values["run__flow__platform__corners__ff_n40C_1v95"] == ["hold"]


def test_design_targets_on_recorded_flow_output():
    metrics = load_metrics(RECORDED / "metadata.json")
    targets = load_targets(GCD_TARGETS)  # the design's own targets file (owned by designs/gcd)
    result = compute_reward(metrics, targets)
    total = 0.0
    for t in targets.targets.targets:
        value = result.terms[t.name].value
        if t.metric in metrics.values:
            assert value == metrics.values[t.metric]
        total += t.weight * max(0.0, math.log(value / t.target))
    assert result.gate == 1
    assert result.reward == math.exp(-total)
    assert result.provenance.run["run__closer__design_revision"] == "2f458663ce00e209"
    assert result.provenance.run["run__closer__tool_versions"].startswith("lint:verilator=")


def test_synth_stage_delay_target_on_recorded_flow_output():
    metrics = load_metrics(RECORDED / "metadata.json")
    spec = targets_from_dict({"gates": {"required": []}, "targets": [
        {"name": "delay", "metric": "synth_effective_clock_period", "target": 10.0, "weight": 1.0},
        {"name": "area", "metric": "synth__design__instance__area__stdcell", "target": 2000.0,
         "weight": 1.0}]})
    result = compute_reward(metrics, spec)
    period = 10.0 - metrics.values["synth__timing__setup__ws"]  # 10 ns core_clock from the SDC
    assert result.terms["delay"].value == period
    assert "core_clock" in result.derived["synth_effective_clock_period"].note
    frame = score_records([metrics], spec)
    assert frame["reward"].iloc[0] == result.reward
