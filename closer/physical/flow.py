"""The back half of the flow: gate netlist -> placed, routed, signed-off GDS with metrics.

    run_physical(netlist_v, top, sdc, out_dir, config) -> PhysicalResult

Steps (each a small class with declared inputs/outputs; `Step.start` is the one place that
times a step and records it): ReadNetlist, Unbuffer (synthesis's buffer trees out, large designs),
Floorplan (die, rows, tap cells), Place (IO pins, global placement, legalization), FanoutTree
(buffer trees by placement, where Unbuffer ran), ClockTree, HoldRepair (delay cells), Fill, WriteDef (with the
power grid), PinAccess, Route (+ finalize), Gds (+ same-net fills), Drc (Closer's deck), Lvs, Repair,
Cleanup, Antenna (LEF ratios; diode repair), Sta, SetupRepair (gate sizing on the SPEF, then only
what it changed rerouted and signed off again), SignoffDrc (the official deck, once, on the final
GDS: the drc gate), Metrics.

Hard macros (`PhysicalConfig.macros`, closer.physical.floorplan.macros): placed by Floorplan,
their pins reached on the routing grid by PinAccess (closer.physical.route.blockpins), drawn as
black boxes of LEF pins by Gds, their Liberty read by every STA.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import platform
import resource
import shutil
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from closer import procs
from closer.errors import InputError
from closer.pdk import ALL_CORNERS, CORNERS, MacroAbstract, PdkPaths, pdk
from closer.physical.cts import cts
from closer.physical.io import defio, netlist as netlist_mod
from closer.physical.place import congestion, inflation, place
from closer.physical.repair import buffering, cleanup, diodes, fanout, hold, incremental, repair, sizing
from closer.physical.route import bands, blockpins, groute, pinaccess, route
from closer.physical.signoff import antenna, drc, gds, lvs, parasitics, signoff_drc, sta
from closer.physical.floorplan.floorplan import FloorplanConfig, Layout, insert_fill, make_floorplan
from closer.physical.floorplan.macros import MacroPlacement
from closer.physical.io.lef import Macro, Tech, read_macros, read_tech
from closer.physical.io.netlist import Netlist
from closer.sdc import SdcPolicy, write_canonical
from closer.toolchain import tool_versions


@dataclass
class PhysicalConfig:
    floorplan: FloorplanConfig = field(default_factory=FloorplanConfig)
    place: place.PlaceConfig = field(default_factory=place.PlaceConfig)
    route: route.RouteConfig = field(default_factory=route.RouteConfig)
    groute: groute.GrouteConfig = field(default_factory=groute.GrouteConfig)
    bands: bands.BandConfig = field(default_factory=bands.BandConfig)
    repair: repair.RepairConfig = field(default_factory=repair.RepairConfig)
    cts: cts.CtsConfig = field(default_factory=cts.CtsConfig)
    fanout: fanout.FanoutConfig = field(default_factory=fanout.FanoutConfig)
    sizing: sizing.SizingConfig = field(default_factory=sizing.SizingConfig)
    hold: hold.HoldConfig = field(default_factory=hold.HoldConfig)
    antenna: antenna.AntennaConfig = field(default_factory=antenna.AntennaConfig)
    pin_access: str = "hybrid"   # "lef" | "hybrid" | "pads" (see pinaccess)
    # from large_pin_access_min_nets nets (None: never) every pin is a met1 pad on its access
    # point: qrouter then holds the point for the pin's net, so no other net's met1 wire walls
    # the pin in (PicoRV32, stage 1 with the same settings: 205 failed nets with hybrid, 52 with
    # pads; docs/physical.md "Pins held for their nets"); the suite's designs keep the mode their
    # sign-off was measured with
    large_pin_access: str | None = "pads"
    large_pin_access_min_nets: int = 3000
    corners: tuple[str, ...] = CORNERS
    signoff_corner: str = "tt_025C_1v80"  # the corner of the finish__* timing and power keys
    clock_port: str | None = None         # used when no SDC is given
    clock_period_ns: float | None = None
    sdc_policy: SdcPolicy = field(default_factory=SdcPolicy)  # exceptions the SDC may use
    macros: tuple[MacroPlacement, ...] = ()  # hard macros of the netlist, from the floorplan settings
    # processes a whole-chip KLayout check uses (the DRC's rules by layer, the antenna check's
    # levels; forked: PicoRV32's DRC 44 -> 23 s, antenna 50 -> 28 s wall on 2 cores)
    check_jobs: int = field(default_factory=lambda: min(2, os.cpu_count() or 1))

    def __post_init__(self) -> None:
        for key in ("pin_access", "large_pin_access"):
            mode = getattr(self, key)
            if mode not in ("lef", "hybrid", "pads") and not (key == "large_pin_access" and mode is None):
                raise InputError(f"{key} {mode!r}: expected lef, hybrid or pads")
        if self.check_jobs < 1:
            raise InputError(f"check_jobs {self.check_jobs}: must be >= 1")
        unknown = [c for c in self.corners if c not in ALL_CORNERS]
        if unknown or self.signoff_corner not in self.corners:
            raise InputError(f"corners {self.corners} / signoff_corner {self.signoff_corner}: known {ALL_CORNERS}")

    def pin_access_for(self, nets: int) -> str:
        """The pin-access mode a netlist of `nets` nets is routed with."""
        if self.large_pin_access is not None and nets >= self.large_pin_access_min_nets:
            return self.large_pin_access
        return self.pin_access


class PhysicalPaths:
    """The run directory::

        <out>/constraints.sdc         the canonical SDC (closer.sdc) of the given one
        <out>/netlist.json            Yosys JSON of the input netlist
        <out>/placed.def              floorplan + placement + pins + power grid
        <out>/congestion.json         the placement's RUDY congestion estimate per GCell
        <out>/inflation.json          the routability rounds (closer.physical.place.inflation)
        <out>/router_cells.lef        qrouter's view of the cells (pin access)
        <out>/route/                  qrouter scripts, logs, <top>_route.def, <top>.rc; from
                                      RouteConfig.guides_min_nets nets groute.json (the global
                                      route: capacities, usage) and guides.txt (qrouter's guides)
        <out>/route/unrouted.json     the nets routing left and where qrouter's searches for them
                                      failed (schema: closer/schemas/physical-unrouted.schema.json)
        <out>/route/on/               the same for the second routing variant, when it ran
        <out>/replace/                the routability fallback's own run up to routing (step
                                      Replace), when it ran; replace/first/ the first layout's
                                      files when the fallback's layout was kept
        <out>/replace_signoff/        the same through repair (step ReplaceAfterRepair)
        <out>/final.def               routed DEF + pin-access vias
        <out>/<top>.gds               the signed-off layout
        <out>/<top>.spef              parasitics (from qrouter's RC trees)
        <out>/drc/ lvs/ sta/          reports (drc/: Closer's deck, the repair loop's checker)
        <out>/signoff_drc/            the official deck's (sky130A_mr.drc) report and per-rule counts
        <out>/antenna/antenna.json    the antenna check (LEF ratios per net and layer)
        <out>/steps.json              per-step wall time and metrics
        <out>/metadata.json           metrics (ORFS names + closer__*) and provenance
    """

    def __init__(self, root: Path, top: str) -> None:
        self.root, self.top = root, top

    canonical_sdc = property(lambda s: s.root / "constraints.sdc")
    netlist_json = property(lambda s: s.root / "netlist.json")
    placed_def = property(lambda s: s.root / "placed.def")
    router_lef = property(lambda s: s.root / "router_cells.lef")
    route_dir = property(lambda s: s.root / "route")
    final_def = property(lambda s: s.root / "final.def")
    gds = property(lambda s: s.root / f"{s.top}.gds")
    spef = property(lambda s: s.root / f"{s.top}.spef")
    drc_dir = property(lambda s: s.root / "drc")
    signoff_drc_dir = property(lambda s: s.root / "signoff_drc")
    antenna_dir = property(lambda s: s.root / "antenna")
    lvs_dir = property(lambda s: s.root / "lvs")
    sta_dir = property(lambda s: s.root / "sta")
    steps_json = property(lambda s: s.root / "steps.json")
    metadata = property(lambda s: s.root / "metadata.json")
    access_cache = property(lambda s: s.root / "pin_access.json")
    congestion_json = property(lambda s: s.root / "congestion.json")
    inflation_json = property(lambda s: s.root / "inflation.json")
    groute_json = property(lambda s: s.route_dir / "groute.json")
    guides_txt = property(lambda s: s.route_dir / "guides.txt")
    unrouted_json = property(lambda s: s.route_dir / "unrouted.json")  # the nets left, where they failed


@dataclass
class Context:
    netlist_v: Path
    top: str
    sdc: Path | None
    paths: PhysicalPaths
    config: PhysicalConfig
    pdk: PdkPaths
    tech: Tech
    macros: dict[str, Macro]
    blocks: dict[str, MacroAbstract] = field(default_factory=dict)  # hard macros the netlist uses (master -> views)
    input_netlist_v: Path | None = None  # the netlist the run was given (netlist_v follows the edits)
    netlist: Netlist | None = None
    layout: Layout | None = None
    access: dict | None = None
    route_result: route.RouteResult | None = None
    drc_result: drc.DrcResult | None = None
    lvs_result: lvs.LvsResult | None = None
    signoff_drc_result: signoff_drc.SignoffDrcResult | None = None
    antenna_result: antenna.AntennaResult | None = None
    # where an incremental reroute changed the layout since drc_result was checked (µm boxes: the
    # rerouted nets' wiring before and after, the components that moved); the next Drc step checks
    # only there on designs of RepairConfig.windowed_min_instances and more
    changed_windows: list[drc.BoxUm] | None = None
    # the GDS carries Cleanup's fills, which a GDS written again from the DEF lacks everywhere:
    # drc_result is then no base for a windowed check
    gds_cleaned: bool = False
    diode_sites: set[tuple[str, str]] = field(default_factory=set)  # (net, gate) pairs given a diode so far
    diode_rounds: int = 0  # antenna repair rounds so far, over every Antenna step (their records' numbers)
    diode_rounds_undone: list[int] = field(default_factory=list)  # of those, the rounds undone (worse layouts)
    sta_results: list[sta.StaResult] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    steps: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.input_netlist_v is None:
            self.input_netlist_v = self.netlist_v

    @property
    def pin_access(self) -> str:
        """The pin-access mode this netlist is routed with (PhysicalConfig.pin_access_for)."""
        return self.config.pin_access_for(len(self.netlist.nets))

    def liberties(self, corner: str) -> list[Path]:
        """The standard cells' Liberty at `corner`, then each hard macro's (its only file, at
        every corner: the PDK's SRAMs have TT timing only)."""
        return [self.pdk.liberty(corner), *(b.liberty_for(corner) for b in self.blocks.values())]

    def black_boxes(self) -> dict[str, tuple[Path, Macro]]:
        """The hard macros, drawn from their LEF (the PDK has no GDS of them)."""
        return {m: (b.lef, self.macros[m]) for m, b in self.blocks.items()}


class Step(ABC):
    id: ClassVar[str]
    inputs: ClassVar[tuple[str, ...]] = ()
    outputs: ClassVar[tuple[str, ...]] = ()

    def start(self, ctx: Context) -> None:
        """Check inputs, run, record wall time and metrics (subclasses write `run` only)."""
        for name in self.inputs:
            if getattr(ctx, name) is None:
                raise InputError(f"step {self.id}: input {name} is missing")
        t0, cpu0 = time.monotonic(), procs.tree_cpu_s()
        metrics = self.run(ctx) or {}
        wall, cpu = time.monotonic() - t0, procs.tree_cpu_s() - cpu0
        ctx.metrics.update(metrics)
        # high-water marks after the step: this Python process (placer, KLayout checks) and the
        # largest external tool run so far (qrouter, OpenSTA, Yosys)
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        tools = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        # cpu_s: this process and the tools it waited for, nested steps (an antenna round's) included
        ctx.steps.append({"step": self.id, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "python_peak_rss_mb": round(own, 1),
                          "tools_peak_rss_mb": round(tools, 1), "metrics": metrics})
        ctx.paths.steps_json.write_text(json.dumps(ctx.steps, indent=1))

    @abstractmethod
    def run(self, ctx: Context) -> dict[str, Any]: ...


class ReadNetlist(Step):
    id = "ReadNetlist"
    outputs = ("netlist",)

    def run(self, ctx):
        lib = ctx.pdk.liberty(ctx.config.signoff_corner)
        available = {m: a for m in ctx.pdk.macro_names() if (a := ctx.pdk.macro(m)) is not None}
        netlist_mod.yosys_json(ctx.netlist_v, ctx.top, lib, ctx.paths.netlist_json, ctx.paths.root / "yosys_json.log",
                               tuple(a.liberty_for(ctx.config.signoff_corner) for a in available.values()))
        ctx.netlist = netlist_mod.read_netlist(ctx.paths.netlist_json, ctx.top)
        ctx.blocks = {m: available[m] for m in sorted(ctx.netlist.masters()) if m in available}
        if ctx.blocks:
            ctx.macros = {**ctx.macros, **{m: read_macros(v.lef)[m] for m, v in ctx.blocks.items()}}
        return {"closer__netlist__instances": len(ctx.netlist.instances), "closer__netlist__nets": len(ctx.netlist.nets),
                "closer__macros__count": sum(1 for i in ctx.netlist.instances.values() if i.master in ctx.blocks),
                **({"closer__macros__gds": "none in the PDK: LEF pins only (black box)",
                    # each corner -> the corner the macro's Liberty was characterized at
                    "closer__macros__liberty": "; ".join(f"{m} {c}: {b.liberty_corner_for(c)}" for m, b in ctx.blocks.items()
                                                         for c in ctx.config.corners)} if ctx.blocks else {})}


def _clock_nets(ctx: Context) -> list[str]:
    """The clock ports' nets, in the SDC's order."""
    ports = cts.clock_ports(ctx.sdc.read_text()) if ctx.sdc else [ctx.config.clock_port]
    return list(dict.fromkeys(p for p in ports if p))


class Unbuffer(Step):
    """Synthesis's buffer trees out before placement (closer.physical.repair.fanout), on designs
    of FanoutConfig.min_instances instances and more; the netlist STA reads becomes
    `<top>_unbuffered.v`. FanoutTree builds trees by placement instead."""

    id = "Unbuffer"
    inputs = ("netlist",)

    def run(self, ctx):
        cfg = ctx.config.fanout
        if not cfg.applies(ctx.netlist):
            return {"closer__fanout__removed": 0}
        removed = fanout.unbuffer(ctx.netlist, set(_clock_nets(ctx)))
        if removed:
            out = ctx.paths.root / f"{ctx.top}_unbuffered.v"
            text = cts.rewrite_instances(ctx.netlist_v.read_text(), fanout.removed_moves(ctx.netlist, removed),
                                         {ctx.netlist.original.get(r.name, r.name) for r in removed}, ctx.netlist_v)
            out.with_suffix(".tmp.v").write_text(text)
            out.with_suffix(".tmp.v").replace(out)
            ctx.netlist_v = out
        return {"closer__fanout__removed": len(removed)}


class Floorplan(Step):
    id = "Floorplan"
    inputs = ("netlist",)
    outputs = ("layout",)

    def run(self, ctx):
        ctx.layout = make_floorplan(ctx.netlist, ctx.macros, ctx.config.floorplan, ctx.config.macros)
        lay = ctx.layout
        return {"finish__design__die__area": round(lay.die_area_um2, 3),
                "finish__design__core__area": round(lay.core_area_um2, 3),
                "closer__floorplan__rows": lay.rows, "closer__floorplan__tap_cells": len(lay.physical)}


class Place(Step):
    id = "Place"
    inputs = ("netlist", "layout")

    def run(self, ctx):
        cfg = ctx.config.place.for_instances(len(ctx.netlist.instances))
        place.place(ctx.netlist, ctx.macros, ctx.layout, cfg)
        estimate, rounds = inflation.inflate(ctx.netlist, ctx.macros, ctx.layout, ctx.tech, ctx.config.route.layers, cfg)
        congestion.write_json(estimate, ctx.paths.congestion_json)
        ctx.paths.inflation_json.write_text(json.dumps(inflation.rounds_json(rounds), indent=1) + "\n")
        return {"closer__place__hpwl": round(place.hpwl(ctx.netlist, ctx.layout), 1),
                "closer__place__io_pins": len(ctx.layout.io_pins), **estimate.metrics(),
                **inflation.metrics(rounds, cfg.congestion_target)}


class FanoutTree(Step):
    """Buffer trees by the placed sinks for every net (clock nets aside) with more than
    FanoutConfig.max_sinks sinks, where Unbuffer ran; the netlist becomes `<top>_fanout.v`."""

    id = "FanoutTree"
    inputs = ("netlist", "layout")

    def run(self, ctx):
        cfg = ctx.config.fanout
        if not ctx.metrics.get("closer__fanout__removed"):
            return {"closer__fanout__buffers": 0}
        buffers = fanout.build_trees(ctx.netlist, ctx.layout, ctx.macros, cfg, set(_clock_nets(ctx)))
        if buffers:
            out = ctx.paths.root / f"{ctx.top}_fanout.v"
            cts.write_verilog(ctx.netlist_v, out.with_suffix(".tmp.v"), ctx.netlist, cts.ClockTree("", 0, buffers))
            out.with_suffix(".tmp.v").replace(out)
            ctx.netlist_v = out
        return {"closer__fanout__buffers": len(buffers), "closer__fanout__levels": max((b.level for b in buffers), default=0),
                "closer__fanout__nets": len({b.input_net for b in buffers if b.level == 1})}


class ClockTree(Step):
    """Clock buffers by placement clusters (closer.physical.cts.cts); the netlist STA reads becomes
    `<top>_cts.v` when a tree was built."""

    id = "ClockTree"
    inputs = ("netlist", "layout")

    def run(self, ctx):
        trees = [cts.build_tree(ctx.netlist, ctx.layout, ctx.macros, port, ctx.config.cts)
                 for port in _clock_nets(ctx) if port in ctx.netlist.nets]
        buffers = [b for t in trees for b in t.buffers]
        if buffers:
            out = ctx.paths.root / f"{ctx.top}_cts.v"
            for tree in trees:
                source, ctx.netlist_v = ctx.netlist_v, out
                cts.write_verilog(source, out.with_suffix(".tmp.v"), ctx.netlist, tree)
                out.with_suffix(".tmp.v").replace(out)
        return {"closer__cts__clock_nets": len(trees), "closer__cts__sinks": sum(t.sinks for t in trees),
                "closer__cts__buffers": len(buffers), "closer__cts__levels": max((t.levels for t in trees), default=0),
                "closer__cts__max_fanout": max((len(b.sinks) for b in buffers), default=0)}


class HoldRepair(Step):
    """Delay cells in front of the flop pins that miss hold, after the clock tree, at each corner
    in turn (closer.physical.repair.hold; clocks propagated through the built tree, no wires yet:
    the final STA with parasitics is the sign-off). Counts and hold WNS/TNS before and after."""

    id = "HoldRepair"
    inputs = ("netlist", "layout")

    def run(self, ctx):
        out: dict[str, Any] = {"cts__design__instance__count__hold_buffer": 0}
        if not ctx.config.hold.enabled:
            return out
        propagated = bool(ctx.metrics.get("closer__cts__buffers"))
        for corner in ctx.config.corners:
            r = hold.repair_hold(corner, ctx.liberties(corner), ctx.netlist_v, ctx.top, _timing_sdc(ctx), propagated,
                                 ctx.netlist, ctx.config.hold, ctx.paths.sta_dir / "hold")
            key = f"closer__hold_repair__{corner}"
            out.update({f"{key}__cells": r.cells, f"{key}__pins": len(r.chains), f"{key}__ws_before": r.ws_before_ns,
                        f"{key}__ws_after": r.ws_after_ns, f"{key}__tns_before": r.tns_before_ns,
                        f"{key}__tns_after": r.tns_after_ns})
            if not r.chains:
                continue
            out["cts__design__instance__count__hold_buffer"] += r.cells
            inserted = hold.insert_chains(ctx.netlist, ctx.layout, ctx.macros, r.chains)
            target = ctx.paths.root / f"{ctx.top}_hold.v"
            cts.write_verilog(ctx.netlist_v, target.with_suffix(".tmp.v"), ctx.netlist, inserted)
            target.with_suffix(".tmp.v").replace(target)
            ctx.netlist_v = target
        return out


class Fill(Step):
    id = "Fill"
    inputs = ("layout",)

    def run(self, ctx):
        before = len(ctx.layout.physical)
        insert_fill(ctx.layout, ctx.macros)
        return {"closer__fill__cells": len(ctx.layout.physical) - before}


class WriteDef(Step):
    id = "WriteDef"
    inputs = ("netlist", "layout")

    def run(self, ctx):
        defio.write_def(ctx.layout, ctx.netlist, ctx.tech, ctx.paths.placed_def)
        return {}


class PinAccess(Step):
    id = "PinAccess"
    inputs = ("netlist", "layout")
    outputs = ("access",)

    def run(self, ctx):
        masters = ctx.netlist.masters() | {c.master for c in ctx.layout.physical}
        ctx.access = pinaccess.access_table(ctx.macros, masters, ctx.pdk.gds, ctx.paths.access_cache)
        ctx.layout.pin_reaches = blockpins.reaches(ctx.layout, ctx.netlist, ctx.macros, ctx.tech)
        pinaccess.write_router_lef(ctx.macros, ctx.access, ctx.paths.router_lef, ctx.pin_access,
                                   blockpins.router_pins(ctx.layout, ctx.macros, ctx.layout.pin_reaches))
        pins = [a for t in ctx.access.values() for a in t.values()]
        return {"closer__pin_access__mode": ctx.pin_access, "closer__pin_access__pins": len(pins),
                "closer__pin_access__pads": sum(1 for a in pins if a and a.needs_pad),
                "closer__pin_access__none": sum(1 for a in pins if a is None)}


class Route(Step):
    id = "Route"
    inputs = ("layout", "access")

    def run(self, ctx):
        cfg = ctx.config.route
        guides, planned = None, {}
        if ctx.config.bands.applies(len(ctx.netlist.nets)):
            r, banded = bands.route_bands(ctx.netlist, ctx.layout, ctx.macros, ctx.tech, ctx.pdk.tech_lef,
                                          ctx.paths.router_lef, ctx.paths.placed_def, ctx.paths.route_dir, cfg,
                                          ctx.config.bands)
            return self._finish(ctx, r, None, bands.metrics(banded))
        if cfg.guides_min_nets and len(ctx.netlist.nets) >= cfg.guides_min_nets:
            plan = groute.global_route(ctx.netlist, ctx.layout, ctx.macros, ctx.tech, cfg.layers,
                                       groute.power_blockages(ctx.layout), ctx.config.groute)
            ctx.paths.route_dir.mkdir(parents=True, exist_ok=True)
            groute.write_json(plan, ctx.paths.groute_json)
            guides = groute.write_guides(plan, ctx.paths.guides_txt, cfg.guide_halo)
            planned = plan.metrics()
        r = route.route(ctx.pdk.tech_lef, ctx.paths.router_lef, ctx.paths.placed_def, ctx.layout,
                        ctx.paths.route_dir, cfg, ctx.netlist, guides)
        return self._finish(ctx, r, guides, planned)

    @staticmethod
    def _finish(ctx: Context, r: route.RouteResult, guides: Path | None, planned: dict[str, Any]) -> dict[str, Any]:
        r.guides = guides
        ctx.route_result = r
        ctx.changed_windows = None  # a full route changes everything: the next DRC is whole
        route.finalize_def(r.routed_def, ctx.layout, ctx.netlist, ctx.macros, ctx.access, ctx.paths.final_def,
                           ctx.pin_access, r.failed)
        nets = defio.read_routed_nets(ctx.paths.final_def)
        wl = sum(n.wire_length_dbu for n in nets.values()) / 1000
        points = route.fall_through_points(r.log, r.failed) if r.log and r.log.is_file() else {}
        ctx.paths.unrouted_json.write_text(json.dumps(
            {"unrouted": r.failed, "log": str(r.log) if r.log else None,
             "fell_through_um": {n: list(xy) for n, xy in points.items()}}, indent=1))
        return {"closer__route__unrouted_nets": r.failed_nets, "closer__route__passes": r.passes,
                "closer__route__failed_net_names": r.failed[:50],
                "closer__route__capped_at_pass": r.capped_at, "closer__route__time_limited": r.time_limited,
                "closer__route__qrouter_patch": r.patch,
                "closer__route__variant_patches": [p for p, _ in r.tried],  # flat lists: metrics do not nest
                "closer__route__variant_best_failed_nets": [n for _, n in r.tried],
                "detailedroute__route__wirelength": round(wl, 1),
                "closer__route__wall_s": round(r.wall_s, 2), "closer__route__cpu_s": round(r.cpu_s, 2), "closer__route__peak_rss_mb": round(r.peak_rss_mb, 1),
                "closer__route__guided": guides is not None, **planned}


# what the routability fallback runs again, from the input netlist, on its own placement
REPLACE_STEPS: tuple[str, ...] = ("ReadNetlist", "Unbuffer", "Floorplan", "Place", "FanoutTree", "ClockTree", "HoldRepair", "Fill", "WriteDef",
                                  "PinAccess", "Route")
# the files of a layout up to routing that later steps read from the run directory
_LAYOUT_FILES = ("placed_def", "router_lef", "final_def", "access_cache", "netlist_json")


class Replace(Step):
    """The routability fallback: when both routing variants left nets unrouted, the layout is
    built again from the input netlist up to routing (REPLACE_STEPS, in `replace/`) with
    congestion-driven spreading (PlaceConfig.spread_pin_peaks = `fallback_spread_pin_peaks`: the
    cells in the squares with more pins than the mean, where the unrouted nets crowd together,
    count as larger in a second placement), and that layout is kept when it leaves fewer nets
    unrouted. Measured (docs/physical.md): the weak gcd at place_seed 2 and its `&syn2` netlist
    at 7 left 21 nets unrouted; placed so, they route completely."""

    id = "Replace"
    inputs = ("route_result",)
    key = "closer__replace"
    trial_steps: ClassVar[tuple[str, ...]] = REPLACE_STEPS
    files: ClassVar[tuple[str, ...]] = _LAYOUT_FILES
    folder = "replace"

    def problems(self, ctx: Context) -> int:
        return ctx.route_result.failed_nets

    def wanted(self, ctx: Context) -> bool:
        return True

    def run(self, ctx):
        first = self.problems(ctx)
        place = ctx.config.place.for_instances(len(ctx.netlist.instances))
        alpha = place.fallback_spread_pin_peaks
        out: dict[str, Any] = {f"{self.key}__ran": False}
        if not first or alpha <= place.spread_pin_peaks or not self.wanted(ctx):
            return out
        config = replace(ctx.config, place=replace(ctx.config.place, spread_pin_peaks=alpha))
        trial = Context(ctx.input_netlist_v, ctx.top, ctx.sdc, PhysicalPaths(ctx.paths.root / self.folder, ctx.top),
                        config, ctx.pdk, ctx.tech, ctx.macros)
        trial.paths.root.mkdir(parents=True, exist_ok=True)
        if ctx.paths.access_cache.is_file():  # per master, keyed on the GDS: valid for any layout
            shutil.copyfile(ctx.paths.access_cache, trial.paths.access_cache)
        run_steps(trial, self.trial_steps)
        again = self.problems(trial)
        out.update({f"{self.key}__ran": True, f"{self.key}__spread_pin_peaks": alpha,
                    f"{self.key}__problems_before": first, f"{self.key}__problems_after": again,
                    f"{self.key}__kept": again < first})
        if again < first:
            self.adopt(ctx, trial)
            out.update(trial.metrics)  # the kept layout's place, clock-tree, route (and sign-off) keys
        return out

    def adopt(self, ctx: Context, trial: Context) -> None:
        """The fallback's layout becomes the run's: its files where later steps read them (the
        first layout's kept in <folder>/first/), its netlist, layout, pin access, routing, config."""
        archive = trial.paths.root / "first"
        archive.mkdir(parents=True, exist_ok=True)
        for name in self.files:
            mine, theirs = getattr(ctx.paths, name), getattr(trial.paths, name)
            if mine.exists():
                shutil.move(mine, archive / mine.name)
            if theirs.is_dir():
                shutil.copytree(theirs, mine)
            elif theirs.is_file():
                shutil.copyfile(theirs, mine)
        for name in ("netlist", "layout", "access", "route_result", "netlist_v", "config", "drc_result", "lvs_result"):
            setattr(ctx, name, getattr(trial, name))


def _signoff_problems(ctx: Context) -> int:
    """Unrouted nets, Closer-deck DRC markers and LVS opens and shorts of the layout so far."""
    return (ctx.route_result.failed_nets + ctx.drc_result.total + len(ctx.lvs_result.opens)
            + len(ctx.lvs_result.shorts))


class ReplaceAfterRepair(Replace):
    """The same fallback once more, when the layout still has problems after the repair rounds
    (unrouted nets, DRC markers, LVS opens or shorts: what the repair could not fix in place) and
    Replace did not run: the trial goes through routing, DRC, LVS, repair and cleanup in
    `replace_signoff/` and is kept when it has fewer problems. Not with the repair off (its
    problems are the point of such a run)."""

    id = "ReplaceAfterRepair"
    inputs = ("route_result", "drc_result", "lvs_result")
    key = "closer__replace_signoff"
    trial_steps = REPLACE_STEPS + ("Gds", "Drc", "Lvs", "Repair", "Cleanup")
    files = _LAYOUT_FILES + ("gds", "drc_dir", "lvs_dir")
    folder = "replace_signoff"

    def problems(self, ctx: Context) -> int:
        return _signoff_problems(ctx)

    def wanted(self, ctx: Context) -> bool:
        return ctx.config.repair.rounds > 0 and not ctx.metrics.get("closer__replace__ran")


def port_names(n: Netlist) -> dict[str, str]:
    """DEF pin name -> the netlist's port name (the GDS pin labels)."""
    return {safe: n.original.get(safe, safe) for safe in n.ports}


class Gds(Step):
    id = "Gds"
    inputs = ("netlist",)

    def run(self, ctx):
        gds.def_to_gds(ctx.paths.final_def, ctx.pdk.tech_lef, ctx.pdk.cell_lef, ctx.pdk.gds, ctx.paths.gds,
                       port_names(ctx.netlist), ctx.black_boxes())
        if not ctx.config.repair.fill:
            return {}
        # the same-net fills every repair candidate gets, applied here so that the Drc and Lvs
        # steps check the layout the repair starts from (before, they checked the unfilled GDS
        # and the repair signed off a filled copy again: ~26 s CPU per sign-off on mac16)
        fills = cleanup.fill_same_net(ctx.paths.gds)
        return {"closer__gds__same_net_fills": sum(fills.values())}


def drc_metrics(d: drc.DrcResult) -> dict[str, Any]:
    return {"detailedroute__route__drc_errors": d.total, "closer__signoff__drc__errors": d.total,
            **{f"closer__signoff__drc__{k}": n for k, n in d.counts.items()}}


def lvs_metrics(v: lvs.LvsResult) -> dict[str, Any]:
    return {"closer__signoff__lvs__clean": v.ok, "closer__signoff__lvs__opens": len(v.opens),
            "closer__signoff__lvs__shorts": len(v.shorts)}


class Drc(Step):
    """Closer's deck on the GDS: whole, or after an incremental reroute on a large design only
    where it changed the layout (`Context.changed_windows`; the markers elsewhere are the last
    check's, drc.run_drc). A windowed result is checked whole once, before the official deck
    (`SignoffDrc`)."""

    id = "Drc"

    def run(self, ctx):
        changed, ctx.changed_windows = ctx.changed_windows, None
        cleaned, ctx.gds_cleaned = ctx.gds_cleaned, False
        if changed is not None and ctx.drc_result is not None and not cleaned and _windowed(ctx):
            ctx.drc_result = drc.run_drc(ctx.paths.gds, ctx.paths.drc_dir, windows=changed, base=ctx.drc_result,
                                         jobs=ctx.config.check_jobs)
        else:
            ctx.drc_result = _whole_drc(ctx)
        return {**drc_metrics(ctx.drc_result), "closer__drc__windows": ctx.drc_result.windows}


def _whole_drc(ctx: Context) -> drc.DrcResult:
    """Closer's deck on the run's whole GDS, in `check_jobs` processes."""
    return drc.run_drc(ctx.paths.gds, ctx.paths.drc_dir, jobs=ctx.config.check_jobs)


def _windowed(ctx: Context) -> bool:
    """Whether DRC after a local change checks only its windows (RepairConfig.windowed_min_instances)."""
    least = ctx.config.repair.windowed_min_instances
    return bool(least) and len(ctx.netlist.instances) >= least


class Lvs(Step):
    id = "Lvs"
    inputs = ("netlist", "layout")

    def run(self, ctx):
        ctx.lvs_result = lvs.run_lvs(ctx.paths.gds, ctx.layout, ctx.netlist, ctx.macros, ctx.paths.lvs_dir)
        return {**lvs_metrics(ctx.lvs_result), "closer__signoff__lvs__nets": ctx.lvs_result.nets_checked}


class Repair(Step):
    """Rip up and reroute the nets at DRC markers and LVS opens/shorts (closer.physical.repair.repair);
    the signed-off files and results are replaced only by a strictly better round."""

    id = "Repair"
    inputs = ("netlist", "layout", "access", "route_result", "drc_result", "lvs_result")

    def run(self, ctx):
        r = ctx.route_result
        limit = ctx.config.repair.max_unrouted
        if limit is not None and r.failed_nets > limit:
            return {"closer__repair__skipped": "unrouted nets", "closer__repair__skipped_unrouted_nets": r.failed_nets,
                    "closer__repair__rounds": 0, "closer__repair__kept": 0, "closer__repair__out_of_time": False,
                    "closer__repair__repeats_skipped": 0,
                    "closer__route__unrouted_nets": r.failed_nets, "closer__route__failed_net_names": r.failed[:50],
                    **drc_metrics(ctx.drc_result), **lvs_metrics(ctx.lvs_result)}

        def shorts_located(final_def, v):
            nets = [{n for n in s["nets"] if not n.startswith("<")} for s in v.shorts]
            return repair.short_windows(final_def, ctx.pdk.tech_lef, ctx.paths.router_lef, nets) if nets else []

        first = repair.Candidate(r.routed_def, r.rc_file, list(r.failed), ctx.paths.final_def, ctx.paths.gds,
                                 ctx.drc_result, ctx.lvs_result, shorts_located(ctx.paths.final_def, ctx.lvs_result))
        # a repair after a later reroute (antenna diodes, setup sizing) keeps the earlier records
        earlier = sum(1 for s in ctx.steps if s["step"] == self.id)
        work = ctx.paths.route_dir / ("repair" if not earlier else f"repair-{earlier + 1}")
        cfg = ctx.config

        cpu_end = procs.tree_cpu_s() + cfg.repair.max_cpu_s
        cut: list[Path] = []  # reroutes whose rip-up passes the budget stopped

        def reroute(base, nets, before, rdir):
            # a round's rip-up passes stop at the end of the repair's budget (measured on
            # mac16x2: one batch round of ~500 nets ran qrouter's schedule for 10+ minutes);
            # qrouter counts wall seconds, so such a cut is flagged as time-dependent
            left = max(0.0, cpu_end - procs.tree_cpu_s())
            rcfg = replace(cfg.route, pass_budget_s=min(cfg.route.pass_budget_s, left))
            out = route.reroute(ctx.pdk.tech_lef, ctx.paths.router_lef, base.routed_def, base.rc_file,
                                ctx.layout, rdir, rcfg, nets, before, r.patch)
            if route.time_limited(rdir / "qrouter_reroute.log"):
                cut.append(rdir)
            return out

        windowed = _windowed(ctx)

        def signoff(routed_def, rc, failed, rdir, base=None, nets=frozenset()):
            final_def = route.finalize_def(routed_def, ctx.layout, ctx.netlist, ctx.macros, ctx.access,
                                           rdir / "final.def", ctx.pin_access, failed)
            gds_path = gds.def_to_gds(final_def, ctx.pdk.tech_lef, ctx.pdk.cell_lef, ctx.pdk.gds, rdir / f"{ctx.top}.gds",
                                      port_names(ctx.netlist), ctx.black_boxes())
            if cfg.repair.fill:
                cleanup.fill_same_net(gds_path)
            if windowed and base is not None and nets:
                d = drc.run_drc(gds_path, rdir / "drc", windows=_net_windows((final_def, base.final_def), set(nets)),
                                base=base.drc, jobs=cfg.check_jobs)
            else:
                d = drc.run_drc(gds_path, rdir / "drc", jobs=cfg.check_jobs)
            v = lvs.run_lvs(gds_path, ctx.layout, ctx.netlist, ctx.macros, rdir / "lvs")
            return repair.Candidate(routed_def, rc, failed, final_def, gds_path, d, v, shorts_located(final_def, v))

        def find_nets(cand, windows, grow):
            return repair.nets_at(cand.final_def, ctx.pdk.tech_lef, ctx.paths.router_lef, windows, grow)

        def net_windows(net):
            return incremental.net_cell_windows(ctx.netlist, ctx.layout.cells, ctx.macros, net)

        best, log = repair.repair(first, reroute, signoff, find_nets, work, cfg.repair, net_windows)
        work.mkdir(parents=True, exist_ok=True)
        (work / "repair.json").write_text(json.dumps(log.rounds, indent=1))
        if best.final_def != ctx.paths.final_def:
            shutil.copyfile(best.final_def, ctx.paths.final_def)
            shutil.copyfile(best.gds, ctx.paths.gds)
            for sub in ("drc", "lvs"):
                shutil.rmtree(ctx.paths.root / sub, ignore_errors=True)
                shutil.copytree(best.final_def.parent / sub, ctx.paths.root / sub)
            ctx.route_result.routed_def, ctx.route_result.rc_file = best.routed_def, best.rc_file
            ctx.route_result.failed, ctx.route_result.failed_nets = best.failed, len(best.failed)
            ctx.drc_result, ctx.lvs_result = best.drc, best.lvs
        return {"closer__repair__skipped": None, "closer__repair__skipped_unrouted_nets": 0,
                "closer__repair__rounds": sum(1 for e in log.rounds if e.get("result") in ("kept", "discarded")),
                "closer__repair__out_of_time": bool(cut) or any(e.get("result") == "out of time" for e in log.rounds),
                "closer__repair__kept": sum(1 for e in log.rounds if e.get("result") == "kept"),
                "closer__repair__repeats_skipped": sum(1 for e in log.rounds if e.get("result") == "repeat"),
                "closer__route__unrouted_nets": ctx.route_result.failed_nets,
                "closer__route__failed_net_names": ctx.route_result.failed[:50],
                **drc_metrics(ctx.drc_result), **lvs_metrics(ctx.lvs_result)}


WINDOW_GROW_UM = 0.5  # a wire reaches past its centre line's end points (half its width, an end's via pad)


def _net_windows(defs: tuple[Path, ...], nets: set[str]) -> list[tuple[float, float, float, float]]:
    """The boxes (µm) of `nets`' wire paths and vias in each routed DEF: where a round's reroute
    changed metal (a net's whole bounding box read 13 s of a 57 s firdma DRC for 50 nets)."""
    return [(x1 - WINDOW_GROW_UM, y1 - WINDOW_GROW_UM, x2 + WINDOW_GROW_UM, y2 + WINDOW_GROW_UM)
            for d in defs for boxes in defio.net_segment_boxes(d, nets).values() for x1, y1, x2, y2 in boxes]


class Cleanup(Step):
    """Same-net notch and minimum-area fill on the signed-off GDS (closer.physical.repair.cleanup), then DRC and LVS
    again. With `RepairConfig.fill` the repair has already filled every candidate it signed off,
    so this step finds work only when the repair is off or left markers."""

    id = "Cleanup"
    inputs = ("netlist", "layout", "drc_result")

    def run(self, ctx):
        notches = cleanup.fill_notches(ctx.paths.gds) if ctx.drc_result.total else {}
        islands = cleanup.fill_min_area(ctx.paths.gds) if ctx.drc_result.total else {}
        holes = cleanup.fill_holes(ctx.paths.gds) if ctx.drc_result.total else {}
        out = {"closer__cleanup__notch_fills": sum(notches.values()),
               "closer__cleanup__area_fills": sum(islands.values()),
               "closer__cleanup__hole_fills": sum(holes.values())}
        if notches or islands or holes:
            ctx.gds_cleaned = True
            ctx.drc_result = _whole_drc(ctx)
            ctx.lvs_result = lvs.run_lvs(ctx.paths.gds, ctx.layout, ctx.netlist, ctx.macros, ctx.paths.lvs_dir)
            out.update({**drc_metrics(ctx.drc_result), **lvs_metrics(ctx.lvs_result)})
        return out


def signoff_drc_metrics(d: signoff_drc.SignoffDrcResult) -> dict[str, Any]:
    return {"closer__signoff__official_drc__errors": d.total, "closer__signoff__official_drc__rules": len(d.counts),
            "closer__signoff__official_drc__wall_s": round(d.wall_s, 2),
            **{f"closer__signoff__official_drc__{_key_part(rule)}": n for rule, n in d.nonzero().items()}}


def _key_part(rule: str) -> str:
    """A deck rule name as a metric-key segment (the metadata schema's character set)."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", rule)


class SignoffDrc(Step):
    """The official deck (sky130A_mr.drc: FEOL, BEOL, off-grid) on the final GDS, once, after every
    step that may rewrite the layout (the antenna and setup repairs); the drc gate reads its total
    (closer.physical.signoff.signoff_drc)."""

    id = "SignoffDrc"

    def run(self, ctx):
        whole_check = {}
        if ctx.drc_result is not None and ctx.drc_result.windows:
            # the last Closer-deck result was pieced from windows (Drc, Repair): the whole chip once
            windowed = ctx.drc_result
            ctx.drc_result = _whole_drc(ctx)
            whole_check = {**drc_metrics(ctx.drc_result), "closer__drc__windowed_total": windowed.total,
                           "closer__drc__whole_total": ctx.drc_result.total}
        ctx.signoff_drc_result = signoff_drc.run_signoff_drc(ctx.paths.gds, ctx.top, ctx.paths.signoff_drc_dir,
                                                             ctx.pdk.signoff_drc_deck, ctx.config.check_jobs)
        return {**whole_check, **signoff_drc_metrics(ctx.signoff_drc_result)}


def antenna_metrics(a: antenna.AntennaResult, n: Netlist) -> dict[str, Any]:
    return {"detailedroute__antenna__violating__nets": len(a.violating_nets),
            "detailedroute__antenna_diodes_count": sum(1 for i in n.instances.values() if i.master == diodes.DIODE_CELL),
            "closer__signoff__antenna__violations": len(a.violations),
            "closer__signoff__antenna__checks": a.checks,
            "closer__signoff__antenna__worst_margin": round(a.worst_margin, 4),
            "closer__signoff__antenna__violating_net_names": a.violating_nets[:50]}


# what runs again after a setup repair resized cells: fill to sign-off (the clock tree stays)
# (the official deck once, on the final GDS: the SignoffDrc step after SetupRepair)
REROUTE_STEPS: tuple[str, ...] = ("Fill", "WriteDef", "PinAccess", "Route", "Gds", "Drc", "Lvs", "Repair", "Cleanup")
# what runs again after an incremental reroute (an antenna round's, a setup repair round's)
SIGNOFF_STEPS: tuple[str, ...] = ("Gds", "Drc", "Lvs", "Repair", "Cleanup")


class Antenna(Step):
    """The LEF antenna ratios per net and layer on the final GDS (closer.physical.signoff.antenna); with
    violations, diodes beside the flagged nets' gates (closer.physical.repair.diodes), only the nets the
    diodes touch rerouted against the kept wiring, and the layout signed off again, up to
    `AntennaConfig.repair_rounds` rounds (the official deck runs after, on the final GDS).

    No round runs while the layout has unrouted nets (after Repair, or after an earlier round): the
    check runs and is recorded, and `closer__antenna__repair_skipped` says why a round due did not
    run ("unrouted nets", with the count in `…__repair_skipped_unrouted_nets`). Each round is a
    reroute and a whole-chip repair (on PicoRV32 with ~1,000 nets unrouted the first round's repair
    alone took 677 s, docs/physical.md) that cannot make such a layout pass: it fails the route gate
    whatever its antenna ratios.

    A round whose signed-off layout stands worse than its start (`_round_standing`: more unrouted
    nets, markers and LVS problems, or as many and more antenna nets) is routed again in full
    (REROUTE_STEPS, `AntennaConfig.full_reroute`; `closer__antenna__full_reroute_rounds`), and
    when it still stands worse it is undone
    (`LayoutCheckpoint`: `antenna/round<k>_start/` restored, the undone layout's files in
    `antenna/round<k>_discarded/`), and no further round runs, in this step or a later one
    (`closer__antenna__repair_skipped` "an earlier round was undone"); `closer__antenna__discarded_rounds`
    lists such rounds."""

    id = "Antenna"
    inputs = ("netlist", "layout")

    def run(self, ctx):
        cfg = ctx.config.antenna
        ctx.antenna_result = self._check(ctx)
        first = ctx.antenna_result
        done = ctx.diode_sites  # a later Antenna step (after a setup repair's reroute) adds no second diode
        rounds, rerouted = 0, 0
        skipped: str | None = None
        unrouted = 0
        discarded: list[int] = []
        full: list[int] = []
        while ctx.antenna_result.violations and rounds < cfg.repair_rounds:
            unrouted = ctx.route_result.failed_nets if ctx.route_result else 0
            if unrouted:
                skipped = "unrouted nets"
                break
            if ctx.diode_rounds_undone:
                # a later Antenna step (after a setup repair) would choose the same diodes on a
                # layout that differs only by resized cells (PicoRV32: a second 30-minute round)
                skipped = "an earlier round was undone"
                break
            sites = diodes.diode_sites(ctx.antenna_result.violations, ctx.netlist, ctx.macros, done, cfg.max_net_gates)
            # a piece whose gates all have a diode and that still violates needs more diffusion
            sites += diodes.more_diodes(ctx.antenna_result.violations, done, ctx.tech,
                                        ctx.macros[diodes.DIODE_CELL].pins[diodes.DIODE_PIN].diff_area, cfg.limit_scale)
            if not sites:
                break
            # the check the round repairs is kept: the next check rewrites antenna.json; a later
            # Antenna step's rounds number on (records are never overwritten)
            rounds += 1
            ctx.diode_rounds += 1
            report = ctx.paths.antenna_dir / "antenna.json"
            shutil.copyfile(report, ctx.paths.antenna_dir / f"before_round{ctx.diode_rounds}.json")
            start = LayoutCheckpoint.save(ctx, ctx.paths.antenna_dir / f"round{ctx.diode_rounds}_start")
            worse_than = _round_standing(ctx)
            names = diodes.insert_diodes(ctx.netlist, ctx.layout, ctx.macros, sites)
            done.update(sites)
            out = ctx.paths.root / f"{ctx.top}_diodes.v"
            diodes.write_verilog(ctx.netlist_v, out.with_suffix(".tmp.v"), ctx.netlist, names)
            out.with_suffix(".tmp.v").replace(out)
            ctx.netlist_v = out
            rerouted += len(_reroute_diode_nets(ctx, names, {net for net, _ in sites},
                                                ctx.paths.route_dir / f"diodes{ctx.diode_rounds}"))
            run_steps(ctx, SIGNOFF_STEPS)
            ctx.antenna_result = self._check(ctx)
            if _round_standing(ctx) > worse_than and cfg.full_reroute:
                # the diodes may be fine where their held reroute was not (PicoRV32: 644 nets
                # rerouted around 8,000 kept ones left 1 unrouted and 51 markers)
                full.append(ctx.diode_rounds)
                run_steps(ctx, REROUTE_STEPS)
                ctx.antenna_result = self._check(ctx)
            if _round_standing(ctx) > worse_than:
                # the round broke more than it mended (a reroute that left nets unrouted or shorted
                # costs more than the antenna nets it fixed): its start comes back, and a further
                # round would choose the same diodes
                aside = ctx.paths.antenna_dir / f"round{ctx.diode_rounds}_discarded"
                start.restore(ctx, aside)
                shutil.move(report, aside / report.name)
                shutil.copyfile(ctx.paths.antenna_dir / f"before_round{ctx.diode_rounds}.json", report)
                discarded.append(ctx.diode_rounds)
                ctx.diode_rounds_undone.append(ctx.diode_rounds)
                break
        return {**antenna_metrics(ctx.antenna_result, ctx.netlist), "closer__antenna__repair_rounds": rounds,
                "closer__antenna__discarded_rounds": discarded, "closer__antenna__full_reroute_rounds": full,
                "closer__antenna__repair_skipped": skipped,
                "closer__antenna__repair_skipped_unrouted_nets": unrouted if skipped else 0,
                "closer__antenna__rerouted_nets": rerouted,
                "closer__antenna__violating_nets_before_repair": len(first.violating_nets),
                "closer__antenna__violating_net_names_before_repair": first.violating_nets[:50],
                "closer__antenna__worst_margin_before_repair": round(first.worst_margin, 4)}

    @staticmethod
    def _check(ctx) -> antenna.AntennaResult:
        return antenna.check_antenna(ctx.paths.gds, ctx.layout, ctx.netlist, ctx.macros, ctx.tech,
                                     ctx.paths.antenna_dir, ctx.config.antenna.limit_scale, ctx.config.check_jobs)


def _round_standing(ctx: Context) -> tuple[int, int]:
    """How far a layout is from sign-off, worst first: its unrouted nets, Closer-deck markers and
    LVS problems (which no later antenna round can mend), then its antenna-violating nets."""
    checked = ctx.route_result and ctx.drc_result and ctx.lvs_result
    return (_signoff_problems(ctx) if checked else 0), len(ctx.antenna_result.violating_nets)


@dataclass
class LayoutCheckpoint:
    """The run's layout as it stood at a point (its state in the context, the files later steps
    read, its reports) in a folder of its own, so that a change found worse can be undone.
    Restoring moves the undone layout's files aside (records are never overwritten)."""

    folder: Path
    state: dict[str, Any]

    FIELDS: ClassVar[tuple[str, ...]] = ("netlist", "layout", "access", "route_result", "drc_result", "lvs_result",
                                         "antenna_result", "diode_sites", "metrics", "gds_cleaned")
    FILES: ClassVar[tuple[str, ...]] = ("placed_def", "router_lef", "final_def", "gds", "access_cache")
    DIRS: ClassVar[tuple[str, ...]] = ("drc_dir", "lvs_dir")

    @classmethod
    def save(cls, ctx: Context, folder: Path) -> LayoutCheckpoint:
        folder.mkdir(parents=True, exist_ok=True)
        state = {name: copy.deepcopy(getattr(ctx, name)) for name in cls.FIELDS}
        for name in cls.FILES:
            if (path := getattr(ctx.paths, name)).is_file():
                shutil.copyfile(path, folder / path.name)
        for name in cls.DIRS:
            if (path := getattr(ctx.paths, name)).is_dir():
                shutil.copytree(path, folder / path.name)
        # the netlist Verilog and the routing are kept by path; a later round may write the same paths
        state["netlist_v"] = Path(shutil.copyfile(ctx.netlist_v, folder / ctx.netlist_v.name))
        r = state["route_result"]
        if r is not None:
            r.routed_def = Path(shutil.copyfile(r.routed_def, folder / f"routed_{r.routed_def.name}"))
            r.rc_file = Path(shutil.copyfile(r.rc_file, folder / f"routed_{r.rc_file.name}"))
        return cls(folder, state)

    def restore(self, ctx: Context, aside: Path) -> None:
        aside.mkdir(parents=True, exist_ok=True)
        for name in self.FILES + self.DIRS:
            path = getattr(ctx.paths, name)
            if path.exists():
                shutil.move(path, aside / path.name)
            saved = self.folder / path.name
            if saved.is_dir():
                shutil.copytree(saved, path)
            elif saved.is_file():
                shutil.copyfile(saved, path)
        for name, value in self.state.items():  # a checkpoint is restored at most once: no copy
            setattr(ctx, name, value)


def _reroute_diode_nets(ctx: Context, names: list[str], nets: set[str], work: Path) -> set[str]:
    """The placed diodes `names` (on `nets`) into the routed layout with every other wire kept
    (`_reroute_changed_cells`). Returns the nets rerouted."""
    windows = incremental.cell_windows((ctx.layout.cells[n] for n in names), ctx.macros)
    return _reroute_changed_cells(ctx, nets, windows, work, {"diodes": names, "diode_nets": sorted(nets)},
                                  "diodes.json", "nets_over_diodes")


def _reroute_changed_cells(ctx: Context, nets: set[str], windows: list[repair.Window], work: Path,
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
    ctx.changed_windows = moved + _net_windows((final_before, ctx.paths.final_def), chosen)
    return chosen


class Sta(Step):
    id = "Sta"
    inputs = ("netlist",)

    def run(self, ctx):
        ctx.paths.sta_dir.mkdir(parents=True, exist_ok=True)
        rc = parasitics.parse_rc(ctx.route_result.rc_file)
        spef = parasitics.write_spef(rc, ctx.top, ctx.netlist.original, ctx.paths.spef, ctx.netlist.ports,
                                      ctx.netlist.bus_bits)
        out: dict[str, Any] = {}
        spef_warnings = 0
        for corner in ctx.config.corners:
            for use in (None, spef):
                r = sta.run_sta(corner, ctx.liberties(corner), ctx.netlist_v, ctx.top, ctx.sdc, use,
                                ctx.paths.sta_dir, ctx.config.clock_port, ctx.config.clock_period_ns,
                                ctx.config.sdc_policy, propagated_clock=bool(ctx.metrics.get("closer__cts__buffers")))
                ctx.sta_results.append(r)
                tag = "spef" if use else "nospef"
                out[f"closer__timing__setup__ws__{corner}__{tag}"] = r.setup_ws_ns
                out[f"closer__timing__hold__ws__{corner}__{tag}"] = r.hold_ws_ns
                out[f"closer__power__total__{corner}__{tag}"] = r.power_total_w
                if use is None:
                    continue
                # slack with parasitics per corner: the sta gate checks hold at every reported corner
                out[f"finish__timing__setup__ws__corner__{corner}"] = r.setup_ws_ns
                out[f"finish__timing__hold__ws__corner__{corner}"] = r.hold_ws_ns
                out[f"finish__timing__setup__tns__corner__{corner}"] = r.setup_tns_ns
                out[f"finish__timing__hold__tns__corner__{corner}"] = r.hold_tns_ns
                # DRV counts with parasitics: per corner (the sta gate checks every reported
                # corner) and unqualified at the signoff corner, like the slack keys
                out[f"finish__timing__drv__max_slew__corner__{corner}"] = r.max_slew_violations
                out[f"finish__timing__drv__max_cap__corner__{corner}"] = r.max_cap_violations
                spef_warnings = max(spef_warnings, r.spef_warnings)
                if r.clock_skew_ns is not None:  # a clock tree was built: its skew and insertion delay
                    out[f"closer__cts__skew__{corner}"] = r.clock_skew_ns
                    out[f"closer__cts__insertion_delay__{corner}"] = r.clock_latency_ns
                    # ORFS's name (Metrics.tcl clock__skew__setup at the cts stage); ORFS has no
                    # insertion-delay key, so that one stays closer__ only
                    out[f"cts__clock__skew__setup__corner__{corner}"] = r.clock_skew_ns
                if corner == ctx.config.signoff_corner:
                    out["finish__timing__setup__ws"] = r.setup_ws_ns
                    out["finish__timing__hold__ws"] = r.hold_ws_ns
                    out["finish__power__total"] = r.power_total_w
                    out["finish__timing__drv__max_slew"] = r.max_slew_violations
                    out["finish__timing__drv__max_cap"] = r.max_cap_violations
                    out["closer__timing__drv__max_cap_violators"] = r.max_cap_violators[:50]
        # lines OpenSTA warned about while reading the SPEF (> 0: parasitics partly not annotated)
        out["closer__timing__spef_warnings"] = spef_warnings
        return out


class SetupRepair(Step):
    """Setup and max-slew/max-cap repair when the signed-off layout misses setup or has such a
    violation at a corner: OpenSTA sizes the violations' drivers and the worst paths' drivers on
    the sign-off SPEF at the worst setup corner, else at the corner with the most slew/cap
    violations (closer.physical.repair.sizing), the resized cells go into the layout, and the
    layout is rerouted (only what the round changed, the full reroute when that leaves problems:
    `_reroute_after_setup_repair`) and signed off again (antenna and STA included), up to
    `SizingConfig.max_rounds` times while a round resizes something (the official deck runs
    after, on the final GDS)."""

    id = "SetupRepair"
    inputs = ("netlist", "layout")

    def run(self, ctx):
        cfg = ctx.config.sizing
        before = _setup_ws_by_corner(ctx)
        out: dict[str, Any] = {"closer__setup_repair__rounds": 0, "closer__setup_repair__resized": 0,
                               "closer__setup_repair__buffers": 0, "closer__setup_repair__drv_resized": 0}
        for corner, ws in before.items():
            out[f"closer__setup_repair__ws_before__{corner}"] = ws
        rounds = 0
        while cfg.enabled and rounds < cfg.max_rounds:
            corner = _sizing_corner(ctx)
            if corner is None:
                break
            rounds += 1
            key = f"closer__setup_repair__round{rounds}__{corner}"
            result = _size(ctx, corner, ctx.paths.sta_dir / "sizing" / f"round{rounds}", key, out)
            if not result.resized and not result.isolations:
                break
            out["closer__setup_repair__resized"] += len(result.resized)
            out["closer__setup_repair__drv_resized"] += result.drv_resized
            out["closer__setup_repair__buffers"] += len(result.isolations)
            changed = _apply_setup_repair(ctx, result)
            ctx.sta_results.clear()
            out.update({f"{key}__{k}": v for k, v in _reroute_after_setup_repair(ctx, changed, rounds).items()})
            run_steps(ctx, ("Antenna", "Sta"))
        out["closer__setup_repair__rounds"] = rounds
        for corner, ws in _setup_ws_by_corner(ctx).items():
            out[f"closer__setup_repair__ws_after__{corner}"] = ws
        return out


def _sizing_corner(ctx: Context) -> str | None:
    """Where a sizing round works: the corner with the worst failing setup slack, else the one
    with the most max-slew/max-cap violations (with `SizingConfig.drv_repair`); None: nothing due."""
    failing = {c: ws for c, ws in _setup_ws_by_corner(ctx).items() if ws is not None and ws < 0}
    drv = {c: n for c, n in _drv_violations_by_corner(ctx).items() if n and ctx.config.sizing.drv_repair}
    if failing:
        return min(failing, key=failing.get)
    return max(drv, key=drv.get) if drv else None


def _size(ctx: Context, corner: str, folder: Path, key: str, out: dict[str, Any]) -> sizing.SizingResult:
    """One OpenSTA sizing round at `corner` on the run's SPEF; its own before/after go to `out`
    under `key` (the sign-off numbers come from the reroute)."""
    result = sizing.size_for_setup(corner, ctx.liberties(corner), ctx.netlist_v, ctx.top, _timing_sdc(ctx),
                                   ctx.paths.spef, bool(ctx.metrics.get("closer__cts__buffers")), ctx.netlist,
                                   ctx.macros, ctx.config.sizing, folder, _cap_drivers(ctx, corner))
    out.update({f"{key}__resized": len(result.resized), f"{key}__ws_before": result.ws_before_ns,
                f"{key}__ws_after": result.ws_after_ns, f"{key}__tns_before": result.tns_before_ns,
                f"{key}__tns_after": result.tns_after_ns, f"{key}__buffers": len(result.isolations),
                f"{key}__drv_resized": result.drv_resized})
    return result


class RoutedSetupRepair(Step):
    """Sizing on the routed layout before its first sign-off, on a large design
    (`SizingConfig.routed_rounds` rounds from `routed_min_instances` instances): STA with the
    router's parasitics, an OpenSTA sizing round as SetupRepair's, the changed cells' nets
    rerouted held (`_reroute_changed_cells`), and no checks in between — the sign-off that follows
    (Gds, Drc, Lvs, Repair) checks and mends the routing and the resizing at once. SetupRepair,
    after the antenna repair, then only has what the diodes and repairs changed. On PicoRV32 each
    of SetupRepair's rounds was a whole sign-off, antenna rounds included, and a held reroute its
    repair could not mend sent a round to the full reroute (docs/physical.md).

    Skipped while nets are unrouted (their parasitics are missing, and Replace or the repair may
    change the layout wholesale)."""

    id = "RoutedSetupRepair"
    inputs = ("netlist", "layout", "route_result")
    key = "closer__routed_setup_repair"

    def run(self, ctx):
        cfg = ctx.config.sizing
        out: dict[str, Any] = {f"{self.key}__rounds": 0, f"{self.key}__resized": 0, f"{self.key}__skipped": None}
        if not cfg.enabled or not cfg.routed_rounds or len(ctx.netlist.instances) < cfg.routed_min_instances:
            out[f"{self.key}__skipped"] = "off for this design"
            return out
        if ctx.route_result.failed_nets:
            out[f"{self.key}__skipped"] = "unrouted nets"
            return out
        rounds, first_step, metrics_before = 0, len(ctx.steps), dict(ctx.metrics)
        while rounds < cfg.routed_rounds:
            run_steps(ctx, ("Sta",))
            corner = _sizing_corner(ctx)
            result = None
            if corner is not None:
                rounds += 1
                key = f"{self.key}__round{rounds}__{corner}"
                result = _size(ctx, corner, ctx.paths.sta_dir / "sizing" / f"routed{rounds}", key, out)
            ctx.sta_results.clear()  # the sign-off STA comes after the sign-off
            if result is None or (not result.resized and not result.isolations):
                break
            out[f"{self.key}__resized"] += len(result.resized)
            chosen = _reroute_resized(ctx, _apply_setup_repair(ctx, result), ctx.paths.route_dir / f"routed_setup{rounds}")
            out[f"{key}__rerouted_nets"] = len(chosen)
            out[f"{key}__unrouted"] = ctx.route_result.failed_nets
            # a whole check follows: the reroute's windows are not against a checked layout
            ctx.changed_windows = None
        # the timing of a layout not yet signed off stays in steps.json only: the run's metrics
        # get the sign-off STA's (Sta after the antenna repair)
        for name in {k for step in ctx.steps[first_step:] if step["step"] == "Sta" for k in step["metrics"]}:
            if name in metrics_before:
                ctx.metrics[name] = metrics_before[name]
            else:
                ctx.metrics.pop(name, None)
        out[f"{self.key}__rounds"] = rounds
        return out


def _reroute_resized(ctx: Context, changed: list[str], work: Path) -> set[str]:
    """A sizing round's `changed` cells (resized, added) into the routed layout, held
    (`_reroute_changed_cells`, recorded in `work/setup_repair.json`). Returns the nets rerouted."""
    nets = incremental.cell_nets(ctx.netlist, changed)
    windows = incremental.cell_windows((ctx.layout.cells[n] for n in changed), ctx.macros)
    return _reroute_changed_cells(ctx, nets, windows, work, {"cells": sorted(changed), "cell_nets": sorted(nets)},
                                  "setup_repair.json")


def _reroute_after_setup_repair(ctx: Context, changed: list[str], k: int) -> dict[str, Any]:
    """Route and sign off (Closer's deck, LVS, rip-up repair, fills; the official deck runs once,
    after SetupRepair) the layout with the round's `changed` cells: incrementally (only the
    changed cells' nets and the nets with wiring near their new footprints rerouted, every other
    wire kept: a vacated site gets fill, which has nothing but the rails every cell has), and by
    the full reroute (REROUTE_STEPS) when that leaves unrouted nets, Closer-deck markers or LVS
    problems than the layout had before the round (those it started with are not the round's: a
    large design's unrouted nets would otherwise send every round into a full reroute that does
    not free them either), or with `SizingConfig.incremental_reroute` off. The checks are
    whole-chip either way."""
    out: dict[str, Any] = {"full_reroute": True}
    if ctx.config.sizing.incremental_reroute:
        before = _signoff_problems(ctx)
        chosen = _reroute_resized(ctx, changed, ctx.paths.route_dir / f"setup{k}")
        run_steps(ctx, SIGNOFF_STEPS)
        left = _signoff_problems(ctx)
        out = {"rerouted_nets": len(chosen), "problems_before": before, "incremental_problems": left,
               "full_reroute": left > before}
        if not out["full_reroute"]:
            return out
    run_steps(ctx, REROUTE_STEPS)
    return out


def _apply_setup_repair(ctx: Context, result: sizing.SizingResult) -> list[str]:
    """The round's new sizes, then its isolation buffers, into the netlist, the layout and the
    Verilog STA and LVS read (`<top>_sized.v`). Returns the changed instances (resized, added)."""
    sizing.apply_sizes(ctx.netlist, ctx.layout, ctx.macros, result.resized)
    target = ctx.paths.root / f"{ctx.top}_sized.v"
    staged = target.with_suffix(".tmp.v")
    sizing.write_verilog(ctx.netlist_v, staged, ctx.netlist, result.resized)
    if result.isolations:
        tree = buffering.insert_isolations(ctx.netlist, ctx.layout, ctx.macros, result.isolations)
        buffered = target.with_suffix(".buf.v")
        cts.write_verilog(staged, buffered, ctx.netlist, tree)
        buffered.replace(staged)
    staged.replace(target)
    ctx.netlist_v = target
    return sorted(result.resized) + (sorted(b.name for b in tree.buffers) if result.isolations else [])


def _timing_sdc(ctx: Context) -> Path:
    """The canonical SDC, or one clock from config.clock_port/clock_period_ns when none was given."""
    if ctx.sdc is not None:
        return ctx.sdc
    sdc = ctx.paths.sta_dir / "clock_only.sdc"
    sdc.parent.mkdir(parents=True, exist_ok=True)
    sdc.write_text(f"create_clock -name clk -period {ctx.config.clock_period_ns} [get_ports {ctx.config.clock_port}]\n")
    return sdc


def _setup_ws_by_corner(ctx: Context) -> dict[str, float | None]:
    return {c: ctx.metrics.get(f"finish__timing__setup__ws__corner__{c}") for c in ctx.config.corners}


def _drv_violations_by_corner(ctx: Context) -> dict[str, int]:
    """Max-slew plus max-cap violations per corner, with parasitics (the sign-off counts)."""
    return {c: (ctx.metrics.get(f"finish__timing__drv__max_slew__corner__{c}") or 0)
            + (ctx.metrics.get(f"finish__timing__drv__max_cap__corner__{c}") or 0) for c in ctx.config.corners}


def _cap_drivers(ctx: Context, corner: str) -> tuple[str, ...]:
    """The instances whose output pin the sign-off STA found over its max capacitance at `corner`."""
    return tuple(sorted({pin.rsplit("/", 1)[0] for r in ctx.sta_results
                         if r.corner == corner and r.with_parasitics for pin in r.max_cap_violators}))


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
        return m


STEPS: tuple[type[Step], ...] = (ReadNetlist, Unbuffer, Floorplan, Place, FanoutTree, ClockTree, HoldRepair, Fill, WriteDef, PinAccess,
                                 Route, Replace, RoutedSetupRepair, Gds, Drc, Lvs, Repair, Cleanup, ReplaceAfterRepair,
                                 Antenna, Sta,
                                 SetupRepair, SignoffDrc, Metrics)


def run_steps(ctx: Context, ids: tuple[str, ...]) -> None:
    """The flow's steps named in `ids` again on `ctx`, in the flow's order (a repair's re-signing)."""
    for step_cls in STEPS:
        if step_cls.id in ids:
            step_cls().start(ctx)


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
