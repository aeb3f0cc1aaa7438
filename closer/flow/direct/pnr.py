"""Placement, routing and signoff (closer.physical.run_physical) as the flow's `pnr` node.

The node takes the netlist the `sta` node passes on (`inputs/<top>.vg`) and the design's SDC
(the flow's canonical one; `run_physical` reads it through closer.sdc again), runs `run_physical` in the node directory (`phys/`), and writes `reports/pnr.json`: the physical
metrics (ORFS keys `detailedroute__*`, `finish__*` and Closer's `closer__*`), plus the signoff
counts under the keys the reward gates read (closer/metrics.py). A DRC-dirty or partly unrouted
layout is a result, not a failure: the node fails only when `run_physical` raises.

A config's macro placements (design.toml `macro_placements`) are node settings (`macro_placements`,
one `(instance, x_um, y_um, orient, halo_um)` tuple each), so changing one reruns the node; they
reach `run_physical` as `PhysicalConfig.macros` (closer.physical.floorplan.macros.MacroPlacement).
Before `run_physical` the node finds each placed instance in the netlist among the instances of
the config's `macros` (`/` and `.` both separate hierarchy, closer.flow.macros.resolve_instance)
and hands over the netlist's name; a placement that names none fails the node (the message lists
the netlist's macro instances).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from closer import metrics as closer_keys

PNR_JSON = "reports/pnr.json"
PHYS_DIR = "phys"


def physical_revision() -> str:
    """SHA-256 (16 hex) over closer.physical's code and data and this module: part of the node's
    settings, so a change to the physical flow reruns `pnr` even when its netlist is unchanged."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[2] / "physical"
    files = [p for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    for path in [*files, Path(__file__).resolve()]:
        digest.update(str(path.relative_to(root.parent)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class PnrSettings:
    """The node's settings: the design's [physical] table, its SDC exceptions and the config's
    macros (closer.designs.model)."""
    core_utilization: float | None = None
    aspect_ratio: float | None = None
    router_passes: int | None = None
    repair_rounds: int | None = None
    timing_repair_rounds: int | None = None
    place_seed: int | None = None
    corners: tuple[str, ...] | None = None
    sdc_exceptions: tuple[str, ...] = ()
    macros: tuple[str, ...] = ()
    # (instance, x_um, y_um, orient, halo_um), from the core's lower-left corner
    macro_placements: tuple[tuple[str, float, float, str, float], ...] = ()

    @classmethod
    def of(cls, physical, sdc_exceptions=(), macros=(), placements=()) -> "PnrSettings":
        """From a design's Physical table, its SDC exceptions and a config's macros and
        MacroPlacementConfigs."""
        return cls(core_utilization=physical.core_utilization, aspect_ratio=physical.aspect_ratio,
                   router_passes=physical.router_passes, repair_rounds=physical.repair_rounds,
                   timing_repair_rounds=physical.timing_repair_rounds, place_seed=physical.place_seed,
                   corners=tuple(physical.corners) if physical.corners is not None else None,
                   sdc_exceptions=tuple(str(e) for e in sdc_exceptions), macros=tuple(macros),
                   macro_placements=tuple((p.instance, p.x_um, p.y_um, str(p.orient), p.halo_um)
                                          for p in placements))

    def placements(self):
        """The placements as closer.physical's MacroPlacement, in design.toml order."""
        from closer.physical.floorplan.macros import MacroPlacement

        return tuple(MacroPlacement(instance, float(x), float(y), orient, float(halo))
                     for instance, x, y, orient, halo in self.macro_placements)


def physical_config(settings: PnrSettings, macros=()):
    """The PhysicalConfig of the node's settings; `macros`: the placements with netlist names."""
    from closer.physical import PhysicalConfig
    from closer.physical.floorplan.floorplan import FloorplanConfig
    from closer.physical.place.place import PlaceConfig
    from closer.physical.repair.repair import RepairConfig
    from closer.physical.repair.sizing import SizingConfig
    from closer.physical.route.route import RouteConfig
    from closer.sdc import SdcPolicy

    util, aspect = settings.core_utilization, settings.aspect_ratio
    passes, rounds = settings.router_passes, settings.repair_rounds
    floorplan = FloorplanConfig(**({"density": util} if util is not None else {}),
                                **({"aspect": aspect} if aspect is not None else {}))
    route = RouteConfig(**({"max_passes": passes} if passes is not None else {}))
    repair = RepairConfig() if rounds is None else RepairConfig(rounds=rounds, item_rounds=3 * rounds)
    timing_rounds = settings.timing_repair_rounds
    # 0 turns the timing repair off, the rounds on the routed layout before sign-off included
    sizing = SizingConfig() if timing_rounds is None else SizingConfig(
        max_rounds=timing_rounds, routed_rounds=min(timing_rounds, SizingConfig.routed_rounds))
    policy = SdcPolicy(allow=frozenset(settings.sdc_exceptions))
    place = PlaceConfig(seed=settings.place_seed or 0)
    extra = {"corners": tuple(settings.corners)} if settings.corners else {}
    return PhysicalConfig(floorplan=floorplan, place=place, route=route, repair=repair, sizing=sizing,
                          sdc_policy=policy, macros=tuple(macros), **extra)


def placed_macros(settings: PnrSettings, netlist: Path):
    """The placements with each instance as the netlist names it (closer.flow.macros.
    resolve_instance: `/` and `.` both separate hierarchy); ValueError when a placement names
    no instance of the config's macros."""
    from closer.flow.macros import netlist_instances, resolve_instance

    placements = settings.placements()
    if not placements:
        return ()
    found = netlist_instances(netlist.read_text(), set(settings.macros))
    out = []
    for placement in placements:
        name = resolve_instance(placement.instance, found)
        if name is None:
            raise ValueError(f"macro_placements: no instance {placement.instance!r} of the config's "
                             f"macros in the netlist; its macro instances: "
                             f"{', '.join(sorted(found)) or 'none'}")
        out.append(replace(placement, instance=name))
    return tuple(out)


def run_pnr(node: Path, top: str, sdc: Path, settings: PnrSettings) -> str:
    """run_physical on the node's `inputs/<top>.vg` in `<node>/phys`; writes `reports/pnr.json`
    and the layout's netlist, GDS and DEF to `outputs/`. Returns the one-line summary. Raises
    whatever run_physical or the macro placements raise."""
    from closer.physical import run_physical

    netlist = node / "inputs" / f"{top}.vg"
    macros = placed_macros(settings, netlist)
    result = run_physical(netlist.resolve(), top, sdc.resolve(), (node / PHYS_DIR).resolve(),
                          physical_config(settings, macros))
    (node / PNR_JSON).parent.mkdir(parents=True, exist_ok=True)
    (node / PNR_JSON).write_text(json.dumps(signoff_metrics(result.metrics), indent=1,
                                            sort_keys=True, default=str) + "\n")
    # the layout's netlist: the input with the clock tree's buffers (closer.physical.cts.cts)
    shutil.copyfile(result.netlist or netlist, node / "outputs" / f"{top}.vg")
    shutil.copyfile(result.gds, node / "outputs" / f"{top}.gds")
    shutil.copyfile(result.def_, node / "outputs" / f"{top}.def")
    m = result.metrics
    return (f"pnr: unrouted {m.get('closer__route__unrouted_nets')}, DRC "
            f"{m.get('detailedroute__route__drc_errors')} (official deck "
            f"{m.get('closer__signoff__official_drc__errors')}), antenna nets "
            f"{m.get('detailedroute__antenna__violating__nets')}, LVS opens/shorts "
            f"{m.get('closer__signoff__lvs__opens')}/{m.get('closer__signoff__lvs__shorts')}")


def signoff_metrics(physical: dict) -> dict:
    """run_physical's metrics plus the two signoff counts the reward gates read.

    DRC errors = the official deck's total (sky130A_mr.drc); Closer's own deck, the repair loop's
    checker, is `detailedroute__route__drc_errors` (the route gate).

    LVS errors = opens + shorts; an LVS that is not clean with neither counted still counts 1, so
    a failed comparison never reads as clean.
    """
    out = dict(physical)
    drc_total = physical.get("closer__signoff__official_drc__errors")  # the official deck's
    if drc_total is not None:
        out[closer_keys.SIGNOFF_DRC_ERRORS] = int(drc_total)
    clean = physical.get("closer__signoff__lvs__clean")
    if clean is not None:
        mismatches = (int(physical.get("closer__signoff__lvs__opens") or 0)
                      + int(physical.get("closer__signoff__lvs__shorts") or 0))
        out[closer_keys.SIGNOFF_LVS_ERRORS] = 0 if clean else max(1, mismatches)
    return out
