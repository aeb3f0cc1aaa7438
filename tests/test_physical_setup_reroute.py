"""The setup repair's incremental reroute (closer.physical.steps.timing._reroute_after_setup_repair,
closer.physical.repair.incremental) with the real tools, two-way: the counter at a 2.8 ns clock
misses setup at ss after routing, a sizing round resizes a few cells, and

- only the resized cells' nets and the nets with wiring near them are rerouted, every other net's
  NETS entry and pin stubs stay byte-identical, and the whole-chip checks end clean (no full
  reroute);
- isolation buffers add nets the routed layout did not have: they are added and routed;
- with the reroute perturbed (the resized cells' own nets left out, so their old wiring misses the
  moved pins) the whole-chip checks find the problems and the full reroute is used: every net
  routed, LVS clean, fewer markers than the incremental left.

One corner (ss, where the counter misses) keeps each run under a minute and a half on 2 cores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from closer.physical import PhysicalConfig, run_physical
from closer.physical.io.netlist import synthesize
from closer.physical.repair.repair import RepairConfig
from closer.physical.route.route import have_qrouter
from tests.conftest import require_tool
from tests.test_physical import _net_entries

pytestmark = pytest.mark.slow

SS = "ss_100C_1v60"
ROUND = f"closer__setup_repair__round1__{SS}"


@pytest.fixture(scope="module")
def counter_v(tmp_path_factory, pdk_paths) -> Path:
    require_tool("yosys")
    require_tool("sta")
    if not have_qrouter():
        pytest.fail("qrouter 1.4.88 not built: run scripts/build-qrouter.sh")
    work = tmp_path_factory.mktemp("counter_setup")
    return synthesize([pdk_paths.root / "smoke" / "counter.v"], "counter", pdk_paths.liberty("tt_025C_1v80"),
                      work / "counter.v", work / "synth.log")


def _config(**kw) -> PhysicalConfig:
    return PhysicalConfig(clock_port="clk", clock_period_ns=2.8, corners=(SS,), signoff_corner=SS, **kw)


def _assert_signed_off(m: dict) -> None:
    assert m["closer__route__unrouted_nets"] == 0 and m["detailedroute__route__drc_errors"] == 0
    assert m["closer__signoff__lvs__clean"] is True and m["closer__signoff__official_drc__errors"] == 0
    assert m["detailedroute__antenna__violating__nets"] == 0


def _steps_after_sizing(phys: Path) -> list[str]:
    names = [s["step"] for s in json.loads((phys / "steps.json").read_text())]
    return names[names.index("Sta") + 1:]


def test_a_round_reroutes_only_what_it_changed_and_ends_clean(counter_v, tmp_path):
    result = run_physical(counter_v, "counter", None, tmp_path / "phys", _config())
    m = result.metrics
    assert m[f"closer__setup_repair__ws_before__{SS}"] < 0, "the counter no longer misses setup at 2.8 ns"
    assert m[f"{ROUND}__resized"] >= 1
    assert m[f"{ROUND}__full_reroute"] is False and m[f"{ROUND}__incremental_problems"] == 0
    _assert_signed_off(m)
    record = json.loads((tmp_path / "phys" / "route" / "setup1" / "setup_repair.json").read_text())
    assert len(record["cells"]) == m[f"{ROUND}__resized"]
    chosen = set(record["cell_nets"]) | set(record["nets_near_cells"])
    assert len(chosen) == m[f"{ROUND}__rerouted_nets"] and record["unrouted"] == []
    before, after = (_net_entries(Path(record[k]).read_text()) for k in ("base", "routed"))
    assert {n for n in before.keys() | after.keys() if before.get(n) != after.get(n)} <= chosen
    assert sum(1 for n in before if n not in chosen) > 2 * len(chosen)  # most nets kept their wiring
    # qrouter read the kept wiring where the final layout has it: the routed DEF has a wire written
    # off its grid row (qrouter's tap offset, put back by finalize_def), and the reroute's input has
    # it on the row; read as written, the row it holds looked free (PicoRV32: an LVS short)
    from closer.physical.route.route import on_grid_rows

    base_text = Path(record["base"]).read_text()
    final_form = _net_entries(on_grid_rows(base_text))
    offset = {n for n in before if before[n] != final_form.get(n)} - chosen
    assert offset, "no kept net with an offset wire: the check below would be vacuous"
    read = _net_entries((tmp_path / "phys" / "route" / "setup1" / "partial.def").read_text())
    assert all(read[n] == final_form[n] != before[n] for n in offset)
    # no full reroute; the official deck ran once, on the final GDS, after the setup repair
    later = _steps_after_sizing(tmp_path / "phys")
    assert "Route" not in later and later.count("SignoffDrc") == 1
    assert later[-3:] == ["SetupRepair", "SignoffDrc", "Metrics"]


def test_a_reroute_that_leaves_problems_falls_back_to_the_full_one(counter_v, tmp_path, monkeypatch):
    from closer.physical.repair import incremental

    monkeypatch.setattr(incremental, "cell_nets", lambda netlist, names: set())
    # no rip-up rounds: what the incremental reroute left stays for the fallback to see
    result = run_physical(counter_v, "counter", None, tmp_path / "phys",
                          _config(repair=RepairConfig(rounds=0, item_rounds=0)))
    m = result.metrics
    assert m[f"{ROUND}__resized"] >= 1
    # more problems than the layout had before the round (with the rounds off it may have one)
    assert m[f"{ROUND}__incremental_problems"] > m[f"{ROUND}__problems_before"]
    assert m[f"{ROUND}__full_reroute"] is True
    later = _steps_after_sizing(tmp_path / "phys")
    assert later.count("Route") == 1 and later.index("Route") > later.index("Lvs")  # after the incremental's checks
    # the full reroute mends what the perturbed incremental one left: every net routed, LVS and
    # antenna clean, fewer markers than the incremental's problems. Not necessarily DRC-clean with
    # the rip-up rounds off: on the 2026-12-04 machine it leaves one m1.2 via-pad pair (0.095 um),
    # the same at bed2983 with that commit's qrouter build, which the rounds (off here) would mend
    assert m["closer__route__unrouted_nets"] == 0 and m["closer__signoff__lvs__clean"] is True
    assert m["detailedroute__antenna__violating__nets"] == 0
    assert m["detailedroute__route__drc_errors"] < m[f"{ROUND}__incremental_problems"]


def test_isolation_buffers_get_their_new_nets_routed_incrementally(counter_v, tmp_path):
    """Buffers alone (no sizing passes): each adds a net the routed DEF did not have; the
    incremental reroute adds and routes it (DEF NETS count, RC tree for the SPEF) and LVS is clean."""
    from closer.physical.repair.sizing import SizingConfig

    sizing = SizingConfig(max_passes=0, buffer_passes=4, isolate_min_slack_ns=0.0, drv_repair=False)
    m = run_physical(counter_v, "counter", None, tmp_path / "phys", _config(sizing=sizing)).metrics
    assert m[f"{ROUND}__buffers"] >= 1 and m[f"{ROUND}__full_reroute"] is False
    record = json.loads((tmp_path / "phys" / "route" / "setup1" / "setup_repair.json").read_text())
    new = {n for n in record["cell_nets"] if n.startswith("setup_iso_net_")}
    assert len(new) == m[f"{ROUND}__buffers"] and record["unrouted"] == []
    routed = _net_entries(Path(record["routed"]).read_text())
    assert new <= routed.keys() and not new & _net_entries(Path(record["base"]).read_text()).keys()
    assert all("+ ROUTED" in routed[n][0] for n in new)
    rc = (tmp_path / "phys" / "route" / "setup1" / "counter.rc").read_text().splitlines()
    assert new <= {line.split(" ", 1)[0] for line in rc}
    _assert_signed_off(m)


def test_problems_the_layout_already_had_do_not_send_a_round_to_the_full_reroute(counter_v, tmp_path, monkeypatch):
    """The other side of the fallback: the incremental reroute is judged against the layout the
    round started from. With three problems counted on every layout (a large design's unrouted
    nets, which neither reroute frees), the clean incremental reroute leaves as many as it found
    and no full reroute runs; the same count one higher after the reroute would have sent it there
    (the test above)."""
    from closer.physical.steps import timing

    real = timing.signoff_problems
    monkeypatch.setattr(timing, "signoff_problems", lambda ctx: real(ctx) + 3)
    result = run_physical(counter_v, "counter", None, tmp_path / "phys", _config())
    m = result.metrics
    assert m[f"{ROUND}__resized"] >= 1
    assert m[f"{ROUND}__problems_before"] == 3 and m[f"{ROUND}__incremental_problems"] == 3
    assert m[f"{ROUND}__full_reroute"] is False
    assert "Route" not in _steps_after_sizing(tmp_path / "phys")
    _assert_signed_off(m)


def test_a_large_design_is_sized_on_the_routed_layout_before_its_first_sign_off(counter_v, tmp_path):
    """RoutedSetupRepair (on from `routed_min_instances`, here 1): STA on the router's parasitics,
    a sizing round, the changed cells' nets rerouted held, then the first sign-off checks it all.
    Two-way: the signed-off slack SetupRepair starts from is better than the routed layout's
    (the default path, the tests above, has SetupRepair find the counter failing)."""
    from closer.physical.repair.sizing import SizingConfig

    key = "closer__routed_setup_repair"
    m = run_physical(counter_v, "counter", None, tmp_path / "phys",
                     _config(sizing=SizingConfig(routed_min_instances=1))).metrics
    assert m[f"{key}__skipped"] is None and m[f"{key}__rounds"] >= 1
    assert m[f"{key}__round1__{SS}__ws_before"] < 0 and m[f"{key}__round1__{SS}__resized"] >= 1
    record = json.loads((tmp_path / "phys" / "route" / "routed_setup1" / "setup_repair.json").read_text())
    assert len(record["cells"]) >= m[f"{key}__round1__{SS}__resized"] and record["unrouted"] == []
    names = [s["step"] for s in json.loads((tmp_path / "phys" / "steps.json").read_text())]
    sized = names.index("RoutedSetupRepair")
    assert names.index("Sta") < sized < names.index("Gds") and "Route" not in names[sized:]
    assert m[f"closer__setup_repair__ws_before__{SS}"] > m[f"{key}__round1__{SS}__ws_before"]
    _assert_signed_off(m)
    # the run's timing keys are the sign-off STA's, not those of the layout before sign-off
    steps = json.loads((tmp_path / "phys" / "steps.json").read_text())
    signoff_sta = [s["metrics"] for s in steps[names.index("Gds"):] if s["step"] == "Sta"][-1]
    assert m[f"finish__timing__setup__ws__corner__{SS}"] == signoff_sta[f"finish__timing__setup__ws__corner__{SS}"]
    # below the threshold (the default for the counter) the step records why it did not run
    small = run_physical(counter_v, "counter", None, tmp_path / "small", _config(), stop_after="RoutedSetupRepair")
    assert small.metrics[f"{key}__skipped"] == "off for this design" and small.metrics[f"{key}__rounds"] == 0
    sized = run_physical(counter_v, "counter", None, tmp_path / "sized",
                         _config(sizing=SizingConfig(routed_min_instances=1)), stop_after="RoutedSetupRepair")
    assert sized.metrics[f"{key}__rounds"] >= 1
    assert not any(k.startswith("finish__timing") for k in sized.metrics)  # no sign-off STA yet
