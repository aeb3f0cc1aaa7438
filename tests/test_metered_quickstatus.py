"""The `closer-tool` launcher (`python -SI` over closer.metered.quickstatus): a cached status with
the standard library only, the strict path's answer for everything else (real iverilog calls)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.metered_helpers import closer_tool
from tests.test_metered_status_cache import ws  # noqa: F401  (the workspace after one real sim call)

from closer.budget import ToolClass
from closer.launchers.nosite import PACKAGE_ROOT, write_launcher
from closer.metered import quickstatus
from closer.metered.paths import WorkspacePaths

CLOCK_FIELDS = ("elapsed_s", "remaining")
STDLIB_ONLY = f"""
import sys
sys.path.insert(0, {str(PACKAGE_ROOT)!r})
from closer.metered.quickstatus import cached_status_text
text = cached_status_text(sys.argv[1:])
modules = sorted(sys.modules)
import json
import os
print(json.dumps({{"text": text, "modules": modules}}))
"""


@pytest.fixture
def launcher(tmp_path) -> Path:
    return write_launcher(tmp_path / "closer-tool", sys.executable)


def _run(launcher: Path, ws: WorkspacePaths, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(launcher), *args], cwd=ws.root, capture_output=True, text=True, timeout=120)


def _without_clock(st: dict) -> dict:
    return {k: v for k, v in st.items() if k not in CLOCK_FIELDS}


def test_the_launcher_answers_a_cached_status_like_the_strict_path_with_the_standard_library(ws, launcher):
    strict = json.loads(closer_tool(ws, "status", "--json").stdout)
    done = _run(launcher, ws, "status", "--json")
    assert done.returncode == 0, done.stderr
    assert _without_clock(json.loads(done.stdout)) == _without_clock(strict)
    probe = subprocess.run([sys.executable, "-SI", "-c", STDLIB_ONLY, "-w", str(ws.root), "status"],
                           capture_output=True, text=True, timeout=60)
    answer = json.loads(probe.stdout)
    assert "sim     used    1 of        3" in answer["text"]
    ours = {m for m in answer["modules"] if m.split(".")[0] == "closer"}
    assert ours == {"closer", "closer.lightjson", "closer.metered", "closer.metered.client", "closer.metered.quickstatus"}
    assert not {"site", "pathlib", "json", "re", "hashlib", "datetime"} & set(answer["modules"])


@pytest.mark.slow
def test_the_launcher_hands_anything_else_to_the_strict_path(ws, launcher):
    bad = _run(launcher, ws, "status", "extra")
    assert bad.returncode == 2 and "extra" in bad.stderr and "Traceback" not in bad.stderr
    line = ws.trajectory.read_text().splitlines()[0]
    ws.trajectory.write_text(line.replace('"counted":true', '"counted":false') + "\n")  # cache now stale
    assert quickstatus.cached_status(["-w", str(ws.root), "status"]) is None
    changed = _run(launcher, ws, "status", "--json")
    assert changed.returncode == 0 and json.loads(changed.stdout)["used"]["sim"] == 0
    assert quickstatus.cached_status(["-w", str(ws.root), "status"]) is not None  # the strict path re-cached it
    ran = _run(launcher, ws, "sim")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert json.loads(_run(launcher, ws, "status", "--json").stdout)["calls"] == 2


def test_a_damaged_layout_is_never_answered_from_the_cache(ws, launcher):
    assert quickstatus.cached_status(["-w", str(ws.root), "status"]) is not None
    ws.objects.rename(ws.control / "objects-moved")
    ws.objects.write_text("not a folder")
    assert quickstatus.cached_status(["-w", str(ws.root), "status"]) is None
    refused = _run(launcher, ws, "status")
    assert refused.returncode == 2 and "damaged run directory" in refused.stderr


def test_the_quick_paths_layout_names_are_the_workspaces(tmp_path):
    ws = WorkspacePaths(tmp_path)
    control = Path(tmp_path, quickstatus.CONTROL_DIR)
    assert control == ws.control
    assert [control / n for n in quickstatus.CONTROL_FILES] == [ws.tools_config, ws.run_info, ws.trajectory,
                                                                ws.lock, ws.inflight]
    assert [control / n for n in quickstatus.CONTROL_DIRS] == [ws.objects, ws.snapshots, ws.versions,
                                                               ws.pristine, ws.control / "calls"]
    assert control / quickstatus.STATUS_CACHE == ws.status_cache and tmp_path / quickstatus.RESULTS_DIR == ws.results
    assert list(quickstatus.TOOLS) == [t.value for t in ToolClass]


def test_inside_a_sandbox_the_launcher_is_the_brokers_client(ws, launcher, tmp_path):
    from closer.metered.broker import Broker

    socket_path = tmp_path / "broker.sock"
    broker = Broker(ws, socket_path).start()
    try:
        env = {k: v for k, v in os.environ.items() if k != "CLOSER_WORKSPACE"} | {"CLOSER_BROKER": str(socket_path)}
        done = subprocess.run([str(launcher), "status", "--json"], cwd=ws.root, env=env, capture_output=True,
                              text=True, timeout=120)
        missing = subprocess.run([str(launcher), "status"], cwd=ws.root, capture_output=True, text=True, timeout=60,
                                 env=env | {"CLOSER_BROKER": str(tmp_path / "nobody.sock")})
    finally:
        broker.stop(wait_s=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["used"]["sim"] == 1
    assert missing.returncode == 13 and "not reachable" in missing.stdout


def test_pythonpath_comes_first_as_inside_a_sandbox_whose_package_is_not_the_one_written_in(ws, tmp_path):
    """The sandbox binds the running checkout's package and names it in $PYTHONPATH; the venv's
    launcher may have been written for another checkout (here: a folder that does not exist)."""
    elsewhere = write_launcher(tmp_path / "closer-tool-elsewhere", sys.executable, tmp_path / "no-such-checkout")
    env = {k: v for k, v in os.environ.items() if k not in ("CLOSER_BROKER", "CLOSER_WORKSPACE")}
    done = subprocess.run([str(elsewhere), "status", "--json"], cwd=ws.root, capture_output=True, text=True,
                          timeout=60, env=env | {"PYTHONPATH": str(PACKAGE_ROOT)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["used"]["sim"] == 1
    lost = subprocess.run([str(elsewhere), "status"], cwd=ws.root, capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in env.items() if k != "PYTHONPATH"})
    assert lost.returncode != 0 and "closer" in lost.stderr  # the perturbed case: no package at all
