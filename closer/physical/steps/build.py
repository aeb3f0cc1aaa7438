"""From the gate netlist to a placed layout the router can read: ReadNetlist, Unbuffer,
Floorplan, Place, FanoutTree, ClockTree, HoldRepair, Fill, WriteDef, PinAccess."""

from __future__ import annotations

import json
from typing import Any

from closer.physical.cts import cts
from closer.physical.io import defio, netlist as netlist_mod
from closer.physical.place import congestion, inflation, place
from closer.physical.repair import fanout, hold
from closer.physical.route import blockpins, pinaccess
from closer.physical.floorplan.floorplan import insert_fill, make_floorplan
from closer.physical.io.lef import read_macros
from closer.physical.steps.base import Context, Step, timing_sdc


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
            r = hold.repair_hold(corner, ctx.liberties(corner), ctx.netlist_v, ctx.top, timing_sdc(ctx), propagated,
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
