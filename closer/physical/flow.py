"""The back half of the flow: gate netlist -> placed, routed, signed-off GDS with metrics.

    run_physical(netlist_v, top, sdc, out_dir, config) -> PhysicalResult

The steps run in the order of `STEPS` (each a small class with declared inputs/outputs;
`Step.start` is the one place that times a step and records it), defined by stage in
closer.physical.steps: ReadNetlist, Unbuffer (synthesis's buffer trees out, large designs),
Floorplan (die, rows, tap cells), Place (IO pins, global placement, legalization), FanoutTree
(buffer trees by placement, where Unbuffer ran), ClockTree, HoldRepair (delay cells), Fill,
WriteDef (with the power grid), PinAccess (`steps.build`); Route (+ finalize), Replace
(`steps.routing`); RoutedSetupRepair (`steps.timing`); Gds (+ same-net fills), Drc (Closer's
deck), Lvs, Repair, Cleanup, ReplaceAfterRepair; Antenna (LEF ratios; diode repair,
`steps.antenna_repair`), Sta, SetupRepair (gate sizing on the SPEF, then only what it changed
rerouted and signed off again), SignoffDrc (the official deck, once, on the final GDS: the drc
gate), Metrics (here).

Hard macros (`PhysicalConfig.macros`, closer.physical.floorplan.macros): placed by Floorplan,
their pins reached on the routing grid by PinAccess (closer.physical.route.blockpins), drawn as
black boxes of LEF pins by Gds, their Liberty read by every STA.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from closer.errors import InputError
from closer.pdk import pdk
from closer.physical import deadline
from closer.physical.io.lef import read_macros, read_tech
from closer.physical.route import route
from closer.physical.signoff import signoff_drc
from closer.physical.steps.antenna_repair import Antenna
from closer.physical.steps.base import Context, PhysicalConfig, PhysicalPaths, Step
from closer.physical.steps.build import (ClockTree, FanoutTree, Fill, Floorplan, HoldRepair, PinAccess, Place, ReadNetlist,
                                         Unbuffer, WriteDef)
from closer.physical.steps.checks import Cleanup, Drc, Gds, Lvs, Repair, SignoffDrc
from closer.physical.steps.routing import Replace, ReplaceAfterRepair, Route
from closer.physical.steps.timing import RoutedSetupRepair, SetupRepair, Sta
from closer.sdc import write_canonical
from closer.toolchain import tool_versions



class Metrics(Step):
    id = "Metrics"
    inputs = ("netlist", "layout")

    def run(self, ctx):
        area = sum(ctx.macros[i.master].width * ctx.macros[i.master].height for i in ctx.netlist.instances.values())
        core = ctx.layout.core_area_um2
        m = {"finish__design__instance__area": round(area, 3),
             "finish__design__instance__count": len(ctx.netlist.instances),
             "finish__design__instance__utilization": round(area / core, 4)}
        unrouted = ctx.route_result.failed_nets if ctx.route_result else None
        drc_total = ctx.drc_result.total if ctx.drc_result else None
        official_total = ctx.signoff_drc_result.total if ctx.signoff_drc_result else None
        lvs_ok = ctx.lvs_result.ok if ctx.lvs_result else None
        antenna_nets = len(ctx.antenna_result.violating_nets) if ctx.antenna_result else None
        m["closer__gate__antenna__pass"] = antenna_nets == 0
        m["closer__gate__route__pass"] = unrouted == 0 and drc_total == 0
        m["closer__gate__drc__pass"] = official_total == 0
        m["closer__gate__lvs__pass"] = bool(lvs_ok)
        m["closer__gate__signoff__pass"] = (m["closer__gate__route__pass"] and m["closer__gate__drc__pass"]
                                            and bool(lvs_ok) and m["closer__gate__antenna__pass"])
        m[deadline.CUT_KEY] = bool(ctx.metrics.get(deadline.CUT_KEY))
        return m


STEPS: tuple[type[Step], ...] = (ReadNetlist, Unbuffer, Floorplan, Place, FanoutTree, ClockTree, HoldRepair, Fill, WriteDef, PinAccess,
                                 Route, Replace, RoutedSetupRepair, Gds, Drc, Lvs, Repair, Cleanup, ReplaceAfterRepair,
                                 Antenna, Sta,
                                 SetupRepair, SignoffDrc, Metrics)


@dataclass
class PhysicalResult:
    metrics: dict[str, Any]
    gds: Path
    def_: Path
    spef: Path | None
    metadata: Path
    steps: list[dict]
    netlist: Path | None = None  # the netlist of the layout (the input with the clock buffers)
    context: Context | None = field(default=None, repr=False)  # the run's layout and netlist, for checks on them

    @property
    def signoff_clean(self) -> bool:
        return bool(self.metrics.get("closer__gate__signoff__pass"))


def provenance(ctx: Context) -> dict[str, Any]:
    from importlib.metadata import version

    return {"tools": {"router": route.qrouter_version(), "klayout": f"klayout {version('klayout')} (PyPI)",
                      "sta": "OpenSTA 2.0.17 (Debian opensta)", "placer": "closer.physical.place.place (quadratic + bisection)",
                      "yosys": "pyosys launcher (.venv/bin/yosys)"},
            "pdk": {"root": str(ctx.pdk.root), "library": "sky130_fd_sc_hd", "signoff_corner": ctx.config.signoff_corner,
                    "corners": list(ctx.config.corners)},
            "design": {"top": ctx.top, "netlist": str(ctx.netlist_v),
                       "netlist_sha256": hashlib.sha256(ctx.netlist_v.read_bytes()).hexdigest(),
                       "sdc": str(ctx.sdc) if ctx.sdc else None},
            "host": platform.node(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "drc_deck": "closer.physical.signoff.drc_deck (sky130 periphery rule values, BEOL li1..met5)",
            "signoff_drc_deck": {"path": str(ctx.pdk.signoff_drc_deck), "sha256": _sha256(ctx.pdk.signoff_drc_deck),
                                 "klayout": tool_versions().get("klayout"), "options": signoff_drc.DECK_OPTIONS}}


def _sha256(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def run_physical(netlist_v: Path, top: str, sdc: Path | None, out_dir: Path,
                 config: PhysicalConfig | None = None, stop_after: str | None = None) -> PhysicalResult:
    config = config or PhysicalConfig()
    netlist_v = Path(netlist_v)
    if not netlist_v.is_file():
        raise InputError(f"netlist {netlist_v} does not exist")
    if sdc is not None and not Path(sdc).is_file():
        raise InputError(f"SDC {sdc} does not exist")
    if sdc is None and not (config.clock_port and config.clock_period_ns):
        raise InputError("give an SDC or config.clock_port + config.clock_period_ns")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = PhysicalPaths(out_dir, top)
    if sdc is not None:  # read as data before any step runs: a refused SDC fails here, not after routing
        write_canonical(Path(sdc), paths.canonical_sdc, config.sdc_policy)
        sdc = paths.canonical_sdc
    p = pdk()
    ctx = Context(netlist_v, top, Path(sdc) if sdc else None, paths, config, p,
                  read_tech(p.tech_lef), read_macros(p.cell_lef))
    for step_cls in STEPS:
        step_cls().start(ctx)
        if stop_after == step_cls.id:
            break
    meta = _merge_metadata(ctx)
    return PhysicalResult(ctx.metrics, ctx.paths.gds, ctx.paths.final_def,
                          ctx.paths.spef if ctx.paths.spef.is_file() else None, meta, ctx.steps, ctx.netlist_v, ctx)


def _merge_metadata(ctx: Context) -> Path:
    """Merge into metadata.json (other flow steps may have written their own keys there)."""
    path = ctx.paths.metadata
    data = json.loads(path.read_text()) if path.is_file() else {}
    data.setdefault("metrics", {}).update(ctx.metrics)
    data.setdefault("provenance", {})["physical"] = provenance(ctx)
    data["physical_steps"] = ctx.steps
    path.write_text(json.dumps(data, indent=1, default=str))
    return path
