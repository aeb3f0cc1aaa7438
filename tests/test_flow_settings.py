"""Flow settings (closer.flow.settings): the ABC script they select, the docs table, bad values,
and the real flow two-way on the weak gcd of task B: with buffering and sizing off its sta gate
fails at ss (max slew / max cap on high-fanout nets), with the default settings it passes at
every corner."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import pytest

from closer.designs.model import load_design
from closer.errors import InputError
from closer.flow.paths import FlowPaths
from closer.flow.runner import run_flow
from closer.flow.settings import SynthSettings, SynthStrategy, abc_script, settings_table_markdown
from closer.physical.deadline import DEADLINE_ENV, FINISH_RESERVE_S
from tests.conftest import require_tool

CORNERS = ("ss_100C_1v60", "tt_025C_1v80", "ff_n40C_1v95")


# --- the ABC script and the declarations ---------------------------------------------------------

def test_abc_script_follows_the_settings():
    default = abc_script(SynthSettings())
    assert default.startswith("+strash;") and "&nf,{D}" in default
    assert "buffer,-N,7,-p" in default and "upsize,{D};dnsize,{D}" in default
    assert default.endswith(";stime,-p") and " " not in default  # Yosys's inline form
    assert "&if,-g,-K,6;&synch2" in default and default.count("&synch2") == 1  # balanced by default
    area = abc_script(SynthSettings(synth_strategy=SynthStrategy.AREA))
    assert "&if" not in area and "&dch,-f;&nf,{D}" in area
    bare = abc_script(SynthSettings(synth_buffering=False, synth_sizing=False))
    assert "buffer" not in bare and "upsize" not in bare and "dnsize" not in bare
    fanout = abc_script(SynthSettings(max_fanout=3, synth_sizing=False))
    assert "buffer,-N,3,-p" in fanout and "upsize" not in fanout
    delay = abc_script(SynthSettings(synth_strategy=SynthStrategy.DELAY))
    assert delay.count("&synch2") == 3 and "&if,-g,-K,6" in delay


def test_docs_settings_table_is_current(repo):
    table = settings_table_markdown()
    assert "| `max_fanout` | int | 2..64 | `7` |" in table and "| `router_passes` |" in table
    assert "corners" not in table and "place_seed" not in table  # conditions, not settings
    assert table in (repo.docs / "flow.md").read_text(), "regenerate the table in docs/flow.md"


def test_workspace_settings_file_lists_every_synthesis_setting():
    from closer.tasks.generate import B_C_PHYSICAL_FILES
    import tomllib

    written = tomllib.loads(B_C_PHYSICAL_FILES["flow/settings.toml"])
    assert SynthSettings(**{k: v for k, v in written.items() if k in SynthSettings.model_fields}) == SynthSettings()
    assert set(SynthSettings.model_fields) <= set(written)


@pytest.mark.parametrize("line, key", [
    ("max_fanout = 1", "physical.max_fanout"),
    ('synth_strategy = "fast"', "physical.synth_strategy"),
    ("synth_delay_margin = 1.5", "physical.synth_delay_margin"),
    ("synth_buffering = 3", "physical.synth_buffering"),
    ("max_fanuot = 4", "physical.max_fanuot"),
])
def test_bad_setting_names_file_and_key(tmp_path: Path, repo, line: str, key: str):
    folder = tmp_path / "gcd"
    shutil.copytree(repo.design_dir("gcd"), folder)
    toml = folder / "design.toml"
    toml.write_text(toml.read_text() + f"\n[physical]\n{line}\n")
    with pytest.raises(InputError, match=rf"key {key}\b") as info:
        load_design(folder)
    assert str(toml) in str(info.value)
    done = subprocess.run([sys.executable, "-m", "closer", "flow", "run", str(folder), "--to", "lint",
                           "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and key in done.stderr and str(toml) in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


# --- the real flow on the weak gcd ---------------------------------------------------------------

def _weak_gcd(root: Path, repo, physical: str = "") -> Path:
    """A design folder of task B's start: gcd's design.toml and SDC with the weak RTL."""
    folder = root / "gcd"
    shutil.copytree(repo.design_dir("gcd"), folder, ignore=shutil.ignore_patterns("weak"))
    shutil.copyfile(repo.design_dir("gcd") / "weak" / "rtl" / "gcd.v", folder / "rtl" / "gcd.v")
    if physical:
        toml = folder / "design.toml"
        toml.write_text(toml.read_text() + f"\n[physical]\n{physical}\n")
    return folder


def _sta_gate(meta_path: Path):
    from closer.reward.gates import GATES, GateName, observe
    from closer.reward.metrics_file import load_metrics

    return observe(GATES[GateName.STA], load_metrics([meta_path]))


@pytest.fixture(scope="module")
def weak_runs(tmp_path_factory, pdk_paths):
    from closer.paths import repo_paths

    repo = repo_paths()
    for tool in ("verilator", "yosys", "sta"):
        require_tool(tool)
    runs = {}
    # the failing run needs no route repair (its sta gate is what is checked): rounds would cost
    # minutes on a layout whose routing is not the point
    off = "synth_buffering = false\nsynth_sizing = false\nrepair_rounds = 0\ntiming_repair_rounds = 0"
    for name, physical in (("default", ""), ("off", off), ("deadline", "")):
        root = tmp_path_factory.mktemp(f"weak_{name}")
        folder = _weak_gcd(root, repo, physical)
        # "deadline": the default settings with a deadline already inside its reserve, so no
        # improvement round may start (closer.physical.deadline)
        stop_at = {DEADLINE_ENV: str(time.time() + FINISH_RESERVE_S)} if name == "deadline" else {}
        with mock.patch.dict(os.environ, stop_at):
            run_flow(str(folder), out=root / "run")
        runs[name] = FlowPaths(root / "run", "gcd").metadata
        runs[f"{name}_folder"] = folder
    return runs


def test_a_flow_at_its_deadline_starts_no_improvement_round_and_still_signs_off(weak_runs):
    """The same weak gcd as "default", its deadline already inside the finish reserve: Route starts
    no rip-up pass, Replace no second layout, Repair no round (default: its rounds mend the routed
    layout, which then signs off), the flow still ends
    with every gate measured on the layout it had (the route gate fails there) and says it was cut;
    the default run, without a deadline, is not."""
    import json

    meta, default = (json.loads(weak_runs[name].read_text()) for name in ("deadline", "default"))
    assert default["closer__repair__kept"] >= 1 and default["closer__gate__signoff__pass"] is True
    assert default["closer__flow__deadline_cut"] is False
    assert meta["closer__repair__rounds"] == 0 and meta["closer__repair__out_of_time"] is True
    assert meta["closer__flow__deadline_cut"] is True
    # qrouter's rip-up passes stopped at the deadline too, and the routability fallback (a second
    # placement and routing) did not start: the default run's rip-up passes route every net
    assert meta["closer__route__time_limited"] is True and meta["closer__route__unrouted_nets"] > 0
    assert meta["closer__replace__ran"] is False and meta["closer__replace__deadline"] is True
    assert default["closer__route__time_limited"] is False and "closer__replace__deadline" not in default
    for gate in ("route", "drc", "lvs", "antenna", "signoff"):
        assert isinstance(meta[f"closer__gate__{gate}__pass"], bool)
    assert meta["closer__gate__route__pass"] is False  # what the repair would have mended
    assert meta["closer__signoff__official_drc__errors"] is not None  # the official deck still ran


def test_weak_gcd_sta_gate_fails_without_buffering_and_sizing(weak_runs):
    import json

    obs = _sta_gate(weak_runs["off"])
    assert str(obs.observed) == "fail", obs.reason
    meta = json.loads(weak_runs["off"].read_text())
    assert meta["finish__timing__drv__max_slew__corner__ss_100C_1v60"] > 0
    assert meta["closer__setup_repair__rounds"] == 0  # timing_repair_rounds = 0 reached the flow


def test_weak_gcd_signs_off_with_the_default_settings(weak_runs):
    import json

    obs = _sta_gate(weak_runs["default"])
    assert str(obs.observed) == "pass", obs.reason
    meta = json.loads(weak_runs["default"].read_text())
    for corner in CORNERS:
        assert meta[f"finish__timing__drv__max_slew__corner__{corner}"] == 0
        assert meta[f"finish__timing__drv__max_cap__corner__{corner}"] == 0
        assert meta[f"finish__timing__hold__ws__corner__{corner}"] >= 0
        assert meta[f"finish__timing__setup__ws__corner__{corner}"] >= 0
    assert meta["closer__route__unrouted_nets"] == 0 and meta["closer__signoff__drc_errors"] == 0
    assert meta["closer__signoff__lvs_errors"] == 0
    off = json.loads(weak_runs["off"].read_text())
    assert meta["finish__timing__setup__ws__corner__ss_100C_1v60"] > off["finish__timing__setup__ws__corner__ss_100C_1v60"]
    # ABC's estimate of the first `balanced` script meets its target: its netlist is kept and the
    # `&syn2` script never runs (its weak-gcd netlist did not route at the B task's hidden seed)
    assert meta["closer__synth__abc_scripts_tried"] == ["balanced"] and meta["closer__synth__abc_script"] == "balanced"
    assert meta["closer__synth__abc_delay_ps"] <= meta["closer__synth__abc_target_ps"]


def test_strict_exit_and_verdict_line_follow_the_signoff(weak_runs):
    """`closer flow run --strict` (a rerun: every node reused) exits 1 on the failing layout and 0
    on the clean one; the last stdout line is the verdict, a line per step goes to stderr."""
    for name, code, word in (("off", 1, "FAIL"), ("default", 0, "PASS")):
        out = weak_runs[name].parent
        done = subprocess.run([sys.executable, "-m", "closer", "flow", "run", str(weak_runs[f"{name}_folder"]),
                               "--out", str(out), "--strict"], capture_output=True, text=True, timeout=300)
        assert done.returncode == code, done.stderr
        last = done.stdout.strip().splitlines()[-1]
        assert last.startswith(f"sign-off: {word} | route ") and " | drc " in last and " | lvs " in last
        assert "sta tt_025C_1v80" in last and "sta ss_100C_1v60" in last and "sta ff_n40C_1v95" in last
        if name == "default":
            assert "✗" not in last and "| lvs clean |" in last
        assert "flow: " in done.stderr
        if name == "off":
            assert "✗" in last.split("sta ss_100C_1v60")[1]


def test_routing_tries_a_second_variant_only_after_unrouted_nets(weak_runs):
    """closer.physical.route.route with real qrouter runs on the weak gcd (defaults, and synthesis
    buffering/sizing off): the second variant (the pin reserve) runs exactly when the first
    (keep-out + tracks) left nets unrouted, the variant with the fewest failed nets is chosen, and
    a beaten variant is never replayed. The other direction, a first variant that leaves nets
    unrouted, is the starved floorplan of tests/test_tasks_physical_settings.py."""
    import json

    from closer.physical.route.route import RouteConfig

    variants = RouteConfig().patch_variants
    for name in ("default", "off"):
        meta = json.loads(weak_runs[name].read_text())
        patches, failed = meta["closer__route__variant_patches"], meta["closer__route__variant_best_failed_nets"]
        runs = 1 if failed[0] == 0 else 2
        assert patches == list(variants[:runs]), (name, patches, failed)
        assert meta["closer__route__qrouter_patch"] == patches[failed.index(min(failed))]
        assert meta["closer__route__cpu_s"] > 0
        route_dir = FlowPaths(weak_runs[name].parent, "gcd").node_dir("pnr") / "phys" / "route"
        assert (route_dir / "qrouter_full.log").is_file()
        if runs == 2 and meta["closer__route__qrouter_patch"] != variants[0]:
            assert not list(route_dir.glob("qrouter_capped*.log"))  # the beaten first variant: no replay
