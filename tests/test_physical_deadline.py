"""closer.physical.deadline: no deadline changes nothing; one far off allows a round, one inside
the finish reserve does not; a malformed value is an error naming the variable. The real flow at
its deadline: tests/test_flow_settings.py (the weak gcd)."""

from __future__ import annotations

import time

import pytest

from closer.errors import InputError
from closer.physical import deadline


def test_without_a_deadline_everything_fits(monkeypatch) -> None:
    monkeypatch.delenv(deadline.DEADLINE_ENV, raising=False)
    assert deadline.deadline() is None and deadline.time_left() is None and deadline.allows(1e9)


def test_a_round_fits_only_before_the_reserve(monkeypatch) -> None:
    monkeypatch.setenv(deadline.DEADLINE_ENV, str(time.time() + deadline.FINISH_RESERVE_S + 100))
    assert deadline.allows(50) and not deadline.allows(200)
    monkeypatch.setenv(deadline.DEADLINE_ENV, str(time.time() + deadline.FINISH_RESERVE_S / 2))
    assert not deadline.allows(0) and deadline.time_left() < 0


@pytest.mark.parametrize("raw", ["soon", "nan", "inf", "1e400"])
def test_a_malformed_deadline_names_the_variable(monkeypatch, raw: str) -> None:
    monkeypatch.setenv(deadline.DEADLINE_ENV, raw)
    with pytest.raises(InputError, match=deadline.DEADLINE_ENV):
        deadline.allows(0)


def test_route_passes_stop_at_the_deadline(monkeypatch) -> None:
    """qrouter's rip-up passes end where the improvement loops do; with time to spare, or with no
    deadline, the route keeps its own pass budget (the same settings object)."""
    from closer.physical.route.route import RouteConfig
    from closer.physical.steps.routing import deadline_capped

    cfg = RouteConfig()
    monkeypatch.delenv(deadline.DEADLINE_ENV, raising=False)
    assert deadline_capped(cfg) is cfg
    monkeypatch.setenv(deadline.DEADLINE_ENV, str(time.time() + deadline.FINISH_RESERVE_S + 10 * cfg.pass_budget_s))
    assert deadline_capped(cfg) is cfg
    monkeypatch.setenv(deadline.DEADLINE_ENV, str(time.time() + deadline.FINISH_RESERVE_S + 300))
    assert 290 <= deadline_capped(cfg).pass_budget_s <= 300
    monkeypatch.setenv(deadline.DEADLINE_ENV, str(time.time() + deadline.FINISH_RESERVE_S / 2))
    assert deadline_capped(cfg).pass_budget_s == 0.0


def test_a_replacement_trial_runs_only_when_its_steps_fit(monkeypatch) -> None:
    """The routability fallback repeats steps of the run: it is expected to take what they took."""
    from types import SimpleNamespace

    from closer.physical.steps.routing import REPLACE_STEPS, trial_fits

    steps = [{"step": "Place", "wall_s": 400.0}, {"step": "Route", "wall_s": 900.0},
             {"step": "Drc", "wall_s": 5000.0}]  # not repeated by the trial: not counted
    ctx = SimpleNamespace(steps=steps, metrics={})
    monkeypatch.setenv(deadline.DEADLINE_ENV, str(time.time() + deadline.FINISH_RESERVE_S + 1500))
    assert trial_fits(ctx, REPLACE_STEPS) and deadline.CUT_KEY not in ctx.metrics
    monkeypatch.setenv(deadline.DEADLINE_ENV, str(time.time() + deadline.FINISH_RESERVE_S + 1000))
    assert not trial_fits(ctx, REPLACE_STEPS) and ctx.metrics[deadline.CUT_KEY] is True
