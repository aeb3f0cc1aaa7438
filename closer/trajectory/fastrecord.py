"""A fast decoder for trajectory lines as the writer writes them (msgspec), tried before pydantic.

`RecordView` mirrors `TrajectoryRecord` field for field, with the same names, enums and bounds,
so code that only reads records (the summarizer, the order checks) takes either. It accepts a
subset of what `TrajectoryRecord.model_validate_json` accepts, and then with the same values; it
is stricter where pydantic is lax (no "1" or 1.0 for an int, no number for a datetime, no naive
datetime, no nested metric value). A line it refuses is handed to pydantic, which decides and
words the error, so the reader accepts and refuses exactly what pydantic does
(tests/test_trajectory_fastrecord.py checks this on generated good and perturbed records).
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec
from msgspec import Meta, Struct

from closer.toolclass import ToolClass
from closer.trajectory.editlayer import EditLayer
from closer.trajectory.outcome import Outcome

if TYPE_CHECKING:
    from closer.trajectory.record import TrajectoryRecord

SCHEMA_VERSION = "1"  # closer.trajectory.record.SCHEMA_VERSION (a test keeps them equal)

# allow_inf_nan=False: every float finite (a JSON 1e999 decodes to inf, which these bounds refuse)
Finite = Annotated[float, Meta(ge=-sys.float_info.max, le=sys.float_info.max)]
NonNegative = Annotated[float, Meta(ge=0, le=sys.float_info.max)]
Reward = Annotated[float, Meta(ge=0, le=1)]
AwareTime = Annotated[datetime, Meta(tz=True)]
# Flat metric values only; a list or object value goes to pydantic (JsonValue)
FlatMetric = Finite | int | str | bool | None


class _Strict(Struct, forbid_unknown_fields=True, gc=False):  # no cycles: not GC-tracked
    pass


class FileChangesView(_Strict):
    added: list[str] = []
    modified: list[str] = []
    deleted: list[str] = []

    @property
    def all(self) -> list[str]:
        return self.added + self.modified + self.deleted


class CallCostView(_Strict):
    counted: bool
    units: NonNegative
    tool_wall_s: NonNegative
    peak_rss_mb: Finite | None = None
    reused: bool = False


class RecordView(_Strict, kw_only=True):
    """In the model's field order: encoded (`record_json`), a view is the line pydantic would
    write, key for key (the reader tells a torn line by its start, `{"schema_version":`)."""

    schema_version: Literal["1"] = SCHEMA_VERSION
    seq: Annotated[int, Meta(ge=1)]
    run_id: str
    started_at: AwareTime
    ended_at: AwareTime
    elapsed_s: NonNegative
    tool: ToolClass
    args: list[str] = []
    surface_digest: str | None
    changes: FileChangesView = msgspec.field(default_factory=FileChangesView)
    layers: list[EditLayer] = []
    unclassified: list[str] = []
    refused: list[str] = []
    cost: CallCostView
    outcome: Outcome
    message: str = ""
    exit_codes: list[int] = []
    metrics: dict[str, FlatMetric] = {}
    reward: Reward | None = None
    feasible: bool | None = None
    partial_reward: Reward | None = None
    best_reward: Reward | None = None
    remaining: dict[str, Finite | None] = {}
    results_dir: str | None = None

    def __post_init__(self) -> None:
        if self.ended_at < self.started_at:
            raise ValueError("ended_at is before started_at")


VIEW_DECODER = msgspec.json.Decoder(RecordView)
VIEW_REFUSALS = (msgspec.MsgspecError, ValueError)  # ValueError: invalid UTF-8 inside a string


def decode_view(line: bytes) -> RecordView | None:
    """The record on `line`, or None when the fast decoder does not take it (pydantic decides)."""
    try:
        return VIEW_DECODER.decode(line)
    except VIEW_REFUSALS:
        return None


_ENCODER = msgspec.json.Encoder()


def new_record(**fields: object) -> RecordView | TrajectoryRecord:
    """A record to write, from the model's fields: the view where it takes them (pydantic is not
    imported on a metered call's hot path), else the model, which takes what the view does not
    (nested metric values) and refuses, naming the field, what neither takes."""
    try:
        return msgspec.convert(fields, RecordView)
    except (msgspec.ValidationError, TypeError):
        from closer.trajectory.record import TrajectoryRecord

        return TrajectoryRecord.model_validate(msgspec.to_builtins(fields))


def record_json(record: RecordView | TrajectoryRecord) -> str:
    """The record's line (without its newline)."""
    if isinstance(record, RecordView):
        return _ENCODER.encode(record).decode()
    return record.model_dump_json()
