"""The ways a reward computation refuses to produce a number. All are CloserErrors (the CLI exits 2)."""

from __future__ import annotations

from closer.errors import InputError


class MetricsFileError(InputError):
    """A metrics file or per-stage log directory is missing, empty, malformed or holds a bad value."""


class TargetsFileError(InputError):
    """The targets TOML is missing, empty, malformed or breaks a rule (finite, > 0, unique ...)."""


class MetricNotFound(InputError):
    """A target names a metric the metrics do not have (the message lists the closest keys)."""


class GateUnmeasured(InputError):
    """A required gate has no measurement in the metrics. The caller records a verifier failure;
    this is never turned into a pass or a silent 0."""

    def __init__(self, message: str, gates: list[str]):
        super().__init__(message)
        self.gates = gates
