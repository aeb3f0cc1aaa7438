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
