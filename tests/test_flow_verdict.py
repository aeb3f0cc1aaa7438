"""The sign-off verdict (closer.flow.verdict) on recorded metadata: every check two-way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from closer.flow.verdict import corners_of, verdict

RECORDED = Path(__file__).parent / "fixtures" / "flow_pnr" / "gcd_pnr.json"
CORNERS = ("ss_100C_1v60", "tt_025C_1v80", "ff_n40C_1v95")


def _clean() -> dict:
    meta = {"detailedroute__route__drc_errors": 0, "closer__route__unrouted_nets": 0,
            "closer__signoff__drc_errors": 0, "closer__signoff__lvs_errors": 0,
            "detailedroute__antenna__violating__nets": 0}
    for c in CORNERS:
        meta |= {f"finish__timing__setup__ws__corner__{c}": 1.5, f"finish__timing__hold__ws__corner__{c}": 0.2,
                 f"finish__timing__drv__max_slew__corner__{c}": 0, f"finish__timing__drv__max_cap__corner__{c}": 0}
    return meta


def test_clean_layout_passes_on_one_line():
    v = verdict(_clean())
    assert v.passed and v.reached
    line = v.line()
    assert "\n" not in line and line.startswith("sign-off: PASS | route 0 unrouted | drc clean | lvs clean")
    assert corners_of(_clean())[0] == "tt_025C_1v80" and all(f"sta {c}" in line for c in CORNERS)
    assert "lec" not in line


@pytest.mark.parametrize("key, value, failing", [
    ("closer__route__unrouted_nets", 2, "route"),
    ("closer__signoff__drc_errors", 3, "drc"),
    ("detailedroute__antenna__violating__nets", 2, "antenna"),
    ("closer__signoff__lvs_errors", 1, "lvs"),
    ("finish__timing__setup__ws__corner__ss_100C_1v60", -0.01, "sta ss_100C_1v60"),
    ("finish__timing__hold__ws__corner__ff_n40C_1v95", -0.2, "sta ff_n40C_1v95"),
    ("finish__timing__drv__max_slew__corner__ss_100C_1v60", 9, "sta ss_100C_1v60"),
    ("finish__timing__drv__max_cap__corner__tt_025C_1v80", 1, "sta tt_025C_1v80"),
    ("finish__timing__hold__ws__corner__tt_025C_1v80", None, "sta tt_025C_1v80"),  # unmeasured fails
    ("closer__lec__result", "not_equivalent", "lec"),
])
def test_each_check_fails_the_verdict(key, value, failing):
    v = verdict(_clean() | {key: value})
    assert not v.passed and "sign-off: FAIL" in v.line()
    assert [c.name for c in v.checks if not c.passed] == [failing]


def test_lec_is_shown_when_run_and_a_run_without_pnr_is_not_reached():
    assert verdict(_clean() | {"closer__lec__result": "equivalent"}).line().endswith("lec equivalent")
    early = verdict({"synth__timing__setup__ws": 1.0})
    assert not early.reached and not early.passed and "not reached" in early.line()


def test_recorded_gcd_run_has_a_verdict():
    meta = json.loads(RECORDED.read_text())
    v = verdict(meta)
    assert v.reached and [c.name for c in v.checks][:3] == ["route", "drc", "lvs"]
