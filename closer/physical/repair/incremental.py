"""Incremental reroute after cells were added, resized or moved in a routed layout: every wire
that does not have to move is kept.

What is rerouted (`closer.physical.steps.reroute.reroute_changed_cells`): the nets on the changed
cells' pins, plus the nets with li1 or met1 wiring within `CLEARANCE_UM` of a changed cell's
footprint, old and new (`cell_windows`, found by closer.physical.repair.repair.nets_at): such a
wire would short to the cell's li1 pins or block their access. The routed DEF gets the placed DEF's
COMPONENTS (the new cells, the fill around them) and those nets' NETS entries with their new
connections, unrouted (`with_new_cells`); qrouter then routes only them against the rest
(closer.physical.route.reroute, as the rip-up repair does), and the new wiring is spliced back.
Used by the antenna repair (the diodes) and the setup repair (the resized cells and isolation
buffers).
"""

from __future__ import annotations

import re
from typing import Iterable

from closer.physical.floorplan.floorplan import DBU, Placed
from closer.physical.io.lef import Macro
from closer.physical.io.netlist import Netlist
from closer.physical.repair import repair

# li1 / met1 wiring of another net this close to a changed cell is ripped up with the cell's nets
# (li.3 is 0.17 um, m1.2 0.14 um: a wire over the cell would short to its li1 pin or block its access)
CLEARANCE_UM = 0.2


def cell_nets(netlist: Netlist, names: Iterable[str]) -> set[str]:
    """The signal nets on the pins of the instances `names` (power pins are not in the netlist)."""
    return {net for name in names for net in netlist.instances[name].pins.values()
            if net in netlist.nets and net not in repair.POWER_NETS}


def cell_windows(cells: Iterable[Placed], macros: dict[str, Macro]) -> list[repair.Window]:
    """Each placed cell's box as an li1 window (li1 and met1 wiring inside it: repair.nets_at)."""
    out = []
    for p in cells:
        m = macros[p.master]
        out.append(("li1", (p.x / DBU, p.y / DBU, p.x / DBU + m.width, p.y / DBU + m.height)))
    return out


def net_cell_windows(netlist: Netlist, cells: dict[str, Placed], macros: dict[str, Macro],
                     net: str) -> list[repair.Window]:
    """The boxes of the cells on `net`'s pins, as li1 and via windows (li1, met1 and met2 wiring
    inside: what walls in their pins' access)."""
    boxes = cell_windows((cells[i] for i, _ in netlist.nets.get(net, []) if i in cells), macros)
    return [(layer, box) for _, box in boxes for layer in ("li1", "via")]


_COMPONENT = re.compile(r"^- (\S+) (\S+) \+ (?:PLACED|FIXED) \( (-?\d+) (-?\d+) \) (\S+) ;", re.M)


def _components(placed_def: str) -> dict[str, tuple[str, int, int, str]]:
    return {m[1]: (m[2], int(m[3]), int(m[4]), m[5]) for m in _COMPONENT.finditer(placed_def)}


def moved_components(before: str, after: str, macros: dict[str, Macro]) -> list[tuple[float, float, float, float]]:
    """The boxes (µm) of the components that two placed DEFs do not share (added, removed, resized,
    moved, flipped: the fill around a changed cell included), where they stood and where they stand."""
    old, new = _components(before), _components(after)
    out = []
    for name in old.keys() | new.keys():
        if old.get(name) == new.get(name):
            continue
        for master, x, y, _ in (c for c in (old.get(name), new.get(name)) if c is not None):
            m = macros[master]
            out.append((x / DBU, y / DBU, x / DBU + m.width, y / DBU + m.height))
    return out


def with_new_cells(routed_def: str, placed_def: str, nets: set[str]) -> str:
    """The routed DEF with the placed DEF's COMPONENTS (the new and changed cells, the fill around
    them) and NETS entries of `nets` (their new connections, unrouted; a net new in the placed DEF
    is added): every other net's wiring kept."""
    section = re.compile(r"\nCOMPONENTS \d+ ;.*?END COMPONENTS", re.S)
    components = section.search(placed_def)
    if components is None or section.search(routed_def) is None:
        raise ValueError("a DEF without a COMPONENTS section")
    text = section.sub(lambda _: components.group(0), routed_def, count=1)
    return repair.splice_routes(text, placed_def, nets)
