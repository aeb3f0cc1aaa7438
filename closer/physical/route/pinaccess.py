"""Per-cell-master pin-access preparation.

qrouter places its own L1M1 via on a routing-grid point inside an li1 pin. On sky130_fd_sc_hd
that point is often illegal (the via's li1 pad sticks out of a narrow pin: li.3; its met1 pad is
too close to the cell's met1: m1.2) or blocked outright (dfxtp D pins: the net fails). Here each
signal pin instead gets one access point computed against the cell's real GDS and the real
rules: an mcon fully inside the pin's li1, its L1M1_PR met1 pad (0.29 x 0.23) >= 0.14 from the
cell's met1, the mcon >= 0.19 from the cell's mcons, pads >= 0.07 inside the cell outline (so
neighbours stay 0.14 apart), and the pad covering a routing-grid point (x = 0.23 + 0.46k,
y = 0.17 + 0.34k). qrouter is then given a derived cell LEF in which each signal pin is that
met1 pad (its li1 becomes an obstruction), and the L1M1_PR vias are added to the routed DEF.
The deck and the real LEF/GDS are untouched; only qrouter's view of the pins changes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from closer.physical.io.lef import Macro, Rect

PAD_HALF_X, PAD_HALF_Y = 145, 115  # L1M1_PR met1 pad, nm
MCON_HALF = 85
MET1_SPACE, MCON_SPACE, EDGE_KEEP = 140, 190, 70
RAIL_KEEP_Y = (240 + 140 + PAD_HALF_Y, 2480 - 140 - PAD_HALF_Y)  # pad centre between the rails
MAX_ON_GRID = 3
MAX_DX = 110  # the grid point stays inside the 0.29 um pad (0.035 um margin)


@dataclass(frozen=True)
class AccessPoint:
    pin: str
    x: int  # mcon centre in the cell's own (N-orientation) coordinates, nm
    y: int
    grid_x: int  # the routing-grid point the pad covers
    grid_y: int
    on_grid: tuple[tuple[int, int], ...] = ()  # legal on-grid via spots; non-empty => qrouter's own via

    @property
    def needs_pad(self) -> bool:
        return not self.on_grid

    def pad(self) -> tuple[int, int, int, int]:
        return (self.x - PAD_HALF_X, self.y - PAD_HALF_Y, self.x + PAD_HALF_X, self.y + PAD_HALF_Y)


@lru_cache(maxsize=2)
def _cell_gds(gds_path: str):
    import klayout.db as kdb

    layout = kdb.Layout()
    layout.read(gds_path)
    return layout


def _cell_regions(gds_path: Path, name: str):
    import klayout.db as kdb

    layout = _cell_gds(str(gds_path))
    cell = layout.cell(name)
    out = {}
    for key, (l, d) in {"li1": (67, 20), "mcon": (67, 44), "met1": (68, 20)}.items():
        idx = layout.find_layer(l, d)
        out[key] = kdb.Region(cell.begin_shapes_rec(idx)) if idx is not None else kdb.Region()
    return out


def _nm(rect: Rect) -> tuple[int, int, int, int]:
    return tuple(round(v * 1000) for v in rect)  # type: ignore[return-value]


def access_points(macro: Macro, gds_path: Path) -> dict[str, AccessPoint | None]:
    """One access point per signal pin on li1 (None where no legal one exists)."""
    import klayout.db as kdb

    regions = _cell_regions(gds_path, macro.name)
    width = round(macro.width * 1000)
    cands: dict[str, list[AccessPoint]] = {}
    for pin in macro.signal_pins():
        li = [_nm(r) for layer, r in pin.rects if layer == "li1"]
        if not li:
            continue
        pin_li = kdb.Region()
        for r in li:
            pin_li.insert(kdb.Box(*r))
        pin_li.merge()
        bbox = pin_li.bbox()
        cx, cy = bbox.center().x, bbox.center().y
        found = []
        for gy in range(170, 2720, 340):
            if not RAIL_KEEP_Y[0] <= gy <= RAIL_KEEP_Y[1]:
                continue
            for gx in range(230, width, 460):
                for dx in sorted(range(-MAX_DX, MAX_DX + 1, 5), key=abs):
                    x = gx + dx
                    mcon = kdb.Box(x - MCON_HALF, gy - MCON_HALF, x + MCON_HALF, gy + MCON_HALF)
                    pad = kdb.Box(x - PAD_HALF_X, gy - PAD_HALF_Y, x + PAD_HALF_X, gy + PAD_HALF_Y)
                    if pad.left < EDGE_KEEP or pad.right > width - EDGE_KEEP:
                        continue
                    if not (kdb.Region(mcon) - pin_li).is_empty():
                        continue
                    if not (kdb.Region(pad.enlarged(MET1_SPACE - 1, MET1_SPACE - 1)) & regions["met1"]).is_empty():
                        continue
                    if not (kdb.Region(mcon.enlarged(MCON_SPACE - 1, MCON_SPACE - 1)) & regions["mcon"]).is_empty():
                        continue
                    found.append(AccessPoint(pin.name, x, gy, gx, gy))
                    break  # smallest |dx| for this grid point
        found.sort(key=lambda a: (abs(a.x - a.grid_x), abs(a.x - cx) + abs(a.y - cy)))
        cands[pin.name] = found
    chosen: dict[str, AccessPoint | None] = {}
    taken: list[AccessPoint] = []  # every via spot handed out in this cell, any pin
    for name in sorted(cands, key=lambda n: (len(cands[n]), n)):
        # on-grid spots that keep ct.2/m1.2 against each other and against the other pins'
        # spots: qrouter may use several spots of one pin (two branches) and spots of
        # neighbouring pins at once
        spots: list[AccessPoint] = []
        for a in cands[name]:
            if a.x == a.grid_x and all(_compatible(a, b) for b in [*taken, *spots]):
                spots.append(a)
            if len(spots) == MAX_ON_GRID:
                break
        if spots:
            a = spots[0]
            chosen[name] = AccessPoint(name, a.x, a.y, a.grid_x, a.grid_y, tuple((b.x, b.y) for b in spots))
            taken += spots
            continue
        pad = next((a for a in cands[name] if all(_compatible(a, b) for b in taken)), None)
        chosen[name] = pad
        if pad:
            taken.append(pad)
    return chosen


def has_met1_port(pin) -> bool:
    """The pin has a met1 port (the async set/reset flops' SET_B/RESET_B bar, dlclkp CLK, fa A/B,
    ...): the router connects to that met1 directly, and its li1 is the cell's own business."""
    return any(layer == "met1" for layer, _ in pin.rects)


