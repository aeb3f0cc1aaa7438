"""Harbor export of a gcd task: layout, task.toml against the schema (two-way), reward.json."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import jsonschema
import pytest
import tomli_w

from closer.errors import InputError
from closer.paths import schema_path
from closer.tasks.generate import generate_suite
from closer.tasks.harbor import export_harbor, reward_json, validate_task_toml
from closer.tasks.paths import SuitePaths


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("suite")
    generate_suite("gcd", out, kinds=None, budgets=["medium"])
    return export_harbor(SuitePaths(out).task("gcd-B-medium").root, out / "harbor")


def test_layout(exported: Path) -> None:
    for rel in ("task.toml", "instruction.md", "environment/Dockerfile", "tests/test.sh", "solution/solve.sh",
                "solution/files/rtl/gcd.v", "environment/workspace/rtl/gcd.v",
                "tests/suite/tasks/gcd-B-medium/task.json", "tests/suite/hidden/gcd-B-medium/targets.toml"):
        assert (exported / rel).is_file(), rel
    assert os.access(exported / "tests" / "test.sh", os.X_OK) and os.access(exported / "solution" / "solve.sh", os.X_OK)
    assert "/logs/verifier/reward.json" in (exported / "tests" / "test.sh").read_text()
    assert not (exported / "environment" / "workspace" / "targets.toml").exists()
    assert "PDK_ROOT=/opt/pdk" in (exported / "environment" / "Dockerfile").read_text()


def test_task_toml_schema_two_way(exported: Path, tmp_path: Path) -> None:
    data = validate_task_toml(exported / "task.toml")
    assert data["verifier"]["timeout_sec"] > 0 and data["agent"]["timeout_sec"] == 36000.0
    assert data["environment"]["cpus"] == 2 and data["metadata"]["suite_version"]
    bad = dict(data, environment=dict(data["environment"], network_mode="offline"))
    path = tmp_path / "task.toml"
    path.write_text(tomli_w.dumps(bad))
    with pytest.raises(InputError, match="key environment.network_mode"):
        validate_task_toml(path)
    schema = json.loads(schema_path("harbor-task").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(dict(data, agent={"timeout_sec": 1, "network_mode": "public", "allowed_hosts": ["x"]}), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(dict(data, unknown_table={}), schema)


def test_reward_json_is_finite_numbers() -> None:
    evaluation = {"reward": 0.75, "scored": True, "accepted": True,
                  "gates": {"func": "pass", "gls": "fail", "lec": "not_required"},
                  "metrics": {"synth__design__instance__area__stdcell": 2169.58, "run__flow__design": "gcd",
                              "constraints__clocks__details": ["core_clock: 10.0"], "closer__sim__cycles": 5947}}
    out = reward_json(evaluation)
    assert out["reward"] == 0.75 and out["gate__func"] == 1.0 and out["gate__gls"] == 0.0
    assert "gate__lec" not in out and "run__flow__design" not in out and out["closer__sim__cycles"] == 5947.0
    assert all(isinstance(v, float) and math.isfinite(v) for v in out.values())
    assert reward_json({"reward": None, "scored": False})["reward"] == 0.0
