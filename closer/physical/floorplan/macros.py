"""Hard macros (CLASS BLOCK abstracts such as the SKY130 SRAMs): where the floorplan puts them
(their LEF and Liberty files: closer.pdk.MacroAbstract).

A macro is placed from the design's floorplan settings (`MacroPlacement`: lower-left corner from
the core's lower-left, orientation, halo). The rows it and its halo cover hold no standard cells
(whole rows, so every remaining row keeps rails that reach both power straps). The PDK has each
macro's LEF and Liberty but no GDS: the layout draws its LEF pins (a black box with pins) and the
record says so (`closer__macros__gds = "LEF pins only"`).
"""

from __future__ import annotations

from dataclasses import dataclass

from closer.errors import InputError

ORIENTS = ("N", "FS")


@dataclass(frozen=True)
class MacroPlacement:
    instance: str
    x_um: float
    y_um: float
    orient: str = "N"
    halo_um: float = 10.0


def check_placements(placements: tuple[MacroPlacement, ...], blocks: dict[str, str]) -> None:
    """`blocks`: the netlist's macro instances (name -> master). Each needs one placement."""
    placed = [p.instance for p in placements]
    for p in placements:
        if p.instance not in blocks:
            raise InputError(f"macro placement {p.instance!r}: no macro instance of that name in the "
                             f"netlist (macro instances: {', '.join(sorted(blocks)) or 'none'})")
        if p.orient not in ORIENTS:
            raise InputError(f"macro placement {p.instance!r}: orient {p.orient!r} not supported ({', '.join(ORIENTS)})")
        if min(p.x_um, p.y_um, p.halo_um) < 0:
            raise InputError(f"macro placement {p.instance!r}: x_um, y_um and halo_um must be >= 0")
        if placed.count(p.instance) > 1:
            raise InputError(f"macro placement {p.instance!r}: placed twice")
    missing = sorted(set(blocks) - set(placed))
    if missing:
        raise InputError(f"macro instance(s) without a placement in the floorplan settings: {', '.join(missing)}")
