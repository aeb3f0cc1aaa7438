"""How a metered call ended (`Outcome`): the record's vocabulary, in a module of its own so that the
metered call's hot path names it without the record's models."""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    OK = "ok"
    TOOL_ERROR = "tool_error"
    REFUSED_BUDGET = "refused_budget"
    REFUSED_TIME = "refused_time"
    TIMEOUT = "timeout"
    INFRA_ERROR = "infra_error"

    @property
    def refused(self) -> bool:
        return self in (Outcome.REFUSED_BUDGET, Outcome.REFUSED_TIME)
