"""What a task lets its SDC say beyond the base subset: the timing exceptions it allows."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class SdcException(StrEnum):
    """A kind of timing relaxation. Each is refused unless the task's kind allows it."""

    FALSE_PATH = "false_path"              # set_false_path
    MULTICYCLE_PATH = "multicycle_path"    # set_multicycle_path
    MAX_DELAY = "max_delay"                # set_max_delay
    MIN_DELAY = "min_delay"                # set_min_delay
    DISABLE_TIMING = "disable_timing"      # set_disable_timing
    CASE_ANALYSIS = "case_analysis"        # set_case_analysis
    CLOCK_GROUPS = "clock_groups"          # set_clock_groups
    CLOCK_LATENCY = "clock_latency"        # set_clock_latency (ideal clocks: it shifts I/O paths)
    NEGATIVE_VALUES = "negative_values"    # a negative delay, load, uncertainty or transition
    EXTRA_CLOCKS = "extra_clocks"          # more than one create_clock, or create_clock -add


class SdcPolicy(BaseModel):
    """The allowed exceptions of one SDC read (the design's or the task kind's list)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    allow: frozenset[SdcException] = Field(
        default_factory=frozenset, description="timing exceptions the SDC may use (default none)")

    def allows(self, exception: SdcException) -> bool:
        return exception in self.allow
