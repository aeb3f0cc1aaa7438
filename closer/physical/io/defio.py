"""Write the placed layout as DEF 5.8 (die, rows, tracks, components, pins, power, nets), the
whole die or one band of rows (band routing), and read back the routed DEF's NETS section
(wire length, vias, which nets have wiring)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from closer.physical.floorplan.floorplan import (IO_PIN_LEN, IO_PIN_W, RAIL_W, SITE_W, STRAP_GAP, STRAP_W, Layout,
                                                 rail_ys)
from closer.physical.io.lef import Tech
from closer.physical.io.netlist import Netlist

POWER_NETS = ("VPWR", "VGND")
RAIL_VIA = "M1M2_PR"
IO_PIN_TAP_Y = 510
STUB_VIAS = ((1, "M1M2_PR"), (2, "M2M3_PR"), (3, "M3M4_PR"))  # a macro power stub's via stack on its rail
RAIL_VIA_STEP = 400  # three M1M2 cuts per rail/strap crossing, 0.25 um apart (via.2 = 0.17)


@dataclass(frozen=True)
class Strap:
    net: str
    x0: int
    x1: int
    y0: int
    y1: int


def straps(layout: Layout) -> list[Strap]:
    y0, y1 = layout.core_y0 - RAIL_W // 2, layout.core_y1 + RAIL_W // 2
    left = layout.core_x0 - STRAP_GAP - STRAP_W
    right = layout.core_x1 + STRAP_GAP
    return [Strap("VPWR", left, left + STRAP_W, y0, y1), Strap("VGND", right, right + STRAP_W, y0, y1)]


def rails(layout: Layout) -> list[tuple[str, int, int, int]]:
    """(net, x0, x1, y) of each met1 rail; VPWR rails reach the left strap, VGND the right one.
    Row boundaries inside a macro's y span have no rail (rail_ys)."""
    s = {st.net: st for st in straps(layout)}
    out = []
    kept = set(rail_ys(layout, "VPWR")) | set(rail_ys(layout, "VGND"))
    for k in range(layout.rows + 1):
        net = layout.rail_net(k)
        y = layout.row_y(k)
        if y not in kept:
            continue
        if net == "VPWR":
            out.append((net, s["VPWR"].x0, layout.core_x1, y))
        else:
            out.append((net, layout.core_x0, s["VGND"].x1, y))
    return out


@dataclass(frozen=True)
class Band:
    """A band of whole rows that a DEF may be written for alone (band routing): rows
    [row0, row1), its die box in y, and the lowest and highest y a horizontal track of it may
    have. The rails on its edges are in it (as obstructions); the IO pins of the die edges
    it touches are its own."""

    row0: int
    row1: int
    y0: int
    y1: int
    track_y0: int
    track_y1: int


@dataclass(frozen=True)
class ExtraPin:
    """A pin of a band's DEF that is not a port of the design: where a net crosses into the
    neighbouring band (a square of a vertical layer's minimum width on a track point)."""

    name: str
    net: str
    x: int
    y: int
    layer: str = "met2"
    width: int = IO_PIN_W   # the square's side (dbu): the layer's minimum width


def whole_band(layout: Layout) -> Band:
    return Band(0, layout.rows, 0, layout.die_h, 0, layout.die_h)