def _compatible(a: AccessPoint, b: AccessPoint) -> bool:
    pa, pb = a.pad(), b.pad()
    gap_x = max(pb[0] - pa[2], pa[0] - pb[2])
    gap_y = max(pb[1] - pa[3], pa[1] - pb[3])
    if max(gap_x, gap_y) < MET1_SPACE:
        return False
    return max(abs(a.x - b.x), abs(a.y - b.y)) - 2 * MCON_HALF >= MCON_SPACE


def _cache_key(gds_path: Path) -> str:
    """Invalidates the cache when this module's rules or the cell GDS change."""
    import hashlib

    h = hashlib.sha256(Path(__file__).read_bytes())
    st = Path(gds_path).stat()
    h.update(f"{gds_path}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def is_block(macro: Macro) -> bool:
    from closer.physical.floorplan.floorplan import is_block as block

    return block(macro)


def access_table(macros: dict[str, Macro], masters: set[str], gds_path: Path,
                 cache: Path | None = None) -> dict[str, dict[str, AccessPoint | None]]:
    table: dict[str, dict[str, AccessPoint | None]] = {}
    key = _cache_key(gds_path)
    stored = json.loads(cache.read_text()) if cache and cache.is_file() else {}
    stored = stored.get("masters", {}) if stored.get("key") == key else {}
    for m in sorted(masters):
        if is_block(macros[m]):  # a hard macro: no cell GDS; its LEF pins are reached as drawn
            table[m] = {p.name: None for p in macros[m].signal_pins()}
        elif m in stored:
            table[m] = {p: AccessPoint(**{**a, "on_grid": tuple(map(tuple, a.get("on_grid", ())))}) if a else None
                        for p, a in stored[m].items()}
        else:
            table[m] = access_points(macros[m], gds_path)
    if cache:
        cache.write_text(json.dumps({"key": key, "masters": {m: {p: (a.__dict__ if a else None) for p, a in t.items()}
                                                            for m, t in table.items()}}, indent=0))
    return table


PinAccessMode = str  # "lef": the cells' own li1 pins; "hybrid": legal on-grid via spots, met1 pads
                     # where no on-grid spot exists; "pads": a met1 pad for every li1 pin


def pin_geometry(pin, but: str | None = None) -> list[tuple[str, Rect]]:
    """The pin's own shapes (every layer but the wells and `but`), as obstructions where the router
    sees only an access point of the pin: a pin's met1 strap (xor2_4 / xnor2_4 X, 2.9 um of met1
    across the cell) left out of the router's view was crossed by another net's met1 wire, an LVS
    short no repair round could remove (measured on bench/designs/crc_lfsr, 2026-12-02)."""
    return [(layer, r) for layer, r in pin.rects if layer not in ("nwell", "pwell", but)]


def write_router_lef(macros: dict[str, Macro], table: dict[str, dict[str, AccessPoint | None]],
                     path: Path, mode: PinAccessMode = "hybrid",
                     block_pins: dict[str, dict[str, tuple[str, tuple[Rect, ...], tuple[Rect, ...]]]] | None = None) -> Path:
    """Cell LEF for qrouter. Power pins become obstructions in every mode (the DEF carries the
    power grid as special wiring). Signal pins follow `mode`; a hard macro's connected pins are
    their reaches (`block_pins`: master -> pin -> (layer, rectangle), closer.physical.route.blockpins)."""
    block_pins = block_pins or {}
    out = ["VERSION 5.7 ;", 'BUSBITCHARS "[]" ;', 'DIVIDERCHAR "/" ;']
    for name in sorted(table):
        m = macros[name]
        out += [f"MACRO {name}", f"  CLASS {m.cls} ;", "  ORIGIN 0 0 ;", f"  SIZE {m.width:.3f} BY {m.height:.3f} ;",
                "  SYMMETRY X Y R90 ;", "  SITE unithd ;"]
        extra_obs = []
        for pin in m.pins.values():
            if pin.use in ("POWER", "GROUND"):
                # power is special wiring in the DEF; as pins qrouter mis-assigned some of them
                # to signal nets (measured: rail ends wired to a signal net -> short)
                extra_obs += [(layer, r) for layer, r in pin.rects if layer not in ("nwell", "pwell")]
                continue
            out += [f"  PIN {pin.name}", f"    DIRECTION {pin.direction} ;", f"    USE {pin.use} ;", "    PORT"]
            ap = table[name].get(pin.name) if mode != "lef" else None
            if pin.name in block_pins.get(name, {}):
                layer, rects, obstructions = block_pins[name][pin.name]
                out += [f"      LAYER {layer} ;", *(f"        RECT {r[0]:.3f} {r[1]:.3f} {r[2]:.3f} {r[3]:.3f} ;" for r in rects),
                        "    END", f"  END {pin.name}"]
                extra_obs += [(layer, r) for r in obstructions] + [(lr, r) for lr, r in pin.rects]
                continue
            if ap is not None and mode == "pads" and not ap.needs_pad:
                ap = AccessPoint(ap.pin, ap.x, ap.y, ap.grid_x, ap.grid_y)  # force a pad
            if ap is not None and not ap.needs_pad:
                # qrouter places its own via, but only on a spot where one is legal
                out.append("      LAYER li1 ;")
                out += [f"        RECT {(x - MCON_HALF)/1000:.3f} {(y - MCON_HALF)/1000:.3f} "
                        f"{(x + MCON_HALF)/1000:.3f} {(y + MCON_HALF)/1000:.3f} ;" for x, y in ap.on_grid]
                extra_obs += pin_geometry(pin)
            elif ap is not None:
                x1, y1, x2, y2 = ap.pad()
                out += ["      LAYER met1 ;", f"        RECT {x1/1000:.3f} {y1/1000:.3f} {x2/1000:.3f} {y2/1000:.3f} ;"]
                extra_obs += pin_geometry(pin)
            elif mode != "lef" and has_met1_port(pin):
                # only the met1 port is the pin: qrouter lands on it with met1 or an M1M2 via,
                # never with its own L1M1 via in the pin's (narrow, met1-covered) li1
                out.append("      LAYER met1 ;")
                out += [f"        RECT {r[0]:.3f} {r[1]:.3f} {r[2]:.3f} {r[3]:.3f} ;"
                        for layer, r in pin.rects if layer == "met1"]
                extra_obs += pin_geometry(pin, but="met1")
            else:
                for layer, r in pin.rects:
                    out += [f"      LAYER {layer} ;", f"        RECT {r[0]:.3f} {r[1]:.3f} {r[2]:.3f} {r[3]:.3f} ;"]
            out += ["    END", f"  END {pin.name}"]
        obs = [*m.obs, *extra_obs]
        if obs:
            out.append("  OBS")
            for layer, r in obs:
                out += [f"    LAYER {layer} ;", f"      RECT {r[0]:.3f} {r[1]:.3f} {r[2]:.3f} {r[3]:.3f} ;"]
            out.append("  END")
        out.append(f"END {name}")
    out.append("END LIBRARY")
    path.write_text("\n".join(out) + "\n")
    return path


SKIP_MASTERS = ("fill", "tap", "decap", "diode", "conb")  # no signal pins the router connects


def inaccessible_masters(macros: dict[str, Macro], gds_path: Path, names: list[str] | None = None) -> dict[str, list[str]]:
    """Core cells with a signal pin that has no legal access point: master -> those pins. A pin
    without an li1 access point but with a met1 port is reached on that met1 (write_router_lef)."""
    out = {}
    for name in sorted(names if names is not None else macros):
        macro = macros[name]
        if macro.cls != "CORE" or any(k in name for k in SKIP_MASTERS):
            continue
        none = sorted(pin for pin, ap in access_points(macro, gds_path).items()
                      if ap is None and not has_met1_port(macro.pins[pin]))
        if none:
            out[name] = none
    return out


def main() -> None:
    """Print the cells synthesis must not use because the router cannot reach one of their pins
    (the last section of pdk/sky130hd/dont_use.txt is this list)."""
    import fnmatch

    from closer.flow.platform import dont_use_patterns
    from closer.pdk import pdk
    from closer.physical.io.lef import read_macros

    p = pdk()
    macros = read_macros(p.cell_lef)
    globs = [g for g in dont_use_patterns() if "*" in g]  # the families excluded for other reasons
    names = [m for m in macros if not any(fnmatch.fnmatchcase(m, g) for g in globs)]
    for name, pins in inaccessible_masters(macros, p.gds, names).items():
        print(f"{name}  # {' '.join(pins)}")


if __name__ == "__main__":
    main()
