"""Natural-language phrasings of a rule: several per kind, so one rule yields several problems."""

from __future__ import annotations

from closer.drc.rules import Rule, RuleKind

TEMPLATES: dict[RuleKind, list[str]] = {
    RuleKind.WIDTH: [
        "{layer} ({gds}) width must be at least {value} µm.",
        "The minimum width of any {layer} shape on GDS layer {gds} is {value} µm.",
        "Flag every part of a {layer} polygon (layer {gds}) that is narrower than {value} um, measured in any direction (Euclidean).",
        "Rule {ref}: no {layer} feature drawn on {gds} may be thinner than {value} µm.",
    ],
    RuleKind.SPACING: [
        "{layer} ({gds}) spacing must be at least {value} µm.",
        "Any two {layer} edges on GDS layer {gds}, in the same or in different polygons, must be at least {value} µm apart (Euclidean).",
        "Flag {layer} shapes (layer {gds}) that come closer than {value} um to each other, including corner-to-corner.",
        "Rule {ref}: minimum {layer} to {layer} space on {gds} is {value} µm.",
    ],
    RuleKind.NOTCH: [
        "The notch (space within one polygon) of {layer} ({gds}) must be at least {value} µm.",
        "Flag slots inside a single {layer} polygon on GDS layer {gds} narrower than {value} µm; space between different polygons is not checked.",
        "Rule {ref}: a {layer} polygon (layer {gds}) must not have a notch below {value} um.",
        "Within any one {layer} shape drawn on {gds}, facing edges must be at least {value} µm apart (Euclidean).",
    ],
    RuleKind.AREA: [
        "Every {layer} ({gds}) polygon must have an area of at least {value} µm².",
        "Flag {layer} shapes on GDS layer {gds} whose area is smaller than {value} um^2 (touching shapes count as one).",
        "Rule {ref}: minimum {layer} area on {gds} is {value} µm².",
        "A merged {layer} polygon (layer {gds}) below {value} square microns violates the minimum area rule.",
    ],
    RuleKind.HOLE: [
        "Any hole enclosed by {layer} ({gds}) must have an area of at least {value} µm².",
        "Flag holes in {layer} polygons on GDS layer {gds} whose area is below {value} um^2.",
        "Rule {ref}: minimum area of a {layer} hole (layer {gds}) is {value} µm².",
        "An opening fully surrounded by {layer} on {gds} must be at least {value} square microns.",
    ],
    RuleKind.ENCLOSURE: [
        "{layer} ({gds}) must enclose {inner} ({inner_gds}) by at least {value} µm.",
        "Every {inner} shape on GDS layer {inner_gds} must be surrounded by {layer} (layer {gds}) with a margin of at least {value} um on every side (Euclidean).",
        "Rule {ref}: minimum enclosure of {inner} by {layer} is {value} µm; {layer} is {gds}, {inner} is {inner_gds}.",
        "Flag {inner} ({inner_gds}) edges that are closer than {value} µm to the inside of the enclosing {layer} ({gds}).",
    ],
}


def phrasings(rule: Rule) -> list[str]:
    inner = rule.inner
    fields = {"layer": rule.layer.name, "gds": f"{rule.layer.gds_layer}/{rule.layer.gds_datatype}",
              "value": f"{rule.value:g}", "ref": rule.deck_rule,
              "inner": inner.name if inner else "", "inner_gds": f"{inner.gds_layer}/{inner.gds_datatype}" if inner else ""}
    return [template.format(**fields) for template in TEMPLATES[rule.kind]]
