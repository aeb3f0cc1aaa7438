"""Edit-layer inference: which layers (rtl, constraint, floorplan, flow) a set of changed files touches.

Patterns are fnmatch patterns on workspace-relative POSIX paths (`*` also matches `/`). Each file
belongs to the first layer, in stage order, with a matching pattern; a file that matches no
layer is returned as unclassified rather than guessed.
"""

from __future__ import annotations

import fnmatch

from closer.trajectory.editlayer import EditLayer

DEFAULT_LAYER_PATTERNS: dict[EditLayer, list[str]] = {
    EditLayer.RTL: ["rtl/*", "*.v", "*.sv", "*.vh", "*.svh"],
    EditLayer.CONSTRAINT: ["constraints/*", "*.sdc", "*.xdc"],
    EditLayer.FLOORPLAN: ["floorplan/*", "*.def", "*pdn*.tcl", "*macro_placement*"],
    EditLayer.FLOW: ["flow/*", "design.toml", "config.mk", "*.flow.toml"],
}


def layer_of(path: str, patterns: dict[EditLayer, list[str]]) -> EditLayer | None:
    for layer in EditLayer:
        if any(fnmatch.fnmatchcase(path, p) for p in patterns.get(layer, [])):
            return layer
    return None


def infer_layers(paths: list[str], patterns: dict[EditLayer, list[str]]) -> tuple[list[EditLayer], list[str]]:
    """(layers touched, in stage order; files in no layer)."""
    touched: set[EditLayer] = set()
    unclassified = []
    for path in paths:
        layer = layer_of(path, patterns)
        if layer is None:
            unclassified.append(path)
        else:
            touched.add(layer)
    return [layer for layer in EditLayer if layer in touched], sorted(unclassified)
