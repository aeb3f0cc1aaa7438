"""Which qrouter variant (QROUTER_CLOSER_PATCH) closer.physical.route.route.route takes: the first
of `RouteConfig.patch_variants` always, the next only when the previous left nets unrouted, the
fewest failed nets at a best pass wins, and only the winner is replayed to its best pass. The
variant runs are stand-ins here (what each would leave); the real qrouter runs of both variants
are in tests/test_flow_settings.py (the weak gcd, buffering off, needs the second; with the
defaults it does not)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from closer.physical.io.netlist import Netlist
from closer.physical.route import route as route_mod
from closer.physical.route.route import PATCH_ENV, RouteConfig, RouteResult, _FullRun


def _netlist(nets: int) -> Netlist:
    return Netlist("t", {}, {}, {f"n{i}": [] for i in range(nets)})


class _Variants:
    """Stand-in for `_route_once`: per patch, (best pass's failed nets, needs a replay)."""

    def __init__(self, outcomes: dict[str | None, tuple[int, bool]]):
        self.outcomes = outcomes
        self.ran: list[str | None] = []
        self.replayed: list[str | None] = []

    def __call__(self, tech_lef, router_lef, in_def, layout, work: Path, cfg, netlist, patch, guides=None,
                 before_read=(), first=()) -> _FullRun:
        self.ran.append(patch)
        failed, needs_replay = self.outcomes[patch]

        def result() -> RouteResult:
            return RouteResult(work / "r.def", work / "r.rc", failed, [failed], [], None, 5.0, 1.0, False, patch,
                               cpu_s=4.0)

        if not needs_replay:
            return _FullRun(patch, failed, 10.0, 8.0, result())

        def replay() -> RouteResult:
            self.replayed.append(patch)
            return result()

        return _FullRun(patch, failed, 10.0, 8.0, replay=replay)


def _route(monkeypatch, tmp_path: Path, outcomes, nets: int = 300) -> tuple[RouteResult, _Variants]:
    fake = _Variants(outcomes)
    monkeypatch.setattr(route_mod, "_route_once", fake)
    monkeypatch.delenv(PATCH_ENV, raising=False)
    cfg = RouteConfig(patch_variants=("first", "second"))
    return route_mod.route(tmp_path, tmp_path, tmp_path, None, tmp_path, cfg, _netlist(nets)), fake


def test_a_complete_first_variant_is_the_only_run(monkeypatch, tmp_path: Path):
    result, fake = _route(monkeypatch, tmp_path, {"first": (0, False), "second": (0, False)})
    assert fake.ran == ["first"] and result.patch == "first" and result.tried == [("first", 0)]


def test_the_second_runs_only_after_unrouted_nets_and_the_loser_is_not_replayed(monkeypatch, tmp_path: Path):
    result, fake = _route(monkeypatch, tmp_path, {"first": (10, True), "second": (0, False)})
    assert fake.ran == ["first", "second"] and fake.replayed == []
    assert result.patch == "second" and result.failed_nets == 0
    assert result.tried == [("first", 10), ("second", 0)]
    assert result.wall_s == 20.0 and result.cpu_s == 16.0  # both full runs


@pytest.mark.parametrize("first, second, winner", [(3, 7, "first"), (7, 3, "second"), (4, 4, "first")])
def test_only_the_winner_of_two_failing_variants_is_replayed(monkeypatch, tmp_path: Path, first, second, winner):
    result, fake = _route(monkeypatch, tmp_path, {"first": (first, True), "second": (second, True)})
    assert fake.ran == ["first", "second"] and fake.replayed == [winner]
    assert result.patch == winner and result.failed_nets == min(first, second)
    assert result.wall_s == 25.0 and result.cpu_s == 20.0  # two full runs and one replay


def test_large_designs_and_a_patch_from_the_environment_run_one_variant(monkeypatch, tmp_path: Path):
    result, fake = _route(monkeypatch, tmp_path, {"first": (5, False), "second": (0, False)},
                          nets=RouteConfig().save_best_min_nets)
    assert fake.ran == ["first"] and result.failed_nets == 5
    fake = _Variants({None: (5, False)})
    monkeypatch.setattr(route_mod, "_route_once", fake)
    monkeypatch.setenv(PATCH_ENV, "off")
    route_mod.route(tmp_path, tmp_path, tmp_path, None, tmp_path, RouteConfig(), _netlist(300))
    assert fake.ran == [None]


def test_large_designs_route_narrow_nets_first_with_effort_per_failed_net(tmp_path):
    """RouteConfig.for_nets: below large_min_nets the settings are as given (the suite's designs
    keep their measured schedule); from it, qrouter's net order 1 (patch 04, in the environment)
    and the one variant `large_patch`; effort_per_failed puts a stage-2 effort of at least that
    share of the nets still failed into the script."""
    from closer.physical.route.route import ORDER_ENV, RouteConfig, _patch_env, _script

    cfg = RouteConfig()
    assert cfg.for_nets(cfg.large_min_nets - 1) == cfg
    large = cfg.for_nets(cfg.large_min_nets)
    assert (large.net_order, large.effort_per_failed, large.patch_variants, large.passes) == (1, 0.0, ("on",), 40)
    assert cfg.stage3 and large.stage3 and not RouteConfig(large_stage3=False).for_nets(cfg.large_min_nets).stage3
    assert _patch_env("on", None, large.net_order) == {"QROUTER_CLOSER_PATCH": "on", ORDER_ENV: "1"}
    assert ORDER_ENV not in _patch_env("on", None, cfg.net_order)
    layout = SimpleNamespace(die_w=1000, die_h=1000)
    from closer.pdk import pdk

    args = (pdk().tech_lef, Path("c.lef"), Path("in.def"), Path("out.def"), Path("out.rc"), layout)
    assert "effort [expr {max($e, int(ceil(1.0 * $r)))}]" in _script(*args, RouteConfig(effort_per_failed=1.0), 15)
    assert "stage2 mask $m effort $e]" in _script(*args, cfg, 15)
    assert "\npasses 40\n" in _script(*args, large, 15) and "passes" not in _script(*args, cfg, 15)
    assert "[stage3]" in _script(*args, large, 15) and "stage3" not in _script(*args, replace(cfg, stage3=False), 15)
    assert RouteConfig(large_min_nets=0).for_nets(10**6) == RouteConfig(large_min_nets=0)


def test_an_outer_environment_cannot_set_the_guides_or_the_net_order(monkeypatch):
    """qrouter's environment always names the guides and the net order (empty / 0 when the
    config uses none), so a QROUTER_CLOSER_GUIDES or _ORDER left in the caller's environment does
    not reach the router; the config's own values do."""
    from closer.physical.route.route import GUIDES_ENV, ORDER_ENV, _qrouter_env
    from closer.procs import Command

    monkeypatch.setenv(GUIDES_ENV, "/tmp/elsewhere.txt")
    monkeypatch.setenv(ORDER_ENV, "1")
    plain = _qrouter_env("on", None, 0)
    assert plain[GUIDES_ENV] == "" and plain[ORDER_ENV] == "0" and plain["QROUTER_CLOSER_PATCH"] == "on"
    assert {**os.environ, **Command(["qrouter"], env=plain).env}[GUIDES_ENV] == ""
    guided = _qrouter_env("on", Path("g.txt"), 1)
    assert guided[GUIDES_ENV] == "g.txt" and guided[ORDER_ENV] == "1"


@pytest.mark.slow
def test_stage3_runs_only_where_the_config_keeps_it(tmp_path):
    """The real qrouter on two cells and one net (tests/test_route_outside_die.py's layout, no wall):
    stage 3 runs with RouteConfig.stage3 and not without it; the net is routed either way."""
    from types import SimpleNamespace

    from closer.pdk import pdk
    from closer.physical.route.route import RouteConfig, _qrouter_env, _script, failed_nets, qrouter_binary
    from closer.procs import Command, run
    from tests.test_route_outside_die import H, SPLIT_DEF, W

    p = pdk()
    for stage3 in (True, False):
        work = tmp_path / str(stage3)
        work.mkdir()
        (work / "t.def").write_text(SPLIT_DEF)
        (work / "t.tcl").write_text(_script(p.tech_lef, p.cell_lef, work / "t.def", work / "out.def", work / "out.rc",
                                            SimpleNamespace(die_w=W, die_h=H), RouteConfig(stage3=stage3), 1))
        done = run(Command([str(qrouter_binary()), "-noc", "-nog", "-s", str(work / "t.tcl")], cwd=work,
                           timeout_s=120, env=_qrouter_env(None, None, 0)), work / "q.log", check=False)
        log = done.log.read_text()
        assert ("CLOSER_STAGE3" in log) is stage3 and "CLOSER_FINAL 0" in log and failed_nets(done.log) == []
