"""Shared helpers for the reward tests (no tests here)."""

from __future__ import annotations

import json
from pathlib import Path

from closer.reward import Targets, metrics_from_mapping, targets_from_dict

FIXTURES = Path(__file__).parent / "fixtures" / "orfs"
GCD_METADATA = FIXTURES / "gcd_sky130hd" / "metadata.json"
GCD_METADATA_NEW_KEYS = FIXTURES / "gcd_sky130hd" / "metadata_new_keys.json"
GCD_LOGS = FIXTURES / "gcd_sky130hd" / "logs"
GCD_CLOSER = FIXTURES / "gcd_sky130hd_closer" / "metrics.json"
TARGETS = FIXTURES / "targets"
ALL_GATES = ["func", "lec", "gls", "sta", "route", "drc", "lvs", "antenna"]


def closer_values() -> dict:
    """A fresh copy of the clean Closer metrics fixture (every gate passes)."""
    return json.loads(GCD_CLOSER.read_text())


def metrics_of(values: dict, label: str = "perturbed.json"):
    return metrics_from_mapping(values, label)


def make_targets(required=(), terms=(), clock_period=None) -> Targets:
    data: dict = {"gates": {"required": list(required)},
                  "targets": [dict(name=n, metric=m, target=t, weight=w) for n, m, t, w in terms]}
    if clock_period is not None:
        data["clock_period"] = clock_period
    return targets_from_dict(data)


def write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data, indent=1))
    return path
