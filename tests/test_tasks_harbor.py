"""Harbor export of a gcd task: layout, task.toml against the schema (two-way), reward.json, the
export's refusal of damaged task folders, the verifier's reward 0 with a reason on every failure,
and closer-tool starting the run in a fresh exported workspace."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import signal
import sys
import time
from pathlib import Path

import jsonschema
import psutil
import pytest
import tomli_w

from closer.errors import InputError
from closer.paths import schema_path
from closer.tasks.generate import generate_suite
from closer.tasks.harbor import export_harbor, validate_task_toml
from closer.tasks.harbor_layout import HarborPaths
from closer.tasks.harbor_reward import reward_json
from closer.tasks.paths import SuitePaths, tree_checksum
from tests.harbor_support import lay_out


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> SuitePaths:
    out = tmp_path_factory.mktemp("suite")
    generate_suite("gcd", out, kinds=None, budgets=["medium"])
    return SuitePaths(out)


@pytest.fixture(scope="module")
def exported(suite: SuitePaths) -> Path:
    return export_harbor(suite.task("gcd-B-medium").root, suite.root / "harbor")


def test_layout(exported: Path) -> None:
    for rel in ("task.toml", "instruction.md", "environment/Dockerfile", "tests/test.sh", "solution/solve.sh",
                "solution/files/rtl/gcd.v", "environment/workspace/rtl/gcd.v",
                "tests/suite/tasks/gcd-B-medium/task.json", "tests/suite/hidden/gcd-B-medium/targets.toml"):
        assert (exported / rel).is_file(), rel
    assert os.access(exported / "tests" / "test.sh", os.X_OK) and os.access(exported / "solution" / "solve.sh", os.X_OK)
    assert "CLOSER_VERIFIER_DIR:-/logs/verifier" in (exported / "tests" / "test.sh").read_text()
    assert not (exported / "environment" / "workspace" / "targets.toml").exists()
    dockerfile = (exported / "environment" / "Dockerfile").read_text()
    assert "PDK_ROOT=/opt/pdk" in dockerfile and "bash /opt/closer/scripts/bootstrap.sh" in dockerfile
    assert "apt-get install" not in dockerfile  # bootstrap.sh is the one list of what is installed
    hp = HarborPaths(exported)
    assert (hp.closer_src / "scripts" / "bootstrap.sh").is_file() and (hp.closer_src / "designs" / "gcd").is_dir()
    assert not list(hp.closer_src.rglob("__pycache__"))
    listed = {line.split("  ", 1)[1] for line in hp.installation_sums.read_text().splitlines()}
    assert "closer/tasks/evaluate.py" in listed and "requirements.lock" in listed
    assert any(line.endswith(".lib") for line in hp.pdk_sums.read_text().splitlines())


def test_export_is_never_overwritten(suite: SuitePaths, exported: Path) -> None:
    with pytest.raises(InputError, match="exists: export into another --out"):
        export_harbor(suite.task("gcd-B-medium").root, exported.parent)


def test_task_toml_schema_two_way(exported: Path, tmp_path: Path) -> None:
    data = validate_task_toml(exported / "task.toml")
    assert data["verifier"]["timeout_sec"] > 0 and data["agent"]["timeout_sec"] == 36000.0
    assert data["environment"]["cpus"] == 2 and data["metadata"]["suite_version"]
    assert data["metadata"]["harbor_version"] == "0.26.0" and "workdir" not in data["environment"]
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


def _resign(suite: SuitePaths) -> None:
    """Re-record the checksums in suite.json, so a damaged file reaches the parsers."""
    manifest = json.loads(suite.manifest.read_text())
    for entry in manifest["tasks"]:
        entry["checksum"] = tree_checksum(suite.task(entry["task_id"]).root)
        entry["hidden_checksum"] = tree_checksum(suite.hidden(entry["task_id"]).root)
    suite.manifest.write_text(json.dumps(manifest))


DAMAGES = {
    "garbage tools.toml": ("workspace/.closer/tools.toml", "[[[ not toml", r"tools\.toml"),
    "missing tools.toml": ("workspace/.closer/tools.toml", None, r"tools\.toml does not exist"),
    "garbage locked.json": ("manifests/locked.json", "{]", r"locked\.json"),
    "garbage hidden targets.toml": ("HIDDEN/targets.toml", "x = = 1", r"targets\.toml: malformed TOML"),
    "garbage hidden.json": ("HIDDEN/hidden.json", "\x00garbage", r"hidden\.json"),
}


@pytest.mark.parametrize("resign", [False, True], ids=["as-damaged", "re-signed"])
@pytest.mark.parametrize("damage", list(DAMAGES), ids=list(DAMAGES))
def test_export_refuses_a_damaged_task_folder(suite: SuitePaths, tmp_path: Path, damage: str, resign: bool) -> None:
    copy = SuitePaths(tmp_path / "suite")
    shutil.copytree(suite.root, copy.root, ignore=shutil.ignore_patterns("harbor"))
    rel, text, message = DAMAGES[damage]
    target = (copy.hidden("gcd-A-medium").root / rel[len("HIDDEN/"):] if rel.startswith("HIDDEN/")
              else copy.task("gcd-A-medium").root / rel)
    if text is None:
        target.unlink()
    else:
        target.write_text(text)
    if resign:
        _resign(copy)
    with pytest.raises(InputError, match=message if resign else "changed since the suite was generated"):
        export_harbor(copy.task("gcd-A-medium").root, tmp_path / "harbor")
    assert not (tmp_path / "harbor" / "gcd-A-medium").exists()


def test_export_cli_garbage_suite_json_is_one_line_exit_2(suite: SuitePaths, tmp_path: Path) -> None:
    copy = SuitePaths(tmp_path / "suite")
    shutil.copytree(suite.root, copy.root, ignore=shutil.ignore_patterns("harbor"))
    copy.manifest.write_text("{not json")
    done = subprocess.run([sys.executable, "-m", "closer", "task", "export-harbor", str(copy.task("gcd-A-medium").root),
                           "--out", str(tmp_path / "harbor")], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "suite.json" in done.stderr


def _break_installation(container) -> None:
    with open(container.closer_home / "closer" / "tasks" / "evaluate.py", "a") as handle:
        handle.write("\nREWARD_OVERRIDE = 1.0\n")


def _break_task_data(container) -> None:
    (container.tests / "suite" / "tasks" / "gcd-B-medium" / "task.json").write_text("{]")


def _break_python(container) -> None:
    (container.closer_home / ".venv").unlink()


def test_verifier_never_imports_a_closer_planted_in_its_folder(exported: Path, tmp_path: Path) -> None:
    """Harbor runs test.sh in the agent's /workspace: a `closer/` package there must not be imported
    (python -P). The task data is broken so the real evaluator exits 2 at once."""
    container = lay_out(HarborPaths(exported), tmp_path / "container")
    planted = container.workspace / "closer"
    planted.mkdir()
    (planted / "__init__.py").write_text("raise SystemExit('planted closer imported')\n")
    (planted / "__main__.py").write_text("raise SystemExit('planted closer imported')\n")
    _break_task_data(container)
    rewards, reason = container.verify(cwd=container.workspace)
    assert rewards["reward"] == 0.0 and reason and "exited 2 without a valid record" in reason, reason
    assert "planted" not in (container.verifier / "evaluate.log").read_text()


@pytest.mark.parametrize(("damage", "reason"), [
    (_break_installation, "does not match tests/installation.sha256"),
    (_break_task_data, "exited 2 without a valid record"),
    (_break_python, "no reward from"),
], ids=["tampered installation", "evaluate crashes", "no python"])
def test_verifier_always_writes_a_reward(exported: Path, tmp_path: Path, damage, reason: str) -> None:
    container = lay_out(HarborPaths(exported), tmp_path / "container")
    damage(container)
    rewards, found = container.verify()
    assert rewards["reward"] == 0.0 and rewards["scored"] == 0.0
    assert found and reason in found, found


def _processes_under(root: Path) -> list[str]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if str(root) in cmdline:
            found.append(cmdline)
    return found


def test_verifier_stopped_by_a_signal_still_writes_a_reward(exported: Path, tmp_path: Path) -> None:
    """Harbor's verifier timeout: SIGTERM mid-evaluation -> reward 0 with the reason, no process left."""
    container = lay_out(HarborPaths(exported), tmp_path / "container")
    container.solve()
    proc = subprocess.Popen(["bash", str(container.tests / "test.sh")], env=container.env(), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(container.verifier.glob("evaluation.*/tree")) and time.monotonic() < deadline:
        time.sleep(0.2)  # the evaluator is at work
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    rewards = json.loads((container.verifier / "reward.json").read_text())
    assert rewards == {"reward": 0.0, "scored": 0.0, "accepted": 0.0}
    assert (container.verifier / "reason.txt").read_text().strip() == "the verifier was stopped by a signal"
    deadline = time.monotonic() + 30
    while _processes_under(container.root) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _processes_under(container.root)


@pytest.mark.slow
def test_closer_tool_starts_the_run_on_its_first_call(exported: Path, tmp_path: Path) -> None:
    container = lay_out(HarborPaths(exported), tmp_path / "container")
    env = container.env()

    def status() -> dict:
        done = subprocess.run([sys.executable, "-m", "closer.metered", "status", "--json"], cwd=container.workspace,
                              env=dict(env, PYTHONPATH=os.environ.get("PYTHONPATH", "")),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)

    assert not (container.workspace / ".closer" / "run.json").exists()
    first = status()
    assert (container.workspace / ".closer" / "run.json").is_file() and first["calls"] == 0
    assert status()["run_id"] == first["run_id"]  # started once
