"""The gold DRC script of a rule (its perturbations are `closer.drc.mutate`).

Scripts follow the Rule2DRC conventions: `source($input)`, `report(TITLE, $output)`, layers by
GDS number, explicit units, and output to the exact category name.
"""

from __future__ import annotations

from closer.drc.rules import Layer, Rule, RuleKind


def number_text(value: float) -> str:
    """Always with a decimal point: KLayout reads an integer area as square database units."""
    text = f"{value:.6f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _check(kind: RuleKind, value: float, metric: str = "euclidian") -> str:
    """The Ruby expression of one check on layers `l` (and `inner`)."""
    if kind is RuleKind.WIDTH:
        return f"l.width({number_text(value)}.um, {metric})"
    if kind is RuleKind.SPACING:
        return f"l.space({number_text(value)}.um, {metric})"
    if kind is RuleKind.NOTCH:
        return f"l.notch({number_text(value)}.um, {metric})"
    if kind is RuleKind.AREA:
        return f"l.with_area(nil, {number_text(value)})"
    if kind is RuleKind.HOLE:
        return f"l.holes.with_area(nil, {number_text(value)})"
    return f"l.enclosing(inner, {number_text(value)}.um, {metric})"


def category(rule: Rule) -> str:
    return rule.deck_rule


def describe(rule: Rule) -> str:
    unit = "um2" if rule.kind in (RuleKind.AREA, RuleKind.HOLE) else "um"
    subject = f"{rule.layer.name} enclosure of {rule.inner.name}" if rule.inner else f"{rule.layer.name} {rule.kind}"
    return f"{rule.deck_rule} : min. {subject} : {number_text(rule.value)}{unit}"


def script(rule: Rule, title: str | None = None) -> str:
    """The gold script of `rule`."""
    lines = ["source($input)", f'report("{title or describe(rule)}", $output)', _input("l", rule.layer)]
    if rule.inner is not None:
        lines.append(_input("inner", rule.inner))
    check = _check(rule.kind, rule.value)
    lines.append(f'{check}.output("{category(rule)}", "{describe(rule)}")')
    return "\n".join(lines) + "\n"


def _input(name: str, layer: Layer) -> str:
    return f"{name} = input({layer.gds_layer}, {layer.gds_datatype})  # {layer.name}"
