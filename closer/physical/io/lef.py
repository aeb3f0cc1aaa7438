"""A small reader for the parts of LEF the physical steps need.

Tech LEF: routing-layer pitch/offset/width/direction/area, fixed VIA definitions and each layer's
antenna rules (THICKNESS, ANTENNA[DIFF][SIDE]AREARATIO, constant or PWL).
Cell LEF: each MACRO's class, size, pins (direction, use, port rectangles per layer, antenna
gate/diffusion areas) and OBS.
Only RECT geometry is read (the sky130_fd_sc_hd LEF has no POLYGON statements); anything else
is skipped. Coordinates are kept in microns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from closer.errors import InputError

Rect = tuple[float, float, float, float]  # x1, y1, x2, y2 in µm


@dataclass(frozen=True)
class RoutingLayer:
    name: str
    direction: str  # "HORIZONTAL" | "VERTICAL"
    pitch_x: float
    pitch_y: float
    offset_x: float
    offset_y: float
    width: float
    min_area: float


@dataclass(frozen=True)
class ViaDef:
    name: str
    shapes: tuple[tuple[str, Rect], ...]  # (layer, rect) relative to the via origin


Pwl = tuple[tuple[float, float], ...]  # (diffusion area um^2, allowed ratio), ascending


@dataclass(frozen=True)
class AntennaRule:
    """One layer's antenna ratios (LEF 5.8 ANTENNAMODEL OXIDE1, partial: this layer's metal only).
    Routing layers limit side area (perimeter x THICKNESS) / gate area, cut layers cut area /
    gate area; the DIFF forms give the limit as a function of the connected diffusion area."""
    layer: str
    thickness: float = 0.0
    side_ratio: float | None = None        # ANTENNASIDEAREARATIO (no diffusion connected)
    diff_side_ratio: Pwl | None = None     # ANTENNADIFFSIDEAREARATIO
    area_ratio: float | None = None        # ANTENNAAREARATIO
    diff_area_ratio: Pwl | None = None     # ANTENNADIFFAREARATIO

    @property
    def uses_side_area(self) -> bool:
        return self.side_ratio is not None or self.diff_side_ratio is not None

    def limit(self, diff_area: float) -> float | None:
        const, pwl = ((self.side_ratio, self.diff_side_ratio) if self.uses_side_area
                      else (self.area_ratio, self.diff_area_ratio))
        if diff_area <= 0 and const is not None:
            return const
        return _interpolate(pwl, diff_area) if pwl else const


def _interpolate(pwl: Pwl, x: float) -> float:
    """Piecewise-linear value at x, flat beyond the first and last points."""
    if x <= pwl[0][0]:
        return pwl[0][1]
    for (x0, y0), (x1, y1) in zip(pwl, pwl[1:]):
        if x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return pwl[-1][1]


def _pwl(values: list[str], path: Path, layer: str) -> Pwl:
    """`PWL ( ( d1 r1 ) ( d2 r2 ) ... )` tokens -> points."""
    numbers = [v for v in values[1:] if v not in ("(", ")")]
    if values[:1] != ["PWL"] or len(numbers) < 2 or len(numbers) % 2:
        raise InputError(f"{path}: layer {layer}: bad antenna PWL {' '.join(values)}")
    try:
        pts = [(float(numbers[i]), float(numbers[i + 1])) for i in range(0, len(numbers), 2)]
    except ValueError as exc:
        raise InputError(f"{path}: layer {layer}: bad antenna PWL {' '.join(values)}") from exc
    return tuple(sorted(pts))


def _antenna_rule(name: str, props: dict[str, list[str]], path: Path) -> AntennaRule | None:
    def const(key):
        return float(props[key][0]) if key in props and props[key][0] != "PWL" else None

    def pwl(key):
        return _pwl(props[key], path, name) if key in props and props[key][0] == "PWL" else None

    rule = AntennaRule(name, float(props.get("THICKNESS", ["0"])[0]), const("ANTENNASIDEAREARATIO"),
                       pwl("ANTENNADIFFSIDEAREARATIO"), const("ANTENNAAREARATIO"), pwl("ANTENNADIFFAREARATIO"))
    has_rule = any(v is not None for v in (rule.side_ratio, rule.diff_side_ratio, rule.area_ratio, rule.diff_area_ratio))
    return rule if has_rule else None


@dataclass(frozen=True)
class Tech:
    routing_layers: tuple[RoutingLayer, ...]  # bottom (li1) to top (met5)
    cut_layers: tuple[str, ...]
    vias: dict[str, ViaDef]
    site_width: float
    site_height: float
    antenna: dict[str, AntennaRule] = field(default_factory=dict)  # layer -> its antenna rule

    def layer(self, name: str) -> RoutingLayer:
        for layer in self.routing_layers:
            if layer.name == name:
                return layer
        raise InputError(f"tech LEF has no routing layer {name!r}")


@dataclass
class Pin:
    name: str
    direction: str
    use: str
    rects: list[tuple[str, Rect]] = field(default_factory=list)
    gate_area: float = 0.0   # ANTENNAGATEAREA, um^2 (an input's transistor gates)
    diff_area: float = 0.0   # ANTENNADIFFAREA, um^2 (an output's drain diffusion)


@dataclass
class Macro:
    name: str
    cls: str
    width: float
    height: float
    pins: dict[str, Pin] = field(default_factory=dict)
    obs: list[tuple[str, Rect]] = field(default_factory=list)

    def signal_pins(self) -> list[Pin]:
        return [p for p in self.pins.values() if p.use not in ("POWER", "GROUND")]


_TOKEN = re.compile(r"[^\s;]+|;")


def _statements(text: str):
    """Yield LEF statements as token lists (comments stripped, split at ';' or line end for END)."""
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        tokens = _TOKEN.findall(line)
        stmt: list[str] = []
        for tok in tokens:
            if tok == ";":
                if stmt:
                    yield stmt
                stmt = []
            else:
                stmt.append(tok)
        if stmt:
            yield stmt


def _rect(tokens: list[str], path: Path) -> Rect:
    try:
        x1, y1, x2, y2 = (float(t) for t in tokens[1:5])
    except ValueError as exc:
        raise InputError(f"{path}: bad RECT {' '.join(tokens)}") from exc
    return (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))


def _area(tokens: list[str], path: Path, macro: str, pin: str) -> float:
    try:
        return float(tokens[1])
    except (IndexError, ValueError) as exc:
        raise InputError(f"{path}: macro {macro} pin {pin}: bad {' '.join(tokens)}") from exc


@lru_cache(maxsize=4)
def read_tech(path: Path) -> Tech:
    text = Path(path).read_text()
    layers: list[RoutingLayer] = []
    cuts: list[str] = []
    vias: dict[str, ViaDef] = {}
    antenna: dict[str, AntennaRule] = {}
    site = (0.0, 0.0)
    block: list[str] | None = None  # ["LAYER", name] / ["VIA", name] / ["SITE", name]
    props: dict[str, list[str]] = {}
    via_layer = ""
    via_shapes: list[tuple[str, Rect]] = []
    skipping = False
    for st in _statements(text):
        key = st[0]
        if key == "PROPERTYDEFINITIONS" or (skipping and st != ["END", "PROPERTYDEFINITIONS"]):
            skipping = True
            continue
        if skipping:
            skipping = False
            continue
        if block is None:
            if key in ("LAYER", "VIA", "SITE", "VIARULE") and len(st) >= 2:
                block, props, via_shapes = [key, st[1]], {}, []
            continue
        if key == "END" and len(st) == 2 and st[1] == block[1]:
            kind, name = block
            rule = _antenna_rule(name, props, path) if kind == "LAYER" else None
            if rule is not None:
                antenna[name] = rule
            if kind == "LAYER" and props.get("TYPE", [""])[0] == "ROUTING":
                pitch = [float(v) for v in props["PITCH"]]
                offset = [float(v) for v in props.get("OFFSET", ["0"])]
                layers.append(RoutingLayer(
                    name, props["DIRECTION"][0], pitch[0], pitch[-1], offset[0], offset[-1],
                    float(props["WIDTH"][0]), float(props.get("AREA", ["0"])[0])))
            elif kind == "LAYER" and props.get("TYPE", [""])[0] == "CUT":
                cuts.append(name)
            elif kind == "VIA":
                vias[name] = ViaDef(name, tuple(via_shapes))
            elif kind == "SITE" and name == "unithd":
                w, _, h = props["SIZE"]
                site = (float(w), float(h))
            block = None
            continue
        if block[0] == "VIA" and key == "LAYER":
            via_layer = st[1]
        elif block[0] == "VIA" and key == "RECT":
            via_shapes.append((via_layer, _rect(st, path)))
        elif key not in props:
            props[key] = st[1:]
    if not layers:
        raise InputError(f"{path}: no ROUTING layers found; is this a tech LEF?")
    return Tech(tuple(layers), tuple(cuts), vias, site[0], site[1], antenna)


@lru_cache(maxsize=4)
def read_macros(path: Path) -> dict[str, Macro]:
    text = Path(path).read_text()
    macros: dict[str, Macro] = {}
    macro: Macro | None = None
    pin: Pin | None = None
    in_obs = False
    layer = ""
    for st in _statements(text):
        key = st[0]
        if macro is None:
            if key == "MACRO":
                macro = Macro(st[1], "", 0.0, 0.0)
            continue
        if key == "END" and len(st) == 2 and st[1] == macro.name:
            macros[macro.name] = macro
            macro, pin, in_obs = None, None, False
        elif pin is not None:
            if key == "END" and len(st) == 2 and st[1] == pin.name:
                macro.pins[pin.name] = pin
                pin = None
            elif key == "DIRECTION":
                pin.direction = st[1]
            elif key == "USE":
                pin.use = st[1]
            elif key == "LAYER":
                layer = st[1]
            elif key == "RECT":
                pin.rects.append((layer, _rect(st, path)))
            elif key in ("ANTENNAGATEAREA", "ANTENNADIFFAREA"):
                area = _area(st, path, macro.name, pin.name)
                if key == "ANTENNAGATEAREA":
                    pin.gate_area += area
                else:
                    pin.diff_area += area
        elif in_obs:
            if key == "END" and len(st) == 1:
                in_obs = False
            elif key == "LAYER":
                layer = st[1]
            elif key == "RECT":
                macro.obs.append((layer, _rect(st, path)))
        elif key == "CLASS":
            macro.cls = " ".join(st[1:])
        elif key == "SIZE":
            macro.width, macro.height = float(st[1]), float(st[3])
        elif key == "PIN":
            pin = Pin(st[1], "INPUT", "SIGNAL")
        elif key == "OBS":
            in_obs = True
    if not macros:
        raise InputError(f"{path}: no MACRO found; is this a cell LEF?")
    return macros
