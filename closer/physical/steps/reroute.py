"""Changed cells into the routed layout with every other wire kept, and the step sequences that
sign a rerouted layout off again."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from closer import procs
from closer.physical.repair import incremental, repair
from closer.physical.route import route
from closer.physical.steps.base import Context
from closer.physical.steps.build import Fill, PinAccess, WriteDef
from closer.physical.steps.checks import wire_windows


# what runs again after a setup repair resized cells: fill to sign-off (the clock tree stays)
# (the official deck once, on the final GDS: the SignoffDrc step after SetupRepair)
REROUTE_STEPS: tuple[str, ...] = ("Fill", "WriteDef", "PinAccess", "Route", "Gds", "Drc", "Lvs", "Repair", "Cleanup")
# what runs again after an incremental reroute (an antenna round's, a setup repair round's)
SIGNOFF_STEPS: tuple[str, ...] = ("Gds", "Drc", "Lvs", "Repair", "Cleanup")


def reroute_changed_cells(ctx: Context, nets: set[str], windows: list[repair.Window], work: Path,
                          record: dict[str, Any], record_name: str, over_key: str = "nets_near_cells") -> set[str]:
    """Changed cells (already in `ctx.netlist` and `ctx.layout`) into the routed layout with every
    other wire kept (closer.physical.repair.incremental): the fill around them and the router's cell
    view again, the routed DEF with the new components and connections, then qrouter on `nets` and
    on the nets with li1/met1 wiring within CLEARANCE_UM of a `windows` box; the spliced DEF is
    finalized as the flow's final DEF. Returns the nets rerouted; `record` goes to
    `work/record_name` with the nets, the files and the reroute's wall and CPU seconds."""
    placed_before = ctx.paths.placed_def.read_text()
    work.mkdir(parents=True, exist_ok=True)
    final_before = Path(shutil.copyfile(ctx.paths.final_def, work / "final_before.def"))
    for step_cls in (Fill, WriteDef, PinAccess):
        step_cls().start(ctx)
    r = ctx.route_result
    over = repair.nets_at(ctx.paths.final_def, ctx.pdk.tech_lef, ctx.paths.router_lef, windows,
                          incremental.CLEARANCE_UM)
    base = work / "with_new_cells.def"
    base.write_text(incremental.with_new_cells(r.routed_def.read_text(), ctx.paths.placed_def.read_text(), nets))
    chosen = nets | over
    t0, cpu0 = time.monotonic(), procs.tree_cpu_s()
    # only the changed cells' nets move (HOLD): qrouter's rip-up of kept nets cascaded on PicoRV32's
    # first diode round (released: 37 nets left unrouted; held: 0 by hand, 1 in the bench at its
    # time limit, docs/physical.md). Stage 1 follows the full route's guides where it had them:
    # on the same round 63 of the 644 nets failed stage 1 instead of 231
    routed_def, rc, failed = route.reroute(ctx.pdk.tech_lef, ctx.paths.router_lef, base, r.rc_file, ctx.layout,
                                           work, ctx.config.route, chosen, [], r.patch, kept_nets=route.HOLD,
                                           guides=r.guides)
    (work / record_name).write_text(json.dumps(
        {**record, over_key: sorted(over - nets), "base": str(r.routed_def), "routed": str(routed_def),
         "unrouted": failed, "wall_s": round(time.monotonic() - t0, 2),
         "cpu_s": round(procs.tree_cpu_s() - cpu0, 2)}, indent=1))
    r.routed_def, r.rc_file = routed_def, rc
    r.failed = sorted(set(n for n in r.failed if n not in chosen) | set(failed))
    r.failed_nets = len(r.failed)
    route.finalize_def(routed_def, ctx.layout, ctx.netlist, ctx.macros, ctx.access, ctx.paths.final_def,
                       ctx.pin_access, r.failed)
    moved = incremental.moved_components(placed_before, ctx.paths.placed_def.read_text(), ctx.macros)
    ctx.changed_windows = moved + wire_windows((final_before, ctx.paths.final_def), chosen)
    return chosen
