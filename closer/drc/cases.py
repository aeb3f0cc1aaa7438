"""Labeled layouts built by construction for one rule: at and just above the threshold, one grid
step below it, and corner cases (touching, corner-to-corner, same polygon, rotated, nested,
off-grid, decoys on a neighbouring layer). Every label is later checked by running the gold script.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from closer.drc.rules import GRID_NM, LAYERS, NEIGHBOUR, Rule, RuleKind
from closer.drc.shapes import Case, Shape, rect

S = GRID_NM


def snap_down(value: float) -> int:
    return max(S, int(value // S) * S)


def snap_up(value: float) -> int:
    return int(math.ceil(value / S)) * S


def area_sides(area_nm2: int) -> tuple[int, int]:
    """On-grid sides (w, h), w*h == area exactly when possible, w as close to sqrt(area) as the
    grid allows (h may be rounded up, then the "at" case is just above the threshold)."""
    root = math.isqrt(area_nm2)
    for w in sorted(range(S, 4 * root + S, S), key=lambda w: abs(w - root)):
        if area_nm2 % w == 0 and (area_nm2 // w) % S == 0:
            return w, area_nm2 // w
    w = snap_up(root)
    return w, snap_up(area_nm2 / w)


def build_cases(rule: Rule) -> list[Case]:
    return BUILDERS[rule.kind](rule)


def _case(name: str, violates: bool, *shapes: Shape) -> Case:
    return Case(name=name, violates=violates, shapes=list(shapes))


def _decoy(rule: Rule) -> tuple[int, int]:
    return LAYERS[NEIGHBOUR[rule.layer.name]].pair


def _width(rule: Rule) -> list[Case]:
    lay, v = rule.layer.pair, rule.value_nm
    length = max(4 * v, 1000)
    half = snap_down(v / 2)
    neck = snap_down(v / 4)

    def bar(w: int, x: int = 0, y: int = 0, sub: bool = False) -> Shape:
        return rect(lay, x, y, x + w, y + length, sub)

    side = 2 * v
    return [
        _case("at_threshold", False, bar(v)),
        _case("just_above", False, bar(v + S)),
        _case("just_below", True, bar(v - S)),
        _case("far_below", True, bar(half)),
        _case("rotated_at", False, rect(lay, 0, 0, length, v)),
        _case("rotated_below", True, rect(lay, 0, 0, length, v - S)),
        _case("nested_below", True, bar(3 * v, 0, 0), bar(v - S, 8 * v, 0, sub=True)),
        _case("touching_halves", False, rect(lay, 0, 0, half, length), rect(lay, half, 0, v, length)),
        _case("corner_neck", True, rect(lay, 0, 0, side, side),
              rect(lay, side - neck, side - neck, 2 * side - neck, 2 * side - neck)),
        _case("off_grid_at", False, bar(v, 1, 3)),
        _case("close_pair", False, bar(v + S), bar(v + S, v + S + half)),
        _case("decoy_layer", False, bar(v), rect(_decoy(rule), 3 * v, 0, 3 * v + half, length)),
    ]


def _pair(lay: tuple[int, int], w: int, gap: int, length: int, vertical: bool = False,
          sub: bool = False) -> list[Shape]:
    boxes = [(0, 0, w, length), (w + gap, 0, 2 * w + gap, length)]
    if vertical:
        boxes = [(y1, x1, y2, x2) for x1, y1, x2, y2 in boxes]
    return [rect(lay, *boxes[0]), rect(lay, *boxes[1], in_subcell=sub)]


def _u_shape(lay: tuple[int, int], w: int, slot: int, length: int, x: int = 0) -> Shape:
    """One polygon: two arms of width w joined at the bottom, a slot of width `slot` between."""
    right = x + 2 * w + slot
    points = [(x, 0), (right, 0), (right, length), (right - w, length), (right - w, w),
              (x + w, w), (x + w, length), (x, length)]
    return Shape(layer=lay, points=points)


def _spacing(rule: Rule) -> list[Case]:
    lay, v = rule.layer.pair, rule.value_nm
    w, length = 2 * v, max(4 * v, 1000)
    near = snap_down(v * 0.6)
    far = snap_up(v / math.sqrt(2)) + S
    return [
        _case("at_threshold", False, *_pair(lay, w, v, length)),
        _case("just_above", False, *_pair(lay, w, v + S, length)),
        _case("just_below", True, *_pair(lay, w, v - S, length)),
        _case("far_below", True, *_pair(lay, w, snap_down(v / 2), length)),
        _case("touching", False, *_pair(lay, w, 0, length)),
        _case("corner_close", True, rect(lay, 0, 0, w, w), rect(lay, w + near, w + near, 2 * w + near, 2 * w + near)),
        _case("corner_far", False, rect(lay, 0, 0, w, w), rect(lay, w + far, w + far, 2 * w + far, 2 * w + far)),
        _case("same_polygon_below", True, _u_shape(lay, w, v - S, length)),
        _case("rotated_below", True, *_pair(lay, w, v - S, length, vertical=True)),
        _case("nested_below", True, *_pair(lay, w, v - S, length, sub=True)),
        _case("narrow_far", False, *_pair(lay, snap_down(v / 2), 2 * v, length)),
        _case("decoy_layer", False, *_pair(lay, w, v, length), *_pair(_decoy(rule), w, v - S, length)),
    ]


def _notch(rule: Rule) -> list[Case]:
    lay, v = rule.layer.pair, rule.value_nm
    w, length = 2 * v, max(4 * v, 1000)
    return [
        _case("at_threshold", False, _u_shape(lay, w, v, length)),
        _case("just_above", False, _u_shape(lay, w, v + S, length)),
        _case("just_below", True, _u_shape(lay, w, v - S, length)),
        _case("far_below", True, _u_shape(lay, w, snap_down(v / 2), length)),
        _case("separate_polygons_below", False, *_pair(lay, w, v - S, length)),
        _case("narrow_arms", False, _u_shape(lay, snap_down(v / 2), 2 * v, length)),
        _case("off_grid_below", True, _u_shape(lay, w, v - S, length, x=3)),
        _case("decoy_layer", False, _u_shape(lay, w, v, length), _u_shape(_decoy(rule), w, v - S, length, x=6 * v)),
    ]


def _area(rule: Rule) -> list[Case]:
    lay = rule.layer.pair
    w, h = area_sides(rule.value_nm)
    k = snap_down(h / 2)
    gap = 4 * max(w, h)

    def box(width: int, height: int, x: int = 0, sub: bool = False) -> Shape:
        return rect(lay, x, 0, x + width, height, sub)

    return [
        _case("at_threshold", False, box(w, h)),
        _case("just_above", False, box(w, h + S)),
        _case("just_below", True, box(w, h - S)),
        _case("far_below", True, box(w, k)),
        _case("rotated_below", True, rect(lay, 0, 0, h - S, w)),
        _case("nested_below", True, box(w, h), box(w, h - S, gap, sub=True)),
        _case("touching_halves", False, rect(lay, 0, 0, w, k), rect(lay, 0, k, w, h)),
        _case("one_of_two_below", True, box(w, h), box(w, h - S, gap)),
        _case("ring_with_small_hole", False, _ring(lay, w, h, h - S, 2 * max(w, h))),
        _case("decoy_layer", False, box(w, h), rect(_decoy(rule), gap, 0, gap + w, k)),
    ]


def _ring(lay: tuple[int, int], hole_w: int, hole_h: int, hole_h_actual: int, margin: int, x: int = 0,
          sub: bool = False) -> Shape:
    outer = [(x, 0), (x + hole_w + 2 * margin, 0), (x + hole_w + 2 * margin, hole_h + 2 * margin),
             (x, hole_h + 2 * margin)]
    hole = [(x + margin, margin), (x + margin + hole_w, margin), (x + margin + hole_w, margin + hole_h_actual),
            (x + margin, margin + hole_h_actual)]
    return Shape(layer=lay, points=outer, holes=[hole], in_subcell=sub)


def _hole(rule: Rule) -> list[Case]:
    lay = rule.layer.pair
    w, h = area_sides(rule.value_nm)
    margin = max(w, h)
    far = 8 * margin
    return [
        _case("at_threshold", False, _ring(lay, w, h, h, margin)),
        _case("just_above", False, _ring(lay, w, h + S, h + S, margin)),
        _case("just_below", True, _ring(lay, w, h, h - S, margin)),
        _case("far_below", True, _ring(lay, w, h, snap_down(h / 2), margin)),
        _case("solid", False, rect(lay, 0, 0, w + 2 * margin, h + 2 * margin)),
        _case("nested_below", True, _ring(lay, w, h, h, margin), _ring(lay, w, h, h - S, margin, x=far, sub=True)),
        _case("small_polygon", False, _ring(lay, w, h, h, margin), rect(lay, far, 0, far + w, snap_down(h / 2))),
        _case("decoy_layer", False, _ring(lay, w, h, h, margin), _ring(_decoy(rule), w, h, h - S, margin, x=far)),
    ]


def _enclosure(rule: Rule) -> list[Case]:
    assert rule.inner is not None
    outer, inner, d = rule.layer.pair, rule.inner.pair, rule.value_nm
    c = max(snap_up(2 * d), 150)
    g = snap_down(d / 2)

    def enclosed(left: int, bottom: int, right: int, top: int, x: int = 0, sub: bool = False,
                 inner_layer: tuple[int, int] = inner) -> list[Shape]:
        return [rect(outer, x - left, -bottom, x + c + right, c + top),
                rect(inner_layer, x, 0, x + c, c, sub)]

    far = 10 * (c + 2 * d)
    return [
        _case("at_threshold", False, *enclosed(d, d, d, d)),
        _case("just_above", False, *enclosed(d + S, d + S, d + S, d + S)),
        _case("just_below_left", True, *enclosed(d - S, d, d, d)),
        _case("just_below_top", True, *enclosed(d, d, d, d - S)),
        _case("far_below", True, *enclosed(snap_down(d / 2), d, d, d)),
        _case("concave_corner", True, rect(outer, -3 * d, -3 * d, c + d, c + g), rect(outer, -3 * d, -3 * d, c + g, c + d),
              rect(inner, 0, 0, c, c)),
        _case("nested_below", True, *enclosed(d, d, d, d), *enclosed(d, d - S, d, d, x=far, sub=True)),
        _case("one_of_two_below", True, *enclosed(d, d, d, d), *enclosed(d, d, d - S, d, x=far)),
        _case("off_grid_at", False, rect(outer, -d + 1, -d + 2, c + d + 1, c + d + 2), rect(inner, 1, 2, c + 1, c + 2)),
        _case("decoy_layer", False, *enclosed(d, d, d, d),
              *enclosed(d - S, d, d, d, x=far, inner_layer=_decoy_inner(rule))),
    ]


def _decoy_inner(rule: Rule) -> tuple[int, int]:
    """A layer that is neither of the rule's two, for an inner shape the rule must ignore."""
    assert rule.inner is not None
    used = {rule.layer.name, rule.inner.name}
    name = NEIGHBOUR[rule.inner.name]
    return LAYERS[name if name not in used else NEIGHBOUR[rule.layer.name]].pair


BUILDERS: dict[RuleKind, Callable[[Rule], list[Case]]] = {
    RuleKind.WIDTH: _width, RuleKind.SPACING: _spacing, RuleKind.NOTCH: _notch,
    RuleKind.AREA: _area, RuleKind.HOLE: _hole, RuleKind.ENCLOSURE: _enclosure,
}
