"""closer-tool pnr and the public projection, without the physical flow: the generated tools and
public targets, the physical conditions (hidden corners and placer seed), the reward estimate of
each tool class, the version probes, the sweep's closure policy."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from closer.agents.baselines import Settings, closure_step, failing_gates
from closer.budget import ToolClass
from closer.errors import ToolError
from closer.metered.paths import WorkspacePaths
from closer.metered.run import start_run
from closer.tasks import checks
from closer.tasks.estimator import estimate
from closer.tasks.evaluate import load_hidden, load_task
from closer.tasks.models import Conditions, PhysicalConditions
from closer.tasks.paths import PUBLIC_TARGETS, SuitePaths
from tests.projection_support import low_suite


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> SuitePaths:
    return low_suite(tmp_path_factory)


def _tools(suite: SuitePaths, tid: str) -> dict:
    return tomllib.loads((suite.task(tid).workspace / ".closer" / "tools.toml").read_text())["tools"]


def test_pnr_tool_only_where_the_flow_reaches_finish(suite: SuitePaths) -> None:
    assert "pnr" not in _tools(suite, "gcd-A-low")
    for tid in ("gcd-B-low", "gcd-C-low"):
        pnr = _tools(suite, tid)["pnr"]
        assert pnr["commands"][0][3:5] == ["pnr", "--workspace"] and pnr["timeout_s"] > 3600
    assert "closer-tool pnr" in suite.task("gcd-B-low").instruction.read_text()


def test_pnr_in_a_task_without_physical_flow_is_bad_input(suite: SuitePaths, tmp_path: Path) -> None:
    ws = suite.task("gcd-A-low").workspace
    done = subprocess.run([sys.executable, "-m", "closer.tasks.public_check", "pnr", "--workspace", str(ws),
                           "--results", str(tmp_path / "r"), "--metrics", str(tmp_path / "m.json")],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "task.json" in done.stderr and "flow_to" in done.stderr


def test_public_targets_are_what_public_reward_uses(suite: SuitePaths) -> None:
    for kind in "ABC":
        tid = f"gcd-{kind}-low"
        public = tomllib.loads((suite.task(tid).workspace / PUBLIC_TARGETS).read_text())
        hidden = tomllib.loads(suite.hidden(tid).targets.read_text())
        assert public == hidden and public["gates"]["required"] == load_hidden(suite.task(tid)).gates
        # the control dir is the harness's: never the agent's work, moved out of its sandbox
        locked = {f["path"] for f in json.loads(suite.task(tid).locked.read_text())["files"]}
        assert PUBLIC_TARGETS not in locked


def test_hidden_physical_conditions_hold_a_corner_and_a_seed_no_public_call_uses(suite: SuitePaths) -> None:
    for tid in ("gcd-B-low", "gcd-C-low"):
        _, task = load_task(suite.task(tid).root)
        hidden = load_hidden(suite.task(tid)).hidden.physical
        public = task.public.physical
        assert public is not None and hidden is not None
        assert set(hidden.corners) - set(public.corners) == {"tt_100C_1v80", "ff_100C_1v95"}
        assert hidden.place_seed != public.place_seed
        text = (suite.task(tid).workspace / "task.json").read_text() + suite.task(tid).instruction.read_text()
        assert "tt_100C_1v80" not in text and "ff_100C_1v95" not in text
    _, a_task = load_task(suite.task("gcd-A-low").root)
    assert a_task.public.physical is None and load_hidden(suite.task("gcd-A-low")).hidden.physical is None


def test_physical_conditions_reach_the_design_folder_and_only_from_the_task(suite: SuitePaths,
                                                                          tmp_path: Path) -> None:
    ws = suite.task("gcd-B-low").workspace
    _, task = load_task(suite.task("gcd-B-low").root)
    cond = {"corners": ["tt_025C_1v80", "tt_100C_1v80"], "place_seed": 7}
    folder = checks.write_design_folder(ws, task, {task.config: task.parameters[task.config]},
                                        tmp_path / "d" / "gcd", cond)
    physical = tomllib.loads((folder / "design.toml").read_text())["physical"]
    assert physical["corners"] == cond["corners"] and physical["place_seed"] == 7
    assert physical["core_utilization"] == 0.30  # the workspace's own floorplan setting
    tree = tmp_path / "tree"
    (tree / "flow").mkdir(parents=True)
    (tree / "flow" / "settings.toml").write_text("router_passes = 10\nplace_seed = 3\n")
    with pytest.raises(ToolError, match=r"flow/settings.toml: key place_seed: a condition of the task"):
        checks.physical_settings(tree)
    (tree / "flow" / "settings.toml").write_text("router_passes = 10\n")
    assert checks.physical_settings(tree) == {"router_passes": 10}


def test_physical_condition_models_check_corners() -> None:
    from closer.designs.model import Physical

    assert PhysicalConditions(corners=["ff_100C_1v95"]).place_seed == 0
    with pytest.raises(ValueError, match="unknown corner"):
        PhysicalConditions(corners=["tt_999C_9v99"])
    with pytest.raises(ValueError, match="signoff corner"):
        Physical(corners=["ss_100C_1v60"])
    assert Physical(corners=["tt_025C_1v80", "tt_100C_1v80"], place_seed=7).place_seed == 7
    with pytest.raises(ValueError, match="not in configs"):
        Conditions(configs=["a"], seeds=[1], by_config={"b": {}})


def test_placer_seed_changes_only_the_first_io_order() -> None:
    from closer.physical.place import place

    class _Net:
        top = "t"
        ports = {f"in{k}": "input" for k in range(6)} | {"out": "output"}

    slots = [("bottom", x) for x in range(0, 100, 10)] + [("top", x) for x in range(0, 100, 10)]
    ports = sorted(_Net.ports)
    base = place._initial_io(_Net(), ports, slots)
    assert base == place._initial_io(_Net(), ports, slots, 0)
    seeded = place._initial_io(_Net(), ports, slots, 7)
    assert seeded != base and sorted(seeded.values()) == sorted(base.values())
    assert seeded == place._initial_io(_Net(), ports, slots, 7)  # a seed is reproducible


def test_estimates_come_only_from_full_scorings() -> None:
    full = {"closer__estimate__reward": 0.81, "closer__estimate__feasible": True, "closer__func__tests_failed": 0}
    for tool in (ToolClass.VERIFY, ToolClass.PNR):
        est = estimate(tool, full, Path("."))
        assert est.reward == 0.81 and est.feasible
        unscored = estimate(tool, {"closer__estimate__reward": None}, Path("."))
        assert unscored.reward is None and not unscored.feasible
    assert estimate(ToolClass.SIM, {"closer__func__tests_total": 2, "closer__func__tests_failed": 0}, Path(".")) is None
    assert estimate(ToolClass.SYNTH, full, Path(".")) is None


def test_version_probes_expand_placeholders(suite: SuitePaths, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "ws"
    shutil.copytree(suite.task("gcd-B-low").workspace, root)
    info = start_run(WorkspacePaths(root))
    versions = info.provenance.tool_versions
    assert set(versions) == {"sim", "synth", "pnr", "verify"}
    for tool, line in versions.items():
        assert line.startswith("closer public checks ") and "unknown" not in line and "{python}" not in line
    assert "yosys 0.70" in versions["synth"] and "qrouter 1.4.88" in versions["pnr"]
    assert "iverilog 11" in versions["sim"] and "klayout 0.30" in versions["verify"]


def _pnr_metrics(**over) -> dict:
    clean = {"closer__func__tests_failed": 0, "closer__lec__result": "equivalent", "closer__gls__tests_failed": 0,
             "closer__route__unrouted_nets": 0, "detailedroute__route__drc_errors": 0,
             "closer__signoff__drc_errors": 0, "closer__signoff__lvs_errors": 0,
             "detailedroute__antenna__violating__nets": 0, "finish__timing__drv__max_slew": 0, "finish__timing__drv__max_cap__corner__ss_100C_1v60": 0,
             "finish__timing__hold__ws__corner__ff_n40C_1v95": 0.3}
    return clean | over


def test_closure_step_reads_the_pnr_result() -> None:
    start = Settings(0.30, 15, 8)
    assert failing_gates(_pnr_metrics()) == [] and closure_step(start, _pnr_metrics()) is None
    dirty = _pnr_metrics(closer__signoff__drc_errors=2, closer__signoff__lvs_errors=1)
    assert failing_gates(dirty) == ["drc", "lvs"]
    assert closure_step(start, dirty) == Settings(0.225, 15, 16)
    unrouted = _pnr_metrics(closer__route__unrouted_nets=3)
    assert closure_step(Settings(0.30, 5, 0), unrouted) == Settings(0.225, 15, 16)
    drv = _pnr_metrics(**{"finish__timing__drv__max_cap__corner__ss_100C_1v60": 4})
    # max-slew/max-cap: buffering and sizing on, then a smaller max fanout, then a denser core
    off = Settings(0.30, 15, 8, synth_buffering=False, synth_sizing=False)
    assert failing_gates(drv) == ["sta"] and closure_step(off, drv) == Settings(0.30, 15, 8)
    assert closure_step(start, drv) == Settings(0.30, 15, 8, max_fanout=5)
    assert closure_step(Settings(0.30, 15, 8, max_fanout=3), drv) == Settings(0.42, 15, 8, max_fanout=3)
    both = drv | {"closer__signoff__lvs_errors": 1}
    assert closure_step(start, both) == Settings(0.30, 15, 16, max_fanout=5)
    assert closure_step(Settings(0.6, 15, 8, max_fanout=3), drv) is None  # as dense as it goes
    # setup is scored, not a gate: sizing, then a larger delay margin, then the delay strategy
    slow = _pnr_metrics(**{"finish__timing__setup__ws__corner__ss_100C_1v60": -0.2})
    assert failing_gates(slow) == [] and closure_step(start, slow) == Settings(0.30, 15, 8, synth_delay_margin=0.4)
    assert closure_step(Settings(0.30, 15, 8, synth_sizing=False), slow) == start
    assert closure_step(Settings(0.30, 15, 8, synth_delay_margin=0.6), slow) == \
        Settings(0.30, 15, 8, synth_delay_margin=0.6, synth_strategy="delay")
    hold = _pnr_metrics(**{"finish__timing__hold__ws__corner__ff_n40C_1v95": -0.1})
    assert failing_gates(hold) == ["sta"] and closure_step(start, hold) is None
    assert closure_step(start, {}) is None  # the call produced no result
    for rtl in ({"closer__func__tests_failed": 1}, {"closer__lec__result": "not_equivalent"},
                {"closer__gls__tests_failed": 1}):
        assert closure_step(start, _pnr_metrics(**rtl, closer__signoff__drc_errors=1)) is None
    assert closure_step(Settings(0.12, 15, 64), dirty) is None  # nothing left to relax
