"""`closer flow run` through the physical back half (the `pnr` node over closer.physical): one real
full run of gcd, one reuse run, the reward gates on its metadata, and a clear pnr failure."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from closer import metrics as closer_keys
from closer.errors import ToolError
from closer.flow import metrics
from closer.flow.cli import flow_group
from closer.flow.paths import FlowPaths
from closer.flow.direct.pnr import PHYS_DIR, PNR_JSON, physical_revision, signoff_metrics
from closer.flow.runner import PNR_STAGE_FILE, run_flow
from closer.flow.steps import Backend, steps_until
from closer.paths import schema_path
from tests.conftest import require_tool

RECORDED = Path(__file__).parent / "fixtures" / "flow_pnr" / "gcd_pnr.json"
FRONT = ["lint", "elaborate", "synth", "sta"]
SIGNOFF_KEYS = ("detailedroute__route__drc_errors", closer_keys.SIGNOFF_DRC_ERRORS,
                closer_keys.SIGNOFF_LVS_ERRORS, "finish__timing__setup__ws")


# --- mapping and parsing, on recorded output ------------------------------------------------------

def test_signoff_counts_from_physical_metrics():
    clean = signoff_metrics({"closer__signoff__official_drc__errors": 0, "closer__signoff__drc__errors": 0,
                             "closer__signoff__lvs__clean": True,
                             "closer__signoff__lvs__opens": 0, "closer__signoff__lvs__shorts": 0})
    assert clean[closer_keys.SIGNOFF_DRC_ERRORS] == 0 and clean[closer_keys.SIGNOFF_LVS_ERRORS] == 0
    dirty = signoff_metrics({"closer__signoff__official_drc__errors": 9, "closer__signoff__drc__errors": 0,
                             "closer__signoff__lvs__clean": False,
                             "closer__signoff__lvs__opens": 3, "closer__signoff__lvs__shorts": 1})
    assert dirty[closer_keys.SIGNOFF_DRC_ERRORS] == 9 and dirty[closer_keys.SIGNOFF_LVS_ERRORS] == 4
    # an LVS that is not clean never reads as 0 errors, even with no open or short listed
    odd = signoff_metrics({"closer__signoff__lvs__clean": False, "closer__signoff__lvs__opens": 0,
                           "closer__signoff__lvs__shorts": 0})
    assert odd[closer_keys.SIGNOFF_LVS_ERRORS] == 1
    assert closer_keys.SIGNOFF_LVS_ERRORS not in signoff_metrics({})  # LVS did not run: unmeasured
    # the drc gate reads the official deck only: Closer's deck alone leaves it unmeasured
    assert closer_keys.SIGNOFF_DRC_ERRORS not in signoff_metrics({"closer__signoff__drc__errors": 0})


def test_pnr_metrics_recorded_and_stage_order():
    out = metrics.pnr_metrics(RECORDED)
    assert all(k in out for k in SIGNOFF_KEYS)
    stages = [k.split("__", 1)[0] for k in out]
    ranks = [metrics.PHYSICAL_STAGE_ORDER.index(s) for s in stages]
    assert ranks == sorted(ranks)  # detailedroute__ before finish__ before closer__


@pytest.mark.parametrize("key, bad, says", [
    ("closer__signoff__lvs_errors", None, "closer__signoff__lvs_errors"),
    ("detailedroute__route__drc_errors", -1, "detailedroute__route__drc_errors"),
    ("finish__timing__setup__ws", "fast", "finish__timing__setup__ws"),
])
def test_pnr_metrics_reject_perturbed(tmp_path: Path, key, bad, says):
    raw = json.loads(RECORDED.read_text())
    if bad is None:
        del raw[key]
    else:
        raw[key] = bad
    path = tmp_path / "pnr.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ToolError, match=re.escape(str(path))) as info:
        metrics.pnr_metrics(path)
    assert says in str(info.value)


def test_physical_revision_is_a_stable_content_hash():
    first = physical_revision()
    assert re.fullmatch(r"[0-9a-f]{16}", first) and physical_revision() == first


def test_steps_end_with_pnr():
    assert [s.name for s in steps_until(Backend.CLASSIC, None)] == [*FRONT, "pnr"]
    assert [s.name for s in steps_until(Backend.CLASSIC, "pnr")] == [*FRONT, "pnr"]
    assert [s.name for s in steps_until(Backend.CLASSIC, "sta")] == FRONT


# --- the real flow to the end ---------------------------------------------------------------

@pytest.fixture(scope="module")
def full_run(tmp_path_factory, pdk_paths):
    for tool in ("verilator", "yosys", "sta"):
        require_tool(tool)
    out = tmp_path_factory.mktemp("gcd_pnr")
    return out, run_flow("gcd", out=out)  # no --to: the whole flow


def test_full_run_writes_physical_metrics(full_run):
    out, result = full_run
    paths = FlowPaths(out, "gcd")
    assert [s.name for s in result.steps] == [*FRONT, "pnr"] and result.to == "pnr"
    pnr = result.steps[-1]
    assert not pnr.reused and pnr.tool == "qrouter" and pnr.tool_version
    meta = json.loads(paths.metadata.read_text())
    for key in SIGNOFF_KEYS:
        assert key in meta, key
    assert isinstance(meta["closer__signoff__lvs_errors"], int)
    assert meta["run__flow__last_step"] == "pnr"
    assert "qrouter" in meta["run__flow__physical__tools"]
    # the front stages are still there, and the stage file equals what was merged
    assert "synth__timing__setup__ws" in meta
    stage = json.loads((paths.metrics_dir / PNR_STAGE_FILE).read_text())
    assert {k: meta[k] for k in stage} == stage
    # the counts are the tools' own: the DRC total is the sum of the per-rule counts, LVS errors
    # are the opens and shorts the LVS comparison listed
    rules = {k: v for k, v in meta.items() if k.startswith("closer__signoff__drc__")
             and k != "closer__signoff__drc__errors"}
    assert sum(rules.values()) == meta["detailedroute__route__drc_errors"]  # Closer's deck: the route gate
    official = {k: v for k, v in meta.items() if k.startswith("closer__signoff__official_drc__")
                and k.rsplit("__", 1)[1] not in ("errors", "rules", "wall_s")}
    assert sum(official.values()) == meta["closer__signoff__drc_errors"]  # the official deck: the drc gate
    assert meta["closer__signoff__official_drc__rules"] > 200  # FEOL + BEOL + off-grid sections ran
    opens, shorts = meta["closer__signoff__lvs__opens"], meta["closer__signoff__lvs__shorts"]
    expected = 0 if meta["closer__signoff__lvs__clean"] else max(1, opens + shorts)
    assert meta["closer__signoff__lvs_errors"] == expected
    assert (paths.node_dir("pnr") / "outputs" / "gcd.gds").stat().st_size > 0
    assert (paths.node_dir("pnr") / PHYS_DIR / "steps.json").is_file()
    # the node's settings carry closer.physical's revision, so a change there reruns the node
    assert _pnr_settings(paths)["physical"] == physical_revision()
    # the layout's cells: the synthesized ones plus the clock tree's buffers (closer.physical.cts.cts) and
    # the hold repair's delay cells
    assert meta["finish__design__instance__count"] == (meta["synth__design__instance__count"] + meta["closer__cts__buffers"]
                                                      + meta["cts__design__instance__count__hold_buffer"])
    assert meta["closer__cts__buffers"] >= 2 and meta["closer__cts__max_fanout"] <= 16
    netlist = (paths.node_dir("pnr") / "outputs" / "gcd.vg").read_text()
    assert netlist.count("sky130_fd_sc_hd__clkbuf_4 cts_l1_") == meta["closer__cts__buffers"]


def test_metadata_keys_documented_and_schema_valid(full_run):
    out, _ = full_run
    meta = json.loads(FlowPaths(out, "gcd").metadata.read_text())
    jsonschema.validate(meta, json.loads(schema_path("flow-metadata").read_text()))
    patterns = [re.sub(r"<[^>]+>", "*", k.key) for k in metrics.KEY_TABLE]
    assert [k for k in meta if not any(fnmatch.fnmatchcase(k, p) for p in patterns)] == []


def test_reward_gates_match_the_metrics(full_run, tmp_path: Path):
    out, _ = full_run
    from closer.reward.compute import compute_reward
    from closer.reward.metrics_file import load_metrics
    from closer.reward.targets import load_targets

    targets = tmp_path / "targets.toml"
    targets.write_text('[gates]\nrequired = ["route", "drc", "lvs"]\n\n[[targets]]\nname = "area"\n'
                       'metric = "finish__design__instance__area"\ntarget = 2000.0\nweight = 1.0\n')
    meta_path = FlowPaths(out, "gcd").metadata
    meta = json.loads(meta_path.read_text())
    result = compute_reward(load_metrics([meta_path]), load_targets(targets))
    expected = {"route": meta["detailedroute__route__drc_errors"] == 0,
                "drc": meta[closer_keys.SIGNOFF_DRC_ERRORS] == 0,
                "lvs": meta[closer_keys.SIGNOFF_LVS_ERRORS] == 0}
    gates = {k: str(v) for k, v in result.gates.items()}
    for gate, ok in expected.items():
        assert gates[gate] == ("pass" if ok else "fail"), (gate, gates)
    assert result.gate == (1 if all(expected.values()) else 0)


def test_rerun_to_pnr_reuses_every_node(full_run):
    out, first = full_run
    paths = FlowPaths(out, "gcd")
    before = paths.metadata.read_text()
    cli = CliRunner().invoke(flow_group, ["run", "gcd", "--to", "pnr", "--out", str(out), "--json"])
    assert cli.exit_code == 0, cli.output
    record = json.loads(cli.output)
    assert [s["name"] for s in record["steps"]] == [*FRONT, "pnr"]
    assert all(s["reused"] for s in record["steps"])
    after = json.loads(paths.metadata.read_text())
    old = json.loads(before)
    assert {k: after[k] for k in SIGNOFF_KEYS} == {k: old[k] for k in SIGNOFF_KEYS}
    assert (paths.node_dir("pnr") / PNR_JSON).is_file()


def test_pnr_failure_is_a_clear_error(monkeypatch, tmp_path: Path, pdk_paths):
    """run_physical raising (here: made to raise, in the forked node process) fails the flow
    naming the step, its log and the message; the run record says failed."""
    import closer.physical

    def broken(*args, **kwargs):
        raise ToolError("qrouter did not finish its schedule; log: phys/route/qrouter_full.log")

    monkeypatch.setattr(closer.physical, "run_physical", broken)
    with pytest.raises(ToolError) as info:
        run_flow("gcd", config="w8", out=tmp_path)
    message = str(info.value)
    assert "step pnr (qrouter) failed" in message and "pnr.log" in message
    assert "qrouter did not finish its schedule" in message
    record = json.loads((tmp_path / "flow.json").read_text())
    assert record["status"] == "failed" and "pnr" in record["error"]
    assert not FlowPaths(tmp_path, "gcd").metadata.exists()  # nothing half-written is scored


def test_gcd_signs_off_clean(full_run):
    """Issue 6's done criterion on the default design: no unrouted net, 0 DRC errors under the
    unrelaxed deck, LVS clean; the search-and-repair rounds that got there are on record and the
    layout they started from is on record."""
    out, _ = full_run
    meta = json.loads(FlowPaths(out, "gcd").metadata.read_text())
    assert meta["closer__route__unrouted_nets"] == 0
    assert meta["detailedroute__route__drc_errors"] == 0 == meta[closer_keys.SIGNOFF_DRC_ERRORS]
    assert meta["closer__signoff__lvs__clean"] is True and meta[closer_keys.SIGNOFF_LVS_ERRORS] == 0
    assert meta["closer__timing__spef_warnings"] == 0  # OpenSTA read every net of the SPEF
    rounds = json.loads((FlowPaths(out, "gcd").node_dir("pnr") / PHYS_DIR / "route" / "repair" / "repair.json")
                        .read_text())
    if rounds:  # repair rounds run only when the routed layout had problems
        assert rounds[0]["before"] > 0
    from closer.paths import repo_paths
    from closer.reward.compute import compute_reward
    from closer.reward.metrics_file import load_metrics
    from closer.reward.targets import load_targets

    # the design's sign-off targets (what `make demo` scores): gates sta, route, drc, lvs
    result = compute_reward(load_metrics([FlowPaths(out, "gcd").metadata]),
                            load_targets(repo_paths().design_dir("gcd") / "targets-signoff.toml"))
    assert result.gate == 1, {k: str(v) for k, v in result.gates.items()}


def _pnr_settings(paths) -> dict:
    """The settings the direct engine keys the gcd run's pnr node on."""
    from closer.designs.model import load_design
    from closer.flow.direct import specs
    from closer.flow.platform import load_platform
    from closer.flow.runner import direct_context
    from closer.pdk import pdk

    design, dpaths = load_design("gcd")
    ctx = direct_context(design, dpaths, "default", load_platform(), pdk(), paths, paths.canonical_sdc)
    return specs.spec("pnr", ctx, None).settings
