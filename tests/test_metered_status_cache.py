"""`closer-tool status` from the status cache: the same answer as the strict path, without importing
a model, and never from a cache whose files changed, a forged or malformed cache, or while a call
is in flight (real iverilog calls)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import require_tool
from tests.metered_helpers import closer_tool, make_workspace, tool_config

from closer.budget import ToolClass
from closer.metered.front import metered_call
from closer.metered.ledger import status
from closer.metered.status_view import quick_status, status_key

ROOT = Path(__file__).resolve().parents[1]
CLOCK_FIELDS = ("elapsed_s", "remaining")

# `closer-tool ARGS` in this interpreter; prints what it printed, then the modules it imported
ENTRY = """
import io, json, sys, contextlib
sys.argv = ["closer-tool", *json.loads(sys.argv[1])]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        from closer.metered.client import entry
        entry()
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "stdout": out.getvalue(), "modules": sorted(sys.modules)}))
"""


@pytest.fixture
def ws(tmp_path):
    require_tool("iverilog")
    require_tool("vvp")
    workspace = make_workspace(tmp_path / "ws", tool_config(None, {"sim": 3}))
    assert metered_call(workspace, ToolClass.SIM).record.outcome.value == "ok"
    return workspace


def _entry(ws, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", ENTRY, json.dumps(list(args))], cwd=ws.root,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _without_clock(st: dict) -> dict:
    return {k: v for k, v in st.items() if k not in CLOCK_FIELDS}


def test_a_call_leaves_the_cache_and_status_answers_from_it_without_models(ws):
    quick = _entry(ws, "status", "--json")
    assert quick["code"] == 0
    assert not any(m.split(".")[0] in ("pydantic", "click") for m in quick["modules"])
    strict = json.loads(closer_tool(ws, "status", "--json").stdout)
    assert _without_clock(json.loads(quick["stdout"])) == _without_clock(strict)
    assert strict["used"]["sim"] == 1 and strict["calls"] == 1
    text = _entry(ws, "-w", str(ws.root), "status")
    assert text["code"] == 0 and "sim     used    1 of        3" in text["stdout"]


def test_a_changed_trajectory_is_never_answered_from_the_cache(ws):
    assert quick_status(["-w", str(ws.root), "status"]) is not None
    line = ws.trajectory.read_text().splitlines()[0]
    ws.trajectory.write_text(line.replace('"counted":true', '"counted":false') + "\n")  # same ledger size
    assert quick_status(["-w", str(ws.root), "status"]) is None
    st = status(ws)  # the strict path reads the new content and caches it
    assert st.used["sim"] == 0
    assert quick_status(["-w", str(ws.root), "status"]).used["sim"] == 0
    ws.trajectory.write_text(line + "\n" + "x" * 10 + "\n")  # damage: the strict path refuses it
    assert quick_status(["-w", str(ws.root), "status"]) is None
    damaged = closer_tool(ws, "status")
    assert damaged.returncode == 2 and "damaged" in damaged.stderr


def test_a_forged_or_malformed_cache_is_ignored(ws):
    stored = json.loads(ws.status_cache.read_text())
    assert stored["key"] == status_key(ws)
    forged = {**stored, "basis": {**stored["basis"], "used": {"sim": "0", "synth": 0, "pnr": 0, "verify": 0}}}
    for bad in (forged, {**stored, "key": "0" * 64}, {"key": stored["key"]}, [1, 2]):
        ws.status_cache.write_text(json.dumps(bad))
        assert quick_status(["-w", str(ws.root), "status"]) is None
    ws.status_cache.write_text("{not json")
    assert quick_status(["-w", str(ws.root), "status"]) is None
    out = _entry(ws, "status", "--json")  # the strict path answers and rewrites it
    assert json.loads(out["stdout"])["used"]["sim"] == 1 and "pydantic" in out["modules"]
    assert quick_status(["-w", str(ws.root), "status"]) is not None


def test_a_call_in_flight_or_unusual_arguments_take_the_strict_path(ws):
    root = str(ws.root)
    for argv in (["status", "--json", "--json"], ["status", "extra"], ["--json", "status"],
                 ["-w", root, "sim"], ["-w", root + "/rtl/counter.v", "status"], ["--workspace=", "status"]):
        assert quick_status(argv) is None, argv
    assert quick_status([f"--workspace={root}", "status", "--json"]) is not None
    ws.inflight.write_text("{}")
    assert quick_status(["-w", root, "status"]) is None
