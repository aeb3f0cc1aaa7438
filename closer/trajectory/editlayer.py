"""The layers an edit touches (`EditLayer`), in stage order: the record's vocabulary, in a module of
its own so that task models and tool configurations name them without the record's models."""

from __future__ import annotations

from enum import StrEnum


class EditLayer(StrEnum):
    """What an edit touches, in stage order (earlier layers are fed back by earlier tools)."""

    RTL = "rtl"
    CONSTRAINT = "constraint"
    FLOORPLAN = "floorplan"
    FLOW = "flow"

    @property
    def stage(self) -> int:
        return LAYER_STAGE[self]


# Stage rank of each edit layer (closer.trajectory.record.TOOL_STAGE ranks the tools' feedback):
# an edit to a layer of lower rank than the last feedback seen is a cross-stage rollback.
LAYER_STAGE = {EditLayer.RTL: 0, EditLayer.CONSTRAINT: 1, EditLayer.FLOORPLAN: 2, EditLayer.FLOW: 2}
