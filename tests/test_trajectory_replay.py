"""Replay re-runs every recorded call (real iverilog and yosys) on its snapshot; a tampered result
is reported as a mismatch."""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from closer.budget import ToolClass
from closer.cli import cli
from closer.metered.front import metered_call
from closer.trajectory.replay import ReplayStatus, replay_run
from tests.conftest import require_tool
from tests.metered_helpers import break_counter, fix_counter, make_workspace, tool_config


def _run_session(ws):
    metered_call(ws, ToolClass.SIM)
    break_counter(ws)
    metered_call(ws, ToolClass.SIM)          # fails checks: its own snapshot has the bug
    metered_call(ws, ToolClass.SYNTH)
    fix_counter(ws)
    metered_call(ws, ToolClass.SIM)
    metered_call(ws, ToolClass.SIM)          # over the cap of 3: refused


def test_replay_reproduces_every_call_and_flags_tampering(tmp_path, pdk_paths):
    for tool in ("iverilog", "vvp", "yosys"):
        require_tool(tool)
    ws = make_workspace(tmp_path / "ws", tool_config(pdk_paths, {"sim": 3}))
    _run_session(ws)
    # the workspace has moved on since; replay must use each call's own snapshot
    (ws.root / "rtl" / "counter.v").write_text("garbage\n")

    results = replay_run(ws)
    assert [(r.seq, r.tool.value, r.status) for r in results] == [
        (1, "sim", ReplayStatus.REPRODUCED), (2, "sim", ReplayStatus.REPRODUCED),
        (3, "synth", ReplayStatus.REPRODUCED), (4, "sim", ReplayStatus.REPRODUCED),
        (5, "sim", ReplayStatus.SKIPPED)]

    out = CliRunner().invoke(cli, ["trajectory", "replay", str(ws.root)])
    assert out.exit_code == 0 and "4 reproduced, 0 mismatch, 1 skipped" in out.output

    # summarize takes B from the run's own run.json: tier low, 4 h, 190 units
    out = CliRunner().invoke(cli, ["trajectory", "summarize", str(ws.control), "--json"])
    s = json.loads(out.output)
    assert s["params"]["source"].endswith("run.json") and s["params"]["wall_s"] == 14400.0
    assert s["records"] == 5 and s["best_reward"] == 1.0 and s["outcomes"]["refused_budget"] == 1
    assert [r["seq"] for r in s["rollbacks"]] == [4]          # rtl fixed after synth feedback

    # a copy whose recorded area was altered must not reproduce
    tampered = tmp_path / "tampered"
    shutil.copytree(ws.root, tampered, symlinks=True)
    lines = (tampered / ".closer" / "trajectory.jsonl").read_text().splitlines()
    synth = json.loads(lines[2])
    synth["metrics"]["synth__design__instance__area__stdcell"] += 1.0
    lines[2] = json.dumps(synth)
    (tampered / ".closer" / "trajectory.jsonl").write_text("\n".join(lines) + "\n")
    out = CliRunner().invoke(cli, ["trajectory", "replay", str(tampered), "--json"])
    assert out.exit_code == 1
    report = {r["seq"]: r for r in json.loads(out.output)}
    assert report[3]["status"] == "mismatch" and report[1]["status"] == "reproduced"
    assert any("synth__design__instance__area__stdcell" in d for d in report[3]["differences"])

    # a torn last line is a call that cannot be compared: reported, and the replay fails
    torn = tmp_path / "torn"
    shutil.copytree(ws.root, torn, symlinks=True)
    with open(torn / ".closer" / "trajectory.jsonl", "ab") as f:
        f.write(lines[0].encode()[:60])
    out = CliRunner().invoke(cli, ["trajectory", "replay", str(torn)])
    assert out.exit_code == 1 and "1 unreadable" in out.output and "torn last line" in out.output
