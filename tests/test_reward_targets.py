"""The targets TOML: the issue's shape is accepted; every rule violation names the file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from closer.reward import GateName, TargetsFileError, load_targets

from tests.test_reward_support import TARGETS

GOOD = """
[gates]
required = ["route"]
[[targets]]
name = "area"
metric = "finish__design__instance__area"
target = 4000.0
weight = 1.0
[[targets]]
name = "delay"
metric = "effective_clock_period"
target = 2
weight = 1.0
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.toml"
    path.write_text(text)
    return path


def test_issue_example_loads(tmp_path: Path):
    loaded = load_targets(_write(tmp_path, GOOD))
    assert loaded.targets.required == {GateName.ROUTE}
    assert [(t.name, t.target, t.weight) for t in loaded.targets.targets] == [
        ("area", 4000.0, 1.0), ("delay", 2.0, 1.0)]
    assert loaded.targets.clock_period is None
    assert len(loaded.sha256) == 64


@pytest.mark.parametrize("name", ["gcd_route", "gcd_all_gates", "gcd_met", "gcd_route_clock"])
def test_fixture_targets_load(name: str):
    assert load_targets(TARGETS / f"{name}.toml").targets.targets


def test_qualifier_in_target_metric_is_normalized(tmp_path: Path):
    text = GOOD.replace("finish__design__instance__area", "detailedroute__route__drc_errors__iter:0")
    assert load_targets(_write(tmp_path, text)).targets.targets[0].metric == \
        "detailedroute__route__drc_errors__iter__0"


@pytest.mark.parametrize(
    "old, new, pattern",
    [
        ("target = 4000.0", "target = nan", r"targets\[0\] \(name='area'\)\.target: must be a finite"),
        ("target = 4000.0", "target = inf", r"targets\[0\] \(name='area'\)\.target: must be a finite"),
        ("target = 4000.0", "target = 0.0", r"targets\[0\] \(name='area'\)\.target: .*greater than 0"),
        ("target = 4000.0", "target = -5.0", r"\.target: .*greater than 0"),
        ("target = 4000.0", 'target = "4000"', r"\.target: input should be a valid number, got str"),
        ("target = 4000.0", "target = true", r"\.target: input should be a valid number, got bool"),
        ("target = 4000.0\nweight = 1.0", "target = 4000.0\nweight = -1.0",
         r"targets\[0\] \(name='area'\)\.weight: .*greater than or equal to 0"),
        ("target = 4000.0\nweight = 1.0", "target = 4000.0\nweight = -inf", r"\.weight: must be a finite"),
        ("target = 4000.0\nweight = 1.0", "target = 4000.0", r"targets\[0\] \(name='area'\)\.weight: required key is missing"),
        ('name = "delay"', 'name = "area"', r"duplicate target name\(s\) \['area'\]"),
        ('required = ["route"]', 'required = ["route", "drc", "route"]', r"gates\.required: .*listed twice"),
        ('required = ["route"]', 'required = ["routing"]', r"gates\.required: .*unknown gate\(s\) \['routing'\]"),
        ('required = ["route"]', 'required = "route"', r"gates\.required: input should be a valid list"),
        ("[gates]\n", "[gate]\n", r"gates: required key is missing.*gate: unknown key"),
        ('metric = "effective_clock_period"', 'metric = "effective_clock_period"\nunit = "ns"',
         r"targets\[1\] \(name='delay'\)\.unit: unknown key"),
        ('name = "delay"', 'name = ""', r"targets\[1\]\.name: .*at least 1 character"),
        ('metric = "effective_clock_period"', 'metric = "finish__timing__setup__ws"',
         r"targets\[1\] \(name='delay'\)\.metric: .*higher-is-better"),
        ('metric = "effective_clock_period"', 'metric = "synth__timing__fmax__clock:core_clock"',
         r"\.metric: .*higher-is-better"),
    ],
)
def test_bad_targets_fail_naming_file_and_key(tmp_path: Path, old: str, new: str, pattern: str):
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(TargetsFileError, match=r"t\.toml: .*" + pattern):
        load_targets(path)


def test_clock_period_must_be_finite_positive(tmp_path: Path):
    with pytest.raises(TargetsFileError, match=r"t\.toml: clock_period: .*greater than 0"):
        load_targets(_write(tmp_path, "clock_period = 0.0\n" + GOOD))
    with pytest.raises(TargetsFileError, match=r"t\.toml: clock_period: must be a finite"):
        load_targets(_write(tmp_path, "clock_period = nan\n" + GOOD))


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("", r"t\.toml: file is empty"),
        ("\n  \n", r"t\.toml: file is empty"),
        ("[gates\nrequired = []", r"t\.toml: malformed TOML"),
        ('[gates]\nrequired = []\nrequired = ["route"]', r"t\.toml: malformed TOML"),
        ("[gates]\nrequired = []", r"t\.toml: .*nothing to score"),
    ],
)
def test_empty_and_malformed_files(tmp_path: Path, text: str, pattern: str):
    with pytest.raises(TargetsFileError, match=pattern):
        load_targets(_write(tmp_path, text))


def test_gates_only_file_is_valid(tmp_path: Path):
    loaded = load_targets(_write(tmp_path, '[gates]\nrequired = ["lvs"]\n'))
    assert loaded.targets.targets == []


def test_missing_file(tmp_path: Path):
    with pytest.raises(TargetsFileError, match="no such targets file"):
        load_targets(tmp_path / "absent.toml")
