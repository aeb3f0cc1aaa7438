"""Perturbations of a DRC script's text: the machinery candidate pools and the generator's
two-way check. They work on any gold script (generated or imported), not only on ours.

threshold_up/down   the first `<n>.um` by one 5 nm grid step, or the first `with_area` bound by
                    the area a grid step adds to each side of a square of that area
wrong_layer         the last `input(L, D)` reads a neighbouring SKY130 layer
swapped_check       width <-> space, notch -> space, area <-> hole area, enclosing operands swapped
projection          euclidian -> projection
missing_output      `.output(...)` dropped (the check is computed, nothing reported)
syntax_error        an unmatched `end` (the script does not compile)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from enum import StrEnum

from closer.drc.rules import GRID_NM, LAYERS, NEIGHBOUR
from closer.drc.scripts import number_text


class Perturbation(StrEnum):
    THRESHOLD_UP = "threshold_up"
    THRESHOLD_DOWN = "threshold_down"
    WRONG_LAYER = "wrong_layer"
    SWAPPED_CHECK = "swapped_check"
    PROJECTION = "projection"
    MISSING_OUTPUT = "missing_output"
    SYNTAX_ERROR = "syntax_error"


GRID_UM = GRID_NM / 1000
UM_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(\s*\.um\b)")
AREA_NUMBER = re.compile(r"(with_area\(\s*(?:nil\s*,\s*|0(?:\.0*)?\s*\.\.\s*))(\d+(?:\.\d+)?)")
INPUT_CALL = re.compile(r"\b(input|polygons)\(\s*(\d+)\s*,\s*(\d+)\s*\)")
OUTPUT_LINE = re.compile(r"^(\s*)(.+?)\.output\(.*\)\s*$", re.MULTILINE)
ENCLOSING = re.compile(r"\b(\w+)\.enclosing\(\s*(\w+)\s*,")
PAIRS = {layer.pair: name for name, layer in LAYERS.items()}


def _shift_threshold(text: str, sign: int) -> str | None:
    match = UM_NUMBER.search(text)
    if match:
        value = max(GRID_UM, float(match.group(1)) + sign * GRID_UM)
        return text[:match.start(1)] + number_text(value) + text[match.end(1):]
    match = AREA_NUMBER.search(text)
    if match:
        area = float(match.group(2))
        step = 2 * math.sqrt(area) * GRID_UM + GRID_UM ** 2
        return text[:match.start(2)] + number_text(max(step, area + sign * step)) + text[match.end(2):]
    return None


def _wrong_layer(text: str) -> str | None:
    matches = list(INPUT_CALL.finditer(text))
    if not matches:
        return None
    last = matches[-1]
    pair = (int(last.group(2)), int(last.group(3)))
    name = PAIRS.get(pair)
    new = LAYERS[NEIGHBOUR[name]].pair if name else (pair[0] + 1, pair[1])
    return text[:last.start()] + f"{last.group(1)}({new[0]}, {new[1]})" + text[last.end():]


def _swapped(text: str) -> str | None:
    for old, new in ((".width(", ".space("), (".space(", ".width("), (".notch(", ".space("),
                     (".holes.with_area(", ".with_area("), (".with_area(", ".holes.with_area(")):
        if old in text:
            return text.replace(old, new, 1)
    match = ENCLOSING.search(text)
    if match:
        return text[:match.start()] + f"{match.group(2)}.enclosing({match.group(1)}," + text[match.end():]
    return None


def _projection(text: str) -> str | None:
    return text.replace("euclidian", "projection") if "euclidian" in text else None


def _missing_output(text: str) -> str | None:
    new = OUTPUT_LINE.sub(lambda m: f"{m.group(1)}violations = {m.group(2)}", text)
    return new if new != text else None


def _syntax_error(text: str) -> str | None:
    return text.rstrip("\n") + "\nend\n"


MUTATORS: dict[Perturbation, Callable[[str], str | None]] = {
    Perturbation.THRESHOLD_UP: lambda t: _shift_threshold(t, +1),
    Perturbation.THRESHOLD_DOWN: lambda t: _shift_threshold(t, -1),
    Perturbation.WRONG_LAYER: _wrong_layer,
    Perturbation.SWAPPED_CHECK: _swapped,
    Perturbation.PROJECTION: _projection,
    Perturbation.MISSING_OUTPUT: _missing_output,
    Perturbation.SYNTAX_ERROR: _syntax_error,
}


def perturbations(gold: str) -> dict[Perturbation, str]:
    """Every perturbation that changes `gold`, with its text."""
    out = {}
    for name, mutate in MUTATORS.items():
        text = mutate(gold)
        if text is not None and text != gold:
            out[name] = text
    return out
