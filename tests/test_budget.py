"""Budget tiers: the data file matches the issue's table, overrides apply, the check cuts at the cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from closer.budget import (BudgetOverride, ToolClass, check_call, load_budget_file, resolve_budget)
from closer.errors import InputError


def test_tier_table_matches_the_spec():
    tiers = load_budget_file().tiers
    table = {  # tier: (sim, synth, pnr, wall hours)
        "low": (40, 10, 3, 4), "medium": (100, 25, 8, 10), "high": (None, 60, 20, 24)}
    for name, (sim, synth, pnr, hours) in table.items():
        t = tiers[name]
        assert (t.sim, t.synth, t.pnr, t.wall_s) == (sim, synth, pnr, hours * 3600.0)


def test_verify_is_capped_by_default_and_overridable():
    bf = load_budget_file()
    assert resolve_budget(BudgetOverride(tier="medium")).cap(ToolClass.VERIFY) == bf.verify_cap_default
    assert resolve_budget(BudgetOverride(tier="medium", verify=1)).cap(ToolClass.VERIFY) == 1


def test_overrides_are_applied_and_recorded():
    b = resolve_budget(BudgetOverride.model_validate(
        {"tier": "high", "sim": 3, "pnr": "uncapped", "wall_s": 60, "weights": {"pnr": 7},
         "stagnation": {"window_calls": 2}}))
    assert b.cap(ToolClass.SIM) == 3 and b.cap(ToolClass.PNR) is None and b.cap(ToolClass.SYNTH) == 60
    assert b.wall_s == 60 and b.weights.pnr == 7 and b.weights.sim == load_budget_file().weights.sim
    assert b.stagnation.window_calls == 2
    assert set(b.overridden) == {"sim", "pnr", "wall_s", "weights.pnr", "stagnation.window_calls"}


def test_check_call_at_cap_passes_next_refused():
    b = resolve_budget(BudgetOverride(tier="low", synth=2))
    assert check_call(b, ToolClass.SYNTH, used=1, elapsed_s=0) is None          # the 2nd call (at cap)
    refusal = check_call(b, ToolClass.SYNTH, used=2, elapsed_s=0)              # the 3rd call
    assert refusal is not None and refusal.kind == "refused_budget" and "2 of 2" in refusal.message
    high = resolve_budget(BudgetOverride(tier="high"))
    assert check_call(high, ToolClass.SIM, used=10**6, elapsed_s=0) is None    # uncapped


def test_check_call_wall_clock():
    b = resolve_budget(BudgetOverride(tier="low", wall_s=100))
    assert check_call(b, ToolClass.SIM, used=0, elapsed_s=99.9) is None
    refusal = check_call(b, ToolClass.SIM, used=0, elapsed_s=100)
    assert refusal is not None and refusal.kind == "refused_time"


def test_unknown_tier_is_a_clear_error():
    with pytest.raises(InputError, match="unknown budget tier 'huge'"):
        resolve_budget(BudgetOverride(tier="huge"))


def test_bad_budget_file_names_file_and_key(tmp_path: Path):
    bad = tmp_path / "budgets.toml"
    bad.write_text(Path(load_budget_file.__defaults__[0]).read_text().replace("synth = 10", "synth = -1"))
    with pytest.raises(InputError, match=r"budgets.toml: key tiers.low.synth"):
        load_budget_file(bad)
