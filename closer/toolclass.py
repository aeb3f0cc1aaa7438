"""The metered tool classes. A module of its own so that light paths (`closer-tool status`, the
workspace layout) name them without importing the budget's models."""

from __future__ import annotations

from enum import StrEnum


class ToolClass(StrEnum):
    SIM = "sim"
    SYNTH = "synth"
    PNR = "pnr"
    VERIFY = "verify"
