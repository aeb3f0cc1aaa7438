"""Closer's BEOL DRC deck for sky130 (li1 .. met5), written from the public SKY130 periphery rule
values as recorded in the PDK's tech LEF comments (LI 1, Met1 2, Via 4a, ...). Rules are data;
`closer.physical.signoff.drc` runs them with KLayout's region engine. Never loosen a value here to make
a layout pass: the values are the foundry's.

Kinds:
  width      minimum width of `layer`
  spacing    minimum spacing (between shapes and notches) of `layer`
  area       minimum area (um^2) of each merged polygon of `layer`
  hole_area  minimum area (um^2) of each hole of a merged polygon of `layer` (the values of the
             official deck, sky130A_mr.drc: m1.7, m2.7, m5.7 0.14; m3.7, m4.7 0.2)
  cut_size   each cut on `layer` is a square of exactly `value`
  cut_space  minimum spacing of cuts on `layer`
  enclosure  `other` (metal) encloses each cut on `layer` by `value` on all sides
  enclosure2 `other` encloses each cut by `value` on two opposite sides (the rule is
             "on one of two adjacent sides", which holds exactly when both sides of one axis do)
  offgrid    every vertex on `layer` lies on the `value` um manufacturing grid
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RuleKind = Literal["width", "spacing", "area", "hole_area", "cut_size", "cut_space", "enclosure", "enclosure2", "offgrid"]


@dataclass(frozen=True)
class Rule:
    name: str
    kind: RuleKind
    layer: str
    value: float
    other: str = ""
    description: str = ""


RULES: tuple[Rule, ...] = (
    # li1 and mcon
    Rule("li.1", "width", "li1", 0.17, description="min width of li1"),
    Rule("li.3", "spacing", "li1", 0.17, description="min spacing of li1 to li1"),
    Rule("li.6", "area", "li1", 0.0561, description="min area of li1"),
    Rule("ct.1", "cut_size", "mcon", 0.17, description="mcon is exactly 0.17 x 0.17"),
    Rule("ct.2", "cut_space", "mcon", 0.19, description="min spacing of mcon to mcon"),
    Rule("ct.4", "enclosure", "mcon", 0.0, other="li1", description="mcon must be covered by li1"),
    # met1 and via
    Rule("m1.1", "width", "met1", 0.14, description="min width of met1"),
    Rule("m1.2", "spacing", "met1", 0.14, description="min spacing of met1 to met1"),
    Rule("m1.4", "enclosure", "mcon", 0.03, other="met1", description="met1 enclosure of mcon"),
    Rule("m1.5", "enclosure2", "mcon", 0.06, other="met1", description="met1 enclosure of mcon on one of two adjacent sides"),
    Rule("m1.6", "area", "met1", 0.083, description="min area of met1"),
    Rule("m1.7", "hole_area", "met1", 0.14, description="min area of a met1 hole"),
    Rule("via.1a", "cut_size", "via", 0.15, description="via is exactly 0.15 x 0.15"),
    Rule("via.2", "cut_space", "via", 0.17, description="min spacing of via to via"),
    Rule("via.4a", "enclosure", "via", 0.055, other="met1", description="met1 enclosure of via"),
    Rule("via.5a", "enclosure2", "via", 0.085, other="met1", description="met1 enclosure of via on one of two adjacent sides"),
    # met2 and via2
    Rule("m2.1", "width", "met2", 0.14, description="min width of met2"),
    Rule("m2.2", "spacing", "met2", 0.14, description="min spacing of met2 to met2"),
    Rule("m2.4", "enclosure", "via", 0.055, other="met2", description="met2 enclosure of via"),
    Rule("m2.5", "enclosure2", "via", 0.085, other="met2", description="met2 enclosure of via on one of two adjacent sides"),
    Rule("m2.6", "area", "met2", 0.0676, description="min area of met2"),
    Rule("m2.7", "hole_area", "met2", 0.14, description="min area of a met2 hole"),
    Rule("via2.1a", "cut_size", "via2", 0.2, description="via2 is exactly 0.2 x 0.2"),
    Rule("via2.2", "cut_space", "via2", 0.2, description="min spacing of via2 to via2"),
    Rule("via2.4", "enclosure", "via2", 0.04, other="met2", description="met2 enclosure of via2"),
    Rule("via2.4a", "enclosure2", "via2", 0.085, other="met2", description="met2 enclosure of via2 on one of two adjacent sides"),
    # met3 and via3
    Rule("m3.1", "width", "met3", 0.3, description="min width of met3"),
    Rule("m3.2", "spacing", "met3", 0.3, description="min spacing of met3 to met3"),
    Rule("m3.4", "enclosure", "via2", 0.065, other="met3", description="met3 enclosure of via2"),
    Rule("m3.6", "area", "met3", 0.24, description="min area of met3"),
    Rule("m3.7", "hole_area", "met3", 0.2, description="min area of a met3 hole"),
    Rule("via3.1", "cut_size", "via3", 0.2, description="via3 is exactly 0.2 x 0.2"),
    Rule("via3.2", "cut_space", "via3", 0.2, description="min spacing of via3 to via3"),
    Rule("via3.4", "enclosure", "via3", 0.06, other="met3", description="met3 enclosure of via3"),
    Rule("via3.5", "enclosure2", "via3", 0.09, other="met3", description="met3 enclosure of via3 on one of two adjacent sides"),
    # met4 and via4
    Rule("m4.1", "width", "met4", 0.3, description="min width of met4"),
    Rule("m4.2", "spacing", "met4", 0.3, description="min spacing of met4 to met4"),
    Rule("m4.3", "enclosure", "via3", 0.065, other="met4", description="met4 enclosure of via3"),
    Rule("m4.4a", "area", "met4", 0.24, description="min area of met4"),
    Rule("m4.7", "hole_area", "met4", 0.2, description="min area of a met4 hole"),
    Rule("via4.1", "cut_size", "via4", 0.8, description="via4 is exactly 0.8 x 0.8"),
    Rule("via4.2", "cut_space", "via4", 0.8, description="min spacing of via4 to via4"),
    Rule("via4.4", "enclosure", "via4", 0.19, other="met4", description="met4 enclosure of via4"),
    # met5
    Rule("m5.1", "width", "met5", 1.6, description="min width of met5"),
    Rule("m5.2", "spacing", "met5", 1.6, description="min spacing of met5 to met5"),
    Rule("m5.3", "enclosure", "via4", 0.31, other="met5", description="met5 enclosure of via4"),
    Rule("m5.4", "area", "met5", 4.0, description="min area of met5"),
    Rule("m5.7", "hole_area", "met5", 0.14, description="min area of a met5 hole"),
    # manufacturing grid (x.1b in the periphery rules: 0.005 um)
    *(Rule(f"x.1b.{layer}", "offgrid", layer, 0.005, description=f"{layer} vertices on the 5 nm grid")
      for layer in ("li1", "mcon", "met1", "via", "met2", "via2", "met3", "via3", "met4", "via4", "met5")),
)
