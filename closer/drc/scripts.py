"""DRC script text: the gold script of a rule and its perturbations (the machinery candidate
pools: threshold off by a grid step, wrong layer, swapped check, projection instead of euclidian,
missing output, a syntax error).

Scripts follow the Rule2DRC conventions: `source($input)`, `report(TITLE, $output)`, layers by
GDS number, explicit units, and output to the exact category name.
"""

from __future__ import annotations

from enum import StrEnum

from closer.drc.cases import area_step_nm2
from closer.drc.rules import GRID_NM, LAYERS, NEIGHBOUR, Layer, Rule, RuleKind


class Perturbation(StrEnum):
    THRESHOLD_UP = "threshold_up"
    THRESHOLD_DOWN = "threshold_down"
    WRONG_LAYER = "wrong_layer"
    SWAPPED_CHECK = "swapped_check"
    PROJECTION = "projection"
    MISSING_OUTPUT = "missing_output"
    SYNTAX_ERROR = "syntax_error"


def _number(value: float) -> str:
    """Always with a decimal point: KLayout reads an integer area as square database units."""
    text = f"{value:.6f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _check(rule: Rule, kind: RuleKind, value: float, metric: str) -> str:
    """The Ruby expression of one check on layers `l` (and `inner`)."""
    if kind is RuleKind.WIDTH:
        return f"l.width({_number(value)}.um, {metric})"
    if kind is RuleKind.SPACING:
        return f"l.space({_number(value)}.um, {metric})"
    if kind is RuleKind.NOTCH:
        return f"l.notch({_number(value)}.um, {metric})"
    if kind is RuleKind.AREA:
        return f"l.with_area(nil, {_number(value)})"
    if kind is RuleKind.HOLE:
        return f"l.holes.with_area(nil, {_number(value)})"
    return f"l.enclosing(inner, {_number(value)}.um, {metric})"


SWAP = {RuleKind.WIDTH: RuleKind.SPACING, RuleKind.SPACING: RuleKind.WIDTH, RuleKind.NOTCH: RuleKind.SPACING,
        RuleKind.AREA: RuleKind.HOLE, RuleKind.HOLE: RuleKind.AREA}


def category(rule: Rule) -> str:
    return rule.deck_rule


def describe(rule: Rule) -> str:
    unit = "um2" if rule.kind in (RuleKind.AREA, RuleKind.HOLE) else "um"
    subject = f"{rule.layer.name} enclosure of {rule.inner.name}" if rule.inner else f"{rule.layer.name} {rule.kind}"
    return f"{rule.deck_rule} : min. {subject} : {_number(rule.value)}{unit}"


def script(rule: Rule, perturbation: Perturbation | None = None, title: str | None = None) -> str:
    """The gold script of `rule`, or the script with one `perturbation`."""
    layer, inner = rule.layer, rule.inner
    kind, value, metric = rule.kind, rule.value, "euclidian"
    step = area_step_nm2(rule) / 1e6 if kind in (RuleKind.AREA, RuleKind.HOLE) else GRID_NM / 1e3
    if perturbation is Perturbation.THRESHOLD_UP:
        value += step
    elif perturbation is Perturbation.THRESHOLD_DOWN:
        value -= step
    elif perturbation is Perturbation.WRONG_LAYER:
        layer = LAYERS[NEIGHBOUR[layer.name]] if inner is None else layer
        inner = LAYERS[NEIGHBOUR[inner.name]] if inner is not None else None
    elif perturbation is Perturbation.PROJECTION:
        metric = "projection"
    check = _check(rule, kind, value, metric)
    if perturbation is Perturbation.SWAPPED_CHECK:
        check = ("inner.enclosing(l, " + f"{_number(value)}.um, {metric})" if kind is RuleKind.ENCLOSURE
                 else _check(rule, SWAP[kind], value, metric))
    lines = ["source($input)", f'report("{title or describe(rule)}", $output)', _input("l", layer)]
    if inner is not None:
        lines.append(_input("inner", inner))
    if perturbation is Perturbation.MISSING_OUTPUT:
        lines.append(f"violations = {check}")
    else:
        lines.append(f'{check}.output("{category(rule)}", "{describe(rule)}")')
    if perturbation is Perturbation.SYNTAX_ERROR:
        lines[-1] = lines[-1].replace("(", "((", 1)
    return "\n".join(lines) + "\n"


def _input(name: str, layer: Layer) -> str:
    return f"{name} = input({layer.gds_layer}, {layer.gds_datatype})  # {layer.name}"


def applicable(rule: Rule) -> list[Perturbation]:
    """The perturbations that change `rule`'s script (projection means nothing to area checks)."""
    out = list(Perturbation)
    if rule.kind in (RuleKind.AREA, RuleKind.HOLE):
        out.remove(Perturbation.PROJECTION)
    return out
