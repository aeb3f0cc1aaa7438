"""Edit-layer inference on example edits, with the default and with per-task patterns."""

from __future__ import annotations

import pytest

from closer.metered.config import DEFAULT_LAYER_PATTERNS, ToolConfig
from closer.metered.layers import infer_layers, layer_of
from closer.trajectory.record import EditLayer


@pytest.mark.parametrize("path, layer", [
    ("rtl/gcd.v", EditLayer.RTL),
    ("rtl/sub/alu.sv", EditLayer.RTL),
    ("src/top.v", EditLayer.RTL),
    ("constraints/gcd.sdc", EditLayer.CONSTRAINT),
    ("top.sdc", EditLayer.CONSTRAINT),
    ("floorplan/pdn.tcl", EditLayer.FLOORPLAN),
    ("floorplan/io_pins.cfg", EditLayer.FLOORPLAN),
    ("flow/config.mk", EditLayer.FLOW),
    ("design.toml", EditLayer.FLOW),
    ("notes.md", None),
])
def test_default_patterns(path, layer):
    assert layer_of(path, DEFAULT_LAYER_PATTERNS) is layer


def test_infer_layers_orders_by_stage_and_lists_unclassified():
    layers, unclassified = infer_layers(
        ["flow/config.mk", "notes.md", "rtl/a.v", "constraints/a.sdc", "rtl/b.v"], DEFAULT_LAYER_PATTERNS)
    assert layers == [EditLayer.RTL, EditLayer.CONSTRAINT, EditLayer.FLOW]
    assert unclassified == ["notes.md"]


def test_task_patterns_override_defaults():
    config = ToolConfig.model_validate({"layers": {"floorplan": ["macros/*.cfg"], "rtl": ["hdl/*"]}})
    patterns = config.layer_patterns()
    assert layer_of("macros/place.cfg", patterns) is EditLayer.FLOORPLAN
    assert layer_of("hdl/core.vhd", patterns) is EditLayer.RTL
    assert layer_of("rtl/x.v", patterns) is None                  # the task replaced the rtl patterns
    assert layer_of("constraints/c.sdc", patterns) is EditLayer.CONSTRAINT  # defaults elsewhere


def test_no_changes_no_layers():
    assert infer_layers([], DEFAULT_LAYER_PATTERNS) == ([], [])


def test_agent_instructions_carry_the_task_numbers():
    from closer.budget import resolve_budget
    from closer.metered.instructions import agent_instructions
    from tests.metered_helpers import tool_config

    config = ToolConfig.model_validate(tool_config(None, {"sim": 7}))
    text = agent_instructions(config, resolve_budget(config.budget))
    assert "| `closer-tool sim` | simulation of the current RTL | 7 | 1 |" in text
    assert "closer-tool verify" in text and "closer-tool pnr" not in text   # pnr not configured here
    assert "4 h of wall clock" in text and "10 refused_budget" in text
