"""The SKY130 rule table the problem generator draws from.

Values are the periphery rules of the official SKY130 KLayout deck
(`$PDK_ROOT/sky130A/libs.tech/klayout/drc/sky130A_mr.drc`, read for the numbers; `deck_rule` names
the deck's category). Each rule is one check on real GDS layers.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

GRID_NM = 5  # SKY130 manufacturing grid


class Layer(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    gds_layer: int = Field(ge=0, le=65535)
    gds_datatype: int = Field(ge=0, le=65535)

    @property
    def pair(self) -> tuple[int, int]:
        return (self.gds_layer, self.gds_datatype)


class RuleKind(StrEnum):
    WIDTH = "width"
    SPACING = "spacing"
    NOTCH = "notch"
    AREA = "area"
    HOLE = "hole"
    ENCLOSURE = "enclosure"


class Rule(BaseModel):
    model_config = ConfigDict(frozen=True)
    deck_rule: str  # the official deck's category, e.g. "m1.1"
    kind: RuleKind
    layer: Layer  # the checked layer; for enclosure, the outer one
    inner: Layer | None = None  # enclosure: the enclosed layer
    value: float = Field(gt=0)  # µm, or µm² for area and hole

    @property
    def value_nm(self) -> int:
        """The threshold in nm (µm rules) or nm² (area rules)."""
        scale = 1e6 if self.kind in (RuleKind.AREA, RuleKind.HOLE) else 1e3
        return round(self.value * scale)


def _layers() -> dict[str, Layer]:
    table = {"nwell": (64, 20), "diff": (65, 20), "tap": (65, 44), "poly": (66, 20),
             "licon1": (66, 44), "npc": (95, 20), "li1": (67, 20), "mcon": (67, 44),
             "met1": (68, 20), "via": (68, 44), "met2": (69, 20), "via2": (69, 44),
             "met3": (70, 20), "via3": (70, 44), "met4": (71, 20), "via4": (71, 44),
             "met5": (72, 20), "capm": (89, 44)}
    return {name: Layer(name=name, gds_layer=num, gds_datatype=dt) for name, (num, dt) in table.items()}


LAYERS = _layers()

# A layer a "wrong layer" candidate reads instead, and on which decoy shapes are drawn.
NEIGHBOUR = {"nwell": "diff", "diff": "tap", "tap": "diff", "poly": "li1", "licon1": "mcon",
             "npc": "poly", "li1": "met1", "mcon": "licon1", "met1": "met2", "via": "via2",
             "met2": "met1", "via2": "via", "met3": "met4", "via3": "via2", "met4": "met3",
             "via4": "via3", "met5": "met4", "capm": "met3"}

_WIDTH = {"nwell": ("nwell.1", 0.84), "diff": ("difftap.1", 0.15), "tap": ("difftap.1_b", 0.15),
          "poly": ("poly.1a", 0.15), "licon1": ("licon.1", 0.17), "npc": ("npc.1", 0.27),
          "li1": ("li.1", 0.17), "mcon": ("ct.1", 0.17), "met1": ("m1.1", 0.14),
          "via": ("via.1a", 0.15), "met2": ("m2.1", 0.14), "via2": ("via2.1a", 0.2),
          "met3": ("m3.1", 0.3), "via3": ("via3.1", 0.2), "met4": ("m4.1", 0.3),
          "met5": ("m5.1", 1.6), "capm": ("capm.1", 1.0)}
_SPACING = {"nwell": ("nwell.2a", 1.27), "diff": ("difftap.3", 0.27), "poly": ("poly.2", 0.21),
            "licon1": ("licon.2", 0.17), "npc": ("npc.2", 0.27), "li1": ("li.3", 0.17),
            "mcon": ("ct.2", 0.19), "met1": ("m1.2", 0.14), "via": ("via.2", 0.17),
            "met2": ("m2.2", 0.14), "via2": ("via2.2", 0.2), "met3": ("m3.2", 0.3),
            "via3": ("via3.2", 0.2), "met4": ("m4.2", 0.3), "met5": ("m5.2", 1.6),
            "capm": ("capm.2a", 0.84)}
_NOTCH = {"li1": ("li.3", 0.17), "met1": ("m1.2", 0.14), "met2": ("m2.2", 0.14),
          "met3": ("m3.2", 0.3), "met4": ("m4.2", 0.3), "poly": ("poly.2", 0.21)}
_AREA = {"li1": ("li.6", 0.0561), "met1": ("m1.6", 0.083), "met2": ("m2.6", 0.0676),
         "met3": ("m3.6", 0.24), "met4": ("m4.4a", 0.24), "met5": ("m5.4", 4.0)}
_HOLE = {"met1": ("m1.7", 0.14), "met2": ("m2.7", 0.14)}
_ENCLOSURE = {("met1", "mcon"): ("m1.4", 0.03), ("met1", "via"): ("via.4a", 0.055),
              ("met2", "via"): ("m2.4", 0.055), ("met2", "via2"): ("via2.4", 0.04),
              ("met3", "via2"): ("m3.4", 0.065), ("met3", "via3"): ("via3.4", 0.06),
              ("met4", "via3"): ("m4.3", 0.065), ("met4", "via4"): ("via4.4", 0.19),
              ("met5", "via4"): ("m5.3", 0.31), ("capm", "via3"): ("capm.8", 0.14),
              ("met3", "capm"): ("capm.3", 0.14), ("poly", "licon1"): ("licon.8", 0.05),
              ("diff", "licon1"): ("licon.5a", 0.04)}


def rule_table() -> list[Rule]:
    rules: list[Rule] = []
    for kind, table in ((RuleKind.WIDTH, _WIDTH), (RuleKind.SPACING, _SPACING), (RuleKind.NOTCH, _NOTCH),
                        (RuleKind.AREA, _AREA), (RuleKind.HOLE, _HOLE)):
        rules += [Rule(deck_rule=ref, kind=kind, layer=LAYERS[name], value=value)
                  for name, (ref, value) in table.items()]
    rules += [Rule(deck_rule=ref, kind=RuleKind.ENCLOSURE, layer=LAYERS[outer], inner=LAYERS[inner], value=value)
              for (outer, inner), (ref, value) in _ENCLOSURE.items()]
    return rules
