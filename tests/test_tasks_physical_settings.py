"""A B/C workspace's floorplan and flow settings reach the physical flow the evaluator runs
(`floorplan/floorplan.toml`, `flow/settings.toml` -> design.toml [physical] -> the pnr node),
and a layout they leave with unrouted nets and opens is rejected by the route and LVS gates."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from closer.designs.model import load_design
from closer.errors import InputError, ToolError
from closer.flow.paths import FlowPaths
from closer.paths import repo_paths
from closer.tasks.checks import physical_settings


def _gcd_tree(tmp: Path, floorplan: str | None, flow: str | None) -> Path:
    """A design folder like the evaluator writes (gcd's own files + the workspace's settings)."""
    tree = tmp / "tree"
    shutil.copytree(repo_paths().design_dir("gcd"), tree)
    if floorplan is not None:
        (tree / "floorplan").mkdir()
        (tree / "floorplan" / "floorplan.toml").write_text(floorplan)
    if flow is not None:
        (tree / "flow").mkdir()
        (tree / "flow" / "settings.toml").write_text(flow)
    settings = physical_settings(tree)
    text = (tree / "design.toml").read_text()
    if settings:
        import tomli_w

        text += "\n" + tomli_w.dumps({"physical": settings})
    folder = tmp / "gcd"
    shutil.copytree(tree, folder, ignore=shutil.ignore_patterns("floorplan", "flow"))
    (folder / "design.toml").write_text(text)
    return folder


def test_settings_files_become_the_physical_table(tmp_path: Path):
    folder = _gcd_tree(tmp_path, "core_utilization = 0.25\naspect_ratio = 1.5\n", "router_passes = 4\n")
    design, _ = load_design(folder)
    assert (design.physical.core_utilization, design.physical.aspect_ratio, design.physical.router_passes) == \
        (0.25, 1.5, 4)
    assert load_design(_gcd_tree(tmp_path / "none", None, None))[0].physical.core_utilization == 0.30


@pytest.mark.parametrize("flow, rounds", [("timing_repair_rounds = 0\n", 0), ("", 2)])
def test_timing_repair_rounds_reach_the_pnr_nodes_config(tmp_path: Path, flow: str, rounds: int):
    """flow/settings.toml -> [physical] -> the pnr node's parameters -> SizingConfig.max_rounds."""
    from closer.flow.pnr_task import PnrTask

    design, _ = load_design(_gcd_tree(tmp_path, None, flow))
    node = PnrTask()
    node.set_physical(design.physical, step=None, index=None)
    assert node._physical_config().sizing.max_rounds == rounds


@pytest.mark.parametrize("floorplan, flow, says", [
    ("core_utilization = 0.95\n", None, "core_utilization"),
    (None, "router_passes = -1\n", "router_passes"),
    (None, "timing_repair_rounds = 5\n", "timing_repair_rounds"),
    (None, "place_density = 0.6\n", "place_density"),      # unknown key: not silently ignored
])
def test_bad_settings_name_the_key(tmp_path: Path, floorplan, flow, says):
    folder = _gcd_tree(tmp_path, floorplan, flow)
    with pytest.raises(InputError, match=says):
        load_design(folder)


def test_malformed_settings_file_is_a_clear_error(tmp_path: Path):
    tree = tmp_path / "t"
    (tree / "flow").mkdir(parents=True)
    (tree / "flow" / "settings.toml").write_text("router_passes = \n")
    with pytest.raises(ToolError, match="flow/settings.toml"):
        physical_settings(tree)


def test_starved_floorplan_is_rejected_by_route_and_lvs(tmp_path: Path, pdk_paths):
    """Two-way through the real flow: gcd signs off clean with the defaults (test_flow_pnr); with
    the core packed to 60 %, no rip-up passes and no repair, nets stay unrouted, the route gate
    and LVS fail."""
    from closer.flow.runner import run_flow
    from closer.reward.compute import compute_reward
    from closer.reward.metrics_file import load_metrics
    from closer.reward.targets import load_targets

    folder = _gcd_tree(tmp_path, "core_utilization = 0.6\naspect_ratio = 1.0\n",
                       "router_passes = 0\nrepair_rounds = 0\n")
    run_flow(str(folder), out=tmp_path / "run")
    meta_path = FlowPaths(tmp_path / "run", "gcd").metadata
    meta = json.loads(meta_path.read_text())
    assert meta["finish__design__instance__utilization"] > 0.5      # the setting reached the floorplan
    assert meta["closer__route__unrouted_nets"] > 0
    # the first routing variant left nets unrouted, so the second was tried too (closer.physical.route)
    from closer.physical.route.route import RouteConfig
    assert meta["closer__route__variant_best_failed_nets"][0] > 0
    assert meta["closer__route__variant_patches"] == list(RouteConfig().patch_variants[:2])
    assert meta["closer__signoff__lvs_errors"] > 0
    result = compute_reward(load_metrics([meta_path]),
                            load_targets(repo_paths().design_dir("gcd") / "targets-signoff.toml"))
    assert result.gate == 0 and str(result.gates["route"]) == "fail" and str(result.gates["lvs"]) == "fail"
