"""RoutedSetupRepair's rounds (closer.physical.steps.timing) with the sizing and the reroute
stubbed: a round whose held reroute leaves nets unrouted is the last one (the next would size on
missing parasitics and add nets for Repair to mend); with every net routed the rounds go on. The
real tools: tests/test_physical_setup_reroute.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from closer.physical.repair.sizing import SizingConfig
from closer.physical.steps import timing

KEY = "closer__routed_setup_repair"


def _ctx(tmp_path: Path):
    return SimpleNamespace(
        config=SimpleNamespace(sizing=SizingConfig(routed_rounds=3, routed_min_instances=1)),
        netlist=SimpleNamespace(instances=["u1", "u2"]), route_result=SimpleNamespace(failed_nets=0),
        steps=[], metrics={}, sta_results=[], changed_windows=None,
        paths=SimpleNamespace(route_dir=tmp_path / "route", sta_dir=tmp_path / "sta"))


@pytest.mark.parametrize("unrouted_after, rounds", [([0, 0, 0], 3), ([1, 11, 11], 1), ([0, 2, 2], 2)])
def test_no_round_follows_one_that_left_nets_unrouted(monkeypatch, tmp_path, unrouted_after, rounds) -> None:
    ctx = _ctx(tmp_path)
    done = []

    def reroute(ctx, changed, work):
        ctx.route_result.failed_nets = unrouted_after[len(done)]
        done.append(work)
        return set(changed)

    monkeypatch.delenv("CLOSER_FLOW_DEADLINE", raising=False)
    monkeypatch.setattr(timing, "run_steps", lambda ctx, steps: None)
    monkeypatch.setattr(timing, "_sizing_corner", lambda ctx: "ss_100C_1v60")
    monkeypatch.setattr(timing, "_size", lambda ctx, corner, folder, key, out:
                        SimpleNamespace(resized=["u1"], isolations=[]))
    monkeypatch.setattr(timing, "_apply_setup_repair", lambda ctx, result: list(result.resized))
    monkeypatch.setattr(timing, "_reroute_resized", reroute)
    out = timing.RoutedSetupRepair().run(ctx)
    assert out[f"{KEY}__rounds"] == rounds == len(done)
    assert out.get(f"{KEY}__stopped") == ("unrouted nets" if rounds < 3 else None)


@pytest.mark.parametrize("deadline_in_reserve", [False, True])
def test_a_setup_rounds_full_reroute_starts_only_before_the_deadline(monkeypatch, tmp_path, deadline_in_reserve) -> None:
    """The incremental reroute left more problems than the round began with: the full reroute (a
    Route and a sign-off) follows, unless the flow's deadline leaves no time for it; then the
    incremental layout, already signed off, is kept."""
    import time

    from closer.physical import deadline
    from closer.physical.steps.reroute import REROUTE_STEPS, SIGNOFF_STEPS

    ctx = _ctx(tmp_path)
    ctx.steps = [{"step": "Route", "wall_s": 1300.0}]
    problems = iter([5, 8])
    ran = []
    monkeypatch.setattr(timing, "signoff_problems", lambda ctx: next(problems))
    monkeypatch.setattr(timing, "_reroute_resized", lambda ctx, changed, work: set(changed))
    monkeypatch.setattr(timing, "run_steps", lambda ctx, steps: ran.append(tuple(steps)))
    if deadline_in_reserve:
        monkeypatch.setenv(deadline.DEADLINE_ENV, str(time.time() + deadline.FINISH_RESERVE_S + 600))
    else:
        monkeypatch.delenv(deadline.DEADLINE_ENV, raising=False)
    out = timing._reroute_after_setup_repair(ctx, ["u1"], 1)
    assert out["incremental_problems"] == 8 and out["problems_before"] == 5
    if deadline_in_reserve:
        assert ran == [tuple(SIGNOFF_STEPS)] and out["full_reroute"] is False
        assert out["full_reroute_skipped"] == "the flow's deadline" and ctx.metrics[deadline.CUT_KEY] is True
    else:
        assert ran == [tuple(SIGNOFF_STEPS), tuple(REROUTE_STEPS)] and out["full_reroute"] is True
