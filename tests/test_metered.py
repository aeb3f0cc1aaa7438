"""The metered front end with real tools: iverilog sim, yosys synth on sky130 tt, budget both ways."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import jsonschema
import pytest
from tests.conftest import require_tool
from tests.metered_helpers import break_counter, closer_tool, fix_counter, make_workspace, tool_config

from closer.budget import ToolClass
from closer.errors import InputError
from closer.metered.front import EXIT_CODES, metered_call
from closer.metered.ledger import status
from closer.metered.run import start_run
from closer.metered.snapshot import load_snapshot
from closer.paths import schema_path
from closer.trajectory.reader import read_trajectory
from closer.trajectory.record import EditLayer, Outcome


@pytest.fixture(autouse=True)
def _tools():
    require_tool("iverilog")
    require_tool("vvp")


def _records(ws):
    t = read_trajectory(ws.trajectory)
    assert t.bad_lines == []
    return t.records


def test_sim_budget_cap_passes_then_refuses_via_cli(tmp_path):
    ws = make_workspace(tmp_path / "ws", tool_config(None, {"sim": 2}))
    first, second = closer_tool(ws, "sim"), closer_tool(ws, "sim")
    assert first.returncode == 0 and second.returncode == 0, first.stdout + first.stderr
    assert "ERRORS: 0" in second.stdout and "budget left: sim 0" in second.stdout
    third = closer_tool(ws, "sim")
    assert third.returncode == EXIT_CODES[Outcome.REFUSED_BUDGET] == 10
    assert "refused: the sim budget is spent (2 of 2 calls" in third.stdout
    recs = _records(ws)
    assert [r.outcome for r in recs] == [Outcome.OK, Outcome.OK, Outcome.REFUSED_BUDGET]
    assert [r.seq for r in recs] == [1, 2, 3]
    assert [r.cost.counted for r in recs] == [True, True, False]
    assert recs[1].metrics == {"sim__tests__failed": 0, "sim__checks": 300}
    assert recs[1].remaining["sim"] == 0 and recs[2].cost.units == 0
    assert not (ws.results / "0003_sim").exists()  # nothing ran
    # every record validates against the exported schema
    schema = json.loads(schema_path("trajectory-record").read_text())
    for line in ws.trajectory.read_text().splitlines():
        jsonschema.validate(json.loads(line), schema)


def test_status_spends_nothing(tmp_path):
    ws = make_workspace(tmp_path / "ws", tool_config(None, {"sim": 1}))
    out = closer_tool(ws, "status", "--json")
    assert out.returncode == 0, out.stderr
    st = json.loads(out.stdout)
    assert st["used"]["sim"] == 0 and st["remaining"]["sim"] == 1 and st["calls"] == 0
    assert closer_tool(ws, "status").returncode == 0
    assert not ws.trajectory.exists()
    assert metered_call(ws, ToolClass.SIM).record.outcome is Outcome.OK


def test_over_time_call_is_refused_and_recorded(tmp_path):
    long_ago = datetime.now(timezone.utc) - timedelta(hours=5)   # tier low: 4 h
    ws = make_workspace(tmp_path / "ws", tool_config(None), started_at=long_ago)
    result = metered_call(ws, ToolClass.SIM)
    assert result.record.outcome is Outcome.REFUSED_TIME and result.exit_code == 11
    assert "wall-clock budget is spent" in result.record.message
    assert result.record.remaining["wall_s"] == 0 and not result.record.cost.counted


def test_edits_snapshots_layers_and_reward(tmp_path):
    ws = make_workspace(tmp_path / "ws", tool_config(None))
    r1 = metered_call(ws, ToolClass.SIM).record
    assert r1.changes.all == [] and r1.layers == [] and r1.reward == 1.0 and r1.feasible is True
    break_counter(ws)
    (ws.root / "constraints" / "counter.sdc").write_text("create_clock -period 4 [get_ports clk]\n")
    r2 = metered_call(ws, ToolClass.SIM).record
    assert r2.changes.modified == ["constraints/counter.sdc", "rtl/counter.v"]
    assert r2.layers == [EditLayer.RTL, EditLayer.CONSTRAINT]
    assert r2.metrics["sim__tests__failed"] > 0 and r2.reward < 1 and r2.feasible is False
    assert r2.best_reward == 1.0
    fix_counter(ws)
    r3 = metered_call(ws, ToolClass.SIM).record
    assert r3.changes.modified == ["rtl/counter.v"] and r3.layers == [EditLayer.RTL]
    # content-addressed: the restored counter.v is the baseline blob, stored once
    base, s2, s3 = (load_snapshot(ws, d).files for d in (r1.surface_digest, r2.surface_digest, r3.surface_digest))
    assert s3["rtl/counter.v"] == base["rtl/counter.v"] != s2["rtl/counter.v"]
    blobs = [p for p in ws.objects.rglob("*") if p.is_file()]
    assert len(blobs) == len(set(base.values()) | set(s2.values()) | set(s3.values())) == 5


def test_synth_runs_yosys_on_sky130_and_reports_area(tmp_path, pdk_paths):
    require_tool("yosys")
    ws = make_workspace(tmp_path / "ws", tool_config(pdk_paths))
    rec = metered_call(ws, ToolClass.SYNTH).record
    assert rec.outcome is Outcome.OK, rec.message
    area = rec.metrics["synth__design__instance__area__stdcell"]
    assert 100 < area < 1000 and rec.metrics["synth__design__instance__count__stdcell"] > 8
    assert (ws.root / rec.results_dir / "counter.netlist.v").read_text().count("sky130_fd_sc_hd__dfxtp") == 8
    assert rec.cost.units == 5.0 and rec.remaining["synth"] == 9
    info = json.loads(ws.run_info.read_text())
    assert info["provenance"]["tool_versions"]["synth"].startswith("Yosys 0.70")
    assert info["provenance"]["pdk_corner"] == "tt_025C_1v80"


def test_tool_error_is_counted_and_recorded(tmp_path):
    ws = make_workspace(tmp_path / "ws", tool_config(None, {"sim": 5}))
    (ws.root / "rtl" / "counter.v").write_text("module counter(; endmodule\n")
    result = metered_call(ws, ToolClass.SIM)
    rec = result.record
    assert rec.outcome is Outcome.TOOL_ERROR and result.exit_code == 1
    assert rec.exit_codes and rec.exit_codes[0] != 0 and rec.cost.counted and rec.reward is None
    assert "syntax error" in (ws.root / rec.results_dir / "cmd1.log").read_text()


def test_timeout_and_missing_tool(tmp_path):
    config = tool_config(None)
    config["tools"]["pnr"] = {"commands": [["sleep", "30"]], "timeout_s": 0.5, "version": ["sleep", "--version"]}
    config["tools"]["synth"] = {"commands": [["no-such-eda-tool-xyz", "-v"]], "version": ["true"]}
    ws = make_workspace(tmp_path / "ws", config)
    slow = metered_call(ws, ToolClass.PNR).record
    assert slow.outcome is Outcome.TIMEOUT and slow.cost.counted and slow.cost.tool_wall_s < 10
    missing = metered_call(ws, ToolClass.SYNTH)
    assert missing.record.outcome is Outcome.INFRA_ERROR and missing.exit_code == 13
    assert not missing.record.cost.counted and "not found" in missing.record.message
    assert metered_call(ws, ToolClass.VERIFY).record.outcome is Outcome.OK


def test_verify_always_counted_even_on_infra_error(tmp_path):
    config = tool_config(None, {"verify": 1})
    config["tools"]["verify"]["commands"] = [["no-such-verifier-xyz"]]
    ws = make_workspace(tmp_path / "ws", config)
    first = metered_call(ws, ToolClass.VERIFY).record
    assert first.outcome is Outcome.INFRA_ERROR and first.cost.counted and first.cost.units == 5.0
    assert metered_call(ws, ToolClass.VERIFY).record.outcome is Outcome.REFUSED_BUDGET


def test_changed_tool_config_is_refused(tmp_path):
    ws = make_workspace(tmp_path / "ws", tool_config(None))
    ws.tools_config.write_text(ws.tools_config.read_text().replace('sim = 2', 'sim = 99') + "\n# edited\n")
    with pytest.raises(InputError, match="changed since the run started"):
        metered_call(ws, ToolClass.SIM)


def test_bad_tool_config_names_file_and_key(tmp_path):
    config = tool_config(None)
    config["tools"]["sim"]["timeout_s"] = -1
    with pytest.raises(InputError, match=r"tools.toml: key tools.sim.timeout_s"):
        make_workspace(tmp_path / "ws", config)
    ws2 = make_workspace(tmp_path / "ws2", tool_config(None), start=False)
    with pytest.raises(InputError, match="run has not been started"):
        metered_call(ws2, ToolClass.SIM)
    start_run(ws2)
    with pytest.raises(InputError, match="already started"):
        start_run(ws2)


def test_concurrent_calls_are_serialized(tmp_path):
    ws = make_workspace(tmp_path / "ws", tool_config(None, {"sim": 10}))
    procs = [subprocess.Popen([sys.executable, "-m", "closer.metered", "sim"], cwd=ws.root,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(3)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    recs = _records(ws)
    assert sorted(r.seq for r in recs) == [1, 2, 3]
    spans = sorted((r.started_at, r.ended_at) for r in recs)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "calls overlapped"


def test_killed_call_is_recorded_as_interrupted_and_counted(tmp_path):
    config = tool_config(None, {"pnr": 2})
    config["tools"]["pnr"] = {"commands": [["sleep", "8"]], "version": ["sleep", "--version"]}
    ws = make_workspace(tmp_path / "ws", config)
    proc = subprocess.Popen([sys.executable, "-m", "closer.metered", "pnr"], cwd=ws.root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not ws.inflight.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ws.inflight.exists()
    assert status(ws).call_running                          # status does not wait for the lock
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # the killed call's tool process dies by its parent-death signal, asynchronously: under load it
    # can still hold the run's lock for a moment after closer-tool itself is gone
    deadline = time.monotonic() + 15
    while status(ws).call_running and time.monotonic() < deadline:
        time.sleep(0.1)
    st = status(ws)  # the interrupted call is recorded by the next call, but counted already
    assert st.calls == 0 and st.interrupted_call == 1 and st.used["pnr"] == 1 and not st.call_running
    nxt = metered_call(ws, ToolClass.SIM).record
    recs = _records(ws)
    assert [r.seq for r in recs] == [1, 2] and nxt.seq == 2
    assert recs[0].outcome is Outcome.INFRA_ERROR and "interrupted" in recs[0].message
    assert recs[0].cost.counted and recs[0].tool is ToolClass.PNR
    assert not ws.inflight.exists()
    assert status(ws).used["pnr"] == 1


def test_agent_arguments_reach_the_tool_only_where_allowed(tmp_path):
    ws = make_workspace(tmp_path / "ws", tool_config(None))
    rec = metered_call(ws, ToolClass.SIM, ["+seed=3"]).record     # sim passes {args} to vvp
    assert rec.outcome is Outcome.OK and rec.args == ["+seed=3"]
    assert "vvp -n" in (ws.root / rec.results_dir / "cmd2.log").read_text().splitlines()[0]
    assert "+seed=3" in (ws.root / rec.results_dir / "cmd2.log").read_text().splitlines()[0]
    with pytest.raises(InputError, match="takes no arguments"):
        metered_call(ws, ToolClass.VERIFY, ["--cheat"])
    assert len(_records(ws)) == 1


def test_reward_library_scores_synth_metrics_and_skips_sim(tmp_path, pdk_paths):
    """[reward] targets: the reward library scores the real yosys area; a sim call gets no estimate."""
    import math
    import shutil as sh

    require_tool("yosys")
    config = tool_config(pdk_paths)
    config["reward"] = {"targets": "targets.toml"}
    ws = make_workspace(tmp_path / "ws", config, start=False)
    sh.copyfile(Path(__file__).parent / "fixtures" / "metered" / "counter_targets" / "targets.toml",
                ws.control / "targets.toml")
    start_run(ws)
    sim = metered_call(ws, ToolClass.SIM).record
    assert sim.outcome is Outcome.OK and sim.reward is None and sim.feasible is None
    synth = metered_call(ws, ToolClass.SYNTH).record
    area = synth.metrics["synth__design__instance__area__stdcell"]
    assert synth.reward == math.exp(-max(0.0, math.log(area / 250.0))) and synth.feasible is True
    assert 0 < synth.reward < 1 and synth.best_reward == synth.reward


def test_synth_through_the_flow_layer_scored_by_the_reward_library(tmp_path, repo):
    """The real flow step (`closer flow run --to sta`) as the metered synth class; its metadata.json
    is the public metrics and the design's own targets give the public reward."""
    import math
    import shutil as sh

    import tomli_w

    from closer.metered.paths import WorkspacePaths

    require_tool("yosys")
    require_tool("sta")
    root = tmp_path / "gcd"                      # the flow wants the folder named like the design
    sh.copytree(repo.design_dir("gcd"), root)
    ws = WorkspacePaths(root)
    ws.control.mkdir()
    sh.copyfile(root / "targets.toml", ws.control / "targets.toml")
    ws.tools_config.write_text(tomli_w.dumps({
        "run": {"design": "gcd"},
        "budget": {"tier": "low", "synth": 1},
        "surface": {"include": ["rtl/*", "constraints/*", "design.toml"]},
        "reward": {"targets": "targets.toml"},
        "tools": {"synth": {
            "commands": [["{python}", "-m", "closer.cli", "flow", "run", "{workspace}", "--to", "sta",
                          "--out", "{results}/flow"]],
            "metrics_file": "flow/metadata.json", "timeout_s": 900,
            "version": ["{python}", "-m", "closer.cli", "--version"]}},
    }))
    start_run(ws)
    rec = metered_call(ws, ToolClass.SYNTH).record
    assert rec.outcome is Outcome.OK, rec.message
    m = rec.metrics
    assert m["run__flow__last_step"] == "sta" and m["synth__design__instance__count__stdcell"] > 50
    assert isinstance(m["synth__timing__setup__ws"], float) and m["synth__power__total"] > 0
    area, power = m["synth__design__instance__area__stdcell"], m["synth__power__total"]
    penalty = 1.0 * max(0.0, math.log(area / 2000.0)) + 0.5 * max(0.0, math.log(power / 0.0008))
    assert rec.reward == pytest.approx(math.exp(-penalty), rel=1e-12) and rec.feasible is True
    refused = metered_call(ws, ToolClass.SYNTH).record
    assert refused.outcome is Outcome.REFUSED_BUDGET


def test_broken_estimator_keeps_the_record_and_missing_one_is_infra(tmp_path):
    ws = make_workspace(tmp_path / "ws", tool_config(None))
    (ws.control / "estimator.py").write_text("def estimate(tool, metrics, results_dir):\n    raise KeyError('x')\n")
    rec = metered_call(ws, ToolClass.SIM).record
    assert rec.outcome is Outcome.OK and rec.reward is None and rec.metrics["sim__tests__failed"] == 0
    assert "reward estimator failed: KeyError" in rec.message

    config = tool_config(None)
    config["reward"] = {"estimator": "no_such_module:estimate"}
    ws2 = make_workspace(tmp_path / "ws2", config)
    rec2 = metered_call(ws2, ToolClass.SIM).record
    assert rec2.outcome is Outcome.INFRA_ERROR and "cannot be loaded" in rec2.message
    assert not rec2.cost.counted and rec2.exit_codes == []