def _tracks(layout: Layout, tech: Tech, band: Band) -> list[str]:
    lines = []
    for layer in tech.routing_layers:
        ox, px = round(layer.offset_x * 1000), round(layer.pitch_x * 1000)
        oy, py = round(layer.offset_y * 1000), round(layer.pitch_y * 1000)
        # qrouter keeps one TRACKS line per layer (the last): give only the preferred direction
        if layer.direction == "VERTICAL":
            lines.append(f"TRACKS X {ox} DO {(layout.die_w - ox) // px + 1} STEP {px} LAYER {layer.name} ;")
        else:
            first = oy + max(0, -(-(band.track_y0 - oy) // py)) * py
            count = (min(band.track_y1, layout.die_h) - first) // py + 1
            lines.append(f"TRACKS Y {first} DO {count} STEP {py} LAYER {layer.name} ;")
    return lines


def write_def(layout: Layout, netlist: Netlist, tech: Tech, path: Path, band: Band | None = None,
              extra_pins: tuple[ExtraPin, ...] = (), nets: dict[str, list[tuple[str, str]]] | None = None) -> Path:
    """The placed layout as DEF; with `band`, only that band's rows, components, IO pins, power and
    tracks, its `extra_pins`, and `nets` (each net's terminals inside the band, `("PIN", name)`
    for an extra pin) instead of the netlist's."""
    band = band or whole_band(layout)
    out = ["VERSION 5.8 ;", 'DIVIDERCHAR "/" ;', 'BUSBITCHARS "[]" ;', f"DESIGN {layout.top} ;",
           "UNITS DISTANCE MICRONS 1000 ;", f"DIEAREA ( 0 {band.y0} ) ( {layout.die_w} {band.y1} ) ;"]
    for r in range(band.row0, band.row1):
        if r in layout.blocked_rows:
            continue
        out.append(f"ROW ROW_{r} unithd {layout.core_x0} {layout.row_y(r)} {layout.row_orient(r)} "
                   f"DO {layout.cols} BY 1 STEP {SITE_W} 0 ;")
    out += _tracks(layout, tech, band)
    lo, hi = layout.row_y(band.row0), layout.row_y(band.row1)
    comps = [c for c in [*layout.cells.values(), *layout.physical] if lo <= c.y < hi]
    out.append(f"COMPONENTS {len(comps)} ;")
    for c in comps:
        status = "FIXED" if c.fixed else "PLACED"
        out.append(f"- {c.name} {c.master} + {status} ( {c.x} {c.y} ) {c.orient} ;")
    out.append("END COMPONENTS")
    edges = {"bottom"} if band.row0 == 0 else set()
    edges |= {"top"} if band.row1 == layout.rows else set()
    pins = [p for p in layout.io_pins.values() if p.edge in edges]
    out.append(f"PINS {len(pins) + len(extra_pins) + 2} ;")
    for p in pins:
        direction = {"input": "INPUT", "output": "OUTPUT"}.get(p.direction, "INOUT")
        # qrouter taps a pin at its PLACED point only: put that on a met1 row (0.51 um in from
        # the die edge); the rectangle still reaches the edge and meets met2 minimum area
        y = IO_PIN_TAP_Y if p.edge == "bottom" else layout.die_h - IO_PIN_TAP_Y
        ry = (-IO_PIN_TAP_Y, IO_PIN_LEN - IO_PIN_TAP_Y) if p.edge == "bottom" else (IO_PIN_TAP_Y - IO_PIN_LEN, IO_PIN_TAP_Y)
        out.append(f"- {p.name} + NET {p.name} + DIRECTION {direction} + USE SIGNAL "
                   f"+ LAYER met2 ( {-IO_PIN_W // 2} {ry[0]} ) ( {IO_PIN_W // 2} {ry[1]} ) + PLACED ( {p.x} {y} ) N ;")
    for e in extra_pins:
        half = e.width // 2
        # no "+ NET": qrouter would name the pin after the net and find no "( PIN name )" of it
        out.append(f"- {e.name} + DIRECTION INOUT + USE SIGNAL "
                   f"+ LAYER {e.layer} ( {-half} {-half} ) ( {half} {half} ) + PLACED ( {e.x} {e.y} ) N ;")
    for st in straps(layout):
        use = "POWER" if st.net == "VPWR" else "GROUND"
        cx = (st.x0 + st.x1) // 2
        y0, y1 = max(st.y0, band.y0), min(st.y1, band.y1)
        out.append(f"- {st.net} + NET {st.net} + SPECIAL + DIRECTION INOUT + USE {use} "
                   f"+ LAYER met2 ( {st.x0 - cx} 0 ) ( {st.x1 - cx} {y1 - y0} ) + FIXED ( {cx} {y0} ) N ;")
    out.append("END PINS")
    out += _special_nets(layout, band)
    terms_by_net = netlist.nets if nets is None else nets
    signal = {n: t for n, t in terms_by_net.items() if len(t) >= 2}
    out.append(f"NETS {len(signal)} ;")
    for net, terms in sorted(signal.items()):
        conns = " ".join(f"( PIN {p} )" if i == "PIN" else f"( {i} {p} )" for i, p in terms)
        # qrouter's DEF writer needs the name alone on the "- net" line and ';' on a later one
        out.append(f"- {net}\n  {conns}\n  + USE SIGNAL ;")
    out.append("END NETS")
    out.append("END DESIGN")
    path.write_text("\n".join(out) + "\n")
    return path


def block_power_pins(layout: Layout, net: str) -> list[tuple[str, str]]:
    """(macro instance, pin) of the macros' power (VPWR) or ground (VGND) pins: the power stubs'
    ends; named so `( * VPWR )` is not taken to reach them."""
    return [(stub.instance, stub.pin) for stub in layout.power_stubs if stub.net == net]


def _special_nets(layout: Layout, band: Band) -> list[str]:
    out = ["SPECIALNETS 2 ;"]
    s = {st.net: st for st in straps(layout)}
    for net in POWER_NETS:
        st = s[net]
        cx = (st.x0 + st.x1) // 2
        wires = [f"met2 {STRAP_W} ( {cx} {max(st.y0, band.y0)} ) ( {cx} {min(st.y1, band.y1)} )"]
        for rnet, x0, x1, y in rails(layout):
            if rnet != net or not layout.row_y(band.row0) <= y <= layout.row_y(band.row1):
                continue
            wires.append(f"met1 {RAIL_W} ( {x0} {y} ) ( {x1} {y} )")
            for d in (-1, 0, 1):
                wires.append(f"met1 0 ( {cx + d * RAIL_VIA_STEP} {y} ) {RAIL_VIA}")
        for stub in layout.power_stubs:
            if stub.net == net and band.y0 <= min(stub.rail_y, stub.pin_y) and max(stub.rail_y, stub.pin_y) <= band.y1:
                wires.append(f"met4 {stub.width} ( {stub.x} {stub.rail_y} ) ( {stub.x} {stub.pin_y} )")
                wires += [f"met{k} 0 ( {stub.x} {stub.rail_y} ) {via}" for k, via in STUB_VIAS]
        pins = "".join(f" ( {b} {p} )" for b, p in block_power_pins(layout, net))
        use = "POWER" if net == "VPWR" else "GROUND"
        body = "\n    NEW ".join(wires)
        out.append(f"- {net} ( * {net} ){pins} + USE {use}\n  + ROUTED {body} ;")
    out.append("END SPECIALNETS")
    return out


# ---- routed DEF reading -------------------------------------------------------------------

@dataclass
class RoutedNet:
    name: str
    wire_length_dbu: int
    vias: int
    has_wiring: bool


_NET_START = re.compile(r"^\s*-\s+(\S+)")


def read_routed_nets(path: Path) -> dict[str, RoutedNet]:
    """Wire length (sum of segment lengths, Manhattan) and via count per net of a routed DEF."""
    text = path.read_text()
    start = text.find("\nNETS ")
    end = text.find("END NETS", start)
    if start < 0 or end < 0:
        return {}
    nets: dict[str, RoutedNet] = {}
    for block in text[start:end].split(";")[0:]:
        m = _NET_START.search(block)
        if not m:
            continue
        name = m.group(1)
        length, vias, wired = 0, 0, False
        for seg in re.split(r"\+\s*ROUTED|\bNEW\b", block)[1:]:
            wired = True
            pts = re.findall(r"\(\s*(\S+)\s+(\S+)(?:\s+\S+)?\s*\)", seg)
            prev = None
            for xs, ys in pts:
                x = prev[0] if xs == "*" else int(xs)
                y = prev[1] if ys == "*" else int(ys)
                if prev is not None:
                    length += abs(x - prev[0]) + abs(y - prev[1])
                prev = (x, y)
            tail = seg.rsplit(")", 1)[-1].split()
            if tail and tail[0] not in ("+",) and not tail[0].startswith("+"):
                vias += 1
        nets[name] = RoutedNet(name, length, vias, wired)
    return nets


_POINT = re.compile(r"\(\s*(\S+)\s+(\S+)(?:\s+\S+)?\s*\)")


def net_segment_boxes(path: Path, nets: set[str]) -> dict[str, list[tuple[float, float, float, float]]]:
    """The box (µm, centre lines) of each wire path and via of `nets` in a routed DEF."""
    text = path.read_text()
    found: dict[str, list[tuple[float, float, float, float]]] = {}
    for section in ("NETS", "SPECIALNETS"):
        start = text.find(f"\n{section} ")
        if start < 0:
            continue
        end = text.find(f"END {section}", start)
        for block in re.split(r"\n\s*-\s+", text[start:end])[1:]:
            name = block.split(None, 1)[0]
            if name not in nets:
                continue
            for seg in re.split(r"\+\s*ROUTED|\bNEW\b", block)[1:]:
                points, prev = [], None
                for xs, ys in _POINT.findall(seg):
                    if prev is None and (xs == "*" or ys == "*"):
                        continue
                    prev = (prev[0] if xs == "*" else int(xs), prev[1] if ys == "*" else int(ys))
                    points.append(prev)
                if points:
                    found.setdefault(name, []).append((min(x for x, _ in points) / 1000, min(y for _, y in points) / 1000,
                                                       max(x for x, _ in points) / 1000, max(y for _, y in points) / 1000))
    return found
