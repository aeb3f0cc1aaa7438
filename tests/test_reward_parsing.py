"""Reading ORFS metadata.json, per-stage log directories and Closer metrics files, strictly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from closer.reward import MetricsFileError, load_metrics
from closer.reward.metrics_file import SourceKind

from tests.test_reward_support import (
    GCD_CLOSER, GCD_LOGS, GCD_METADATA, GCD_METADATA_NEW_KEYS, write_json,
)


def test_metadata_keys_are_normalized_to_the_new_qualifier_spelling():
    metrics = load_metrics(GCD_METADATA)
    assert metrics.values["detailedroute__route__drc_errors__iter__0"] == 159
    assert not any(":" in key for key in metrics.values)
    assert metrics.sources[0].kind is SourceKind.ORFS_METADATA
    assert len(metrics.sources[0].sha256) == 64


def test_old_and_new_qualifier_spellings_read_the_same():
    assert load_metrics(GCD_METADATA).values == load_metrics(GCD_METADATA_NEW_KEYS).values


def test_log_dir_merges_into_what_metadata_json_holds():
    from_logs = load_metrics(GCD_LOGS)
    from_metadata = load_metrics(GCD_METADATA)
    assert from_logs.sources[0].kind is SourceKind.ORFS_LOG_DIR
    assert from_logs.sources[0].files[0] == "1_synth.json"
    assert from_logs.sources[0].files[-1] == "6_report.json"
    for key, value in from_logs.values.items():
        assert from_metadata.values[key] == value, key
    # 2_4_floorplan_pdn.json comes after 2_1_floorplan.json and its count wins
    assert from_logs.values["floorplan__design__instance__count"] == 595
    assert from_logs.origin["floorplan__design__instance__count"].endswith("2_4_floorplan_pdn.json")


def test_log_dir_stage_order_is_numeric_stage_then_name(tmp_path: Path):
    write_json(tmp_path / "6_report.json", {"x__y__z": 6})
    write_json(tmp_path / "5_2_route.json", {"x__y__z": 5})
    write_json(tmp_path / "1_synth.json", {"x__y__z": 1})
    write_json(tmp_path / "notes.json", {"x__y__z": 99})  # not a stage file: ignored
    assert load_metrics(tmp_path).values["x__y__z"] == 6


def test_closer_metrics_file_kind():
    metrics = load_metrics(GCD_CLOSER)
    assert metrics.sources[0].kind is SourceKind.CLOSER_METRICS
    assert metrics.values["closer__lec__result"] == "equivalent"


def test_hier_metadata_is_flattened(tmp_path: Path):
    flat = json.loads(GCD_METADATA_NEW_KEYS.read_text())
    hier: dict = {}
    for key, value in flat.items():
        if "__" in key:
            stage, rest = key.split("__", 1)
            hier.setdefault(stage, {})[rest] = value
    assert load_metrics(write_json(tmp_path / "hier.json", hier)).values == {
        k: v for k, v in flat.items() if "__" in k}


def test_several_metrics_files_merge_and_must_agree(tmp_path: Path):
    extra = write_json(tmp_path / "signoff.json", {"closer__signoff__drc_errors": 0})
    merged = load_metrics([GCD_METADATA, extra])
    assert merged.values["closer__signoff__drc_errors"] == 0
    assert merged.origin["closer__signoff__drc_errors"] == str(extra)
    clash = write_json(tmp_path / "clash.json", {"finish__design__instance__area": 1.0})
    with pytest.raises(MetricsFileError, match=r"finish__design__instance__area.*disagrees"):
        load_metrics([GCD_METADATA, clash])


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("", r"bad\.json: file is empty"),
        ("   \n", r"bad\.json: file is empty"),
        ('{"a__b__c": 1,', r"bad\.json: malformed JSON at line 1"),
        ('{"finish__power__total": NaN}', r"bad\.json: key 'finish__power__total' is NaN"),
        ('{"finish__power__total": Infinity}', r"bad\.json: key 'finish__power__total' is Infinity"),
        ('{"a__b__c": [1, -Infinity]}', r"bad\.json: key 'a__b__c' is -Infinity"),
        ('{"a__b__c": 1, "a__b__c": 2}', r"bad\.json: key 'a__b__c' appears twice"),
        ('[1, 2]', r"bad\.json: expected one JSON object"),
        ('{}', r"bad\.json: holds no metrics"),
        ('{"a": {"b": {"c": 1}}}', r"bad\.json: key 'a__b' holds a nested object"),
        ('{"a__b__iter:0": 1, "a__b__iter__0": 2}',
         r"bad\.json: keys 'a__b__iter:0' and 'a__b__iter__0' are the same metric"),
    ],
)
def test_malformed_metrics_fail_naming_file_and_key(tmp_path: Path, text: str, pattern: str):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(MetricsFileError, match=pattern):
        load_metrics(path)


def test_same_value_in_both_spellings_is_accepted(tmp_path: Path):
    path = write_json(tmp_path / "ok.json", {"a__b__iter:0": 1, "a__b__iter__0": 1})
    assert load_metrics(path).values == {"a__b__iter__0": 1}


def test_missing_path_and_empty_log_dir(tmp_path: Path):
    with pytest.raises(MetricsFileError, match="no such metrics file"):
        load_metrics(tmp_path / "absent.json")
    with pytest.raises(MetricsFileError, match="no ORFS per-stage metrics files"):
        load_metrics(tmp_path)


def test_bad_stage_file_is_named(tmp_path: Path):
    logs = tmp_path / "logs"
    shutil.copytree(GCD_LOGS, logs)
    (logs / "4_1_cts.json").write_text('{"cts__timing__setup__ws": NaN}')
    with pytest.raises(MetricsFileError, match=r"4_1_cts\.json: key 'cts__timing__setup__ws' is NaN"):
        load_metrics(logs)
