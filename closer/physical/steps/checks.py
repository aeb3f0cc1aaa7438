"""The layout's checks and their repair: Gds, Drc (Closer's deck, whole or windowed), Lvs,
Repair (rip-up and reroute), Cleanup (fills), SignoffDrc (the official deck)."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from closer import procs
from closer.physical import deadline
from closer.physical.io import defio
from closer.physical.repair import cleanup, incremental, repair
from closer.physical.route import route
from closer.physical.signoff import drc, gds, lvs, signoff_drc
from closer.physical.io.netlist import Netlist
from closer.physical.steps.base import Context, Step


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
        if changed is not None and ctx.drc_result is not None and not cleaned and windowed_drc(ctx):
            ctx.drc_result = drc.run_drc(ctx.paths.gds, ctx.paths.drc_dir, windows=changed, base=ctx.drc_result,
                                         jobs=ctx.config.check_jobs)
        else:
            ctx.drc_result = whole_drc(ctx)
        return {**drc_metrics(ctx.drc_result), "closer__drc__windows": ctx.drc_result.windows}


def whole_drc(ctx: Context) -> drc.DrcResult:
    """Closer's deck on the run's whole GDS, in `check_jobs` processes."""
    return drc.run_drc(ctx.paths.gds, ctx.paths.drc_dir, jobs=ctx.config.check_jobs)


def windowed_drc(ctx: Context) -> bool:
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
            left = deadline.within(max(0.0, cpu_end - procs.tree_cpu_s()))
            rcfg = replace(cfg.route, pass_budget_s=min(cfg.route.pass_budget_s, left))
            out = route.reroute(ctx.pdk.tech_lef, ctx.paths.router_lef, base.routed_def, base.rc_file,
                                ctx.layout, rdir, rcfg, nets, before, r.patch)
            if route.time_limited(rdir / "qrouter_reroute.log"):
                cut.append(rdir)
            return out

        windowed = windowed_drc(ctx)

        def signoff(routed_def, rc, failed, rdir, base=None, nets=frozenset()):
            final_def = route.finalize_def(routed_def, ctx.layout, ctx.netlist, ctx.macros, ctx.access,
                                           rdir / "final.def", ctx.pin_access, failed)
            gds_path = gds.def_to_gds(final_def, ctx.pdk.tech_lef, ctx.pdk.cell_lef, ctx.pdk.gds, rdir / f"{ctx.top}.gds",
                                      port_names(ctx.netlist), ctx.black_boxes())
            if cfg.repair.fill:
                cleanup.fill_same_net(gds_path)
            if windowed and base is not None and nets:
                d = drc.run_drc(gds_path, rdir / "drc", windows=wire_windows((final_def, base.final_def), set(nets)),
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
        if any(e.get("deadline") for e in log.rounds):
            ctx.metrics[deadline.CUT_KEY] = True
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


def wire_windows(defs: tuple[Path, ...], nets: set[str]) -> list[tuple[float, float, float, float]]:
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
            ctx.drc_result = whole_drc(ctx)
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
            ctx.drc_result = whole_drc(ctx)
            whole_check = {**drc_metrics(ctx.drc_result), "closer__drc__windowed_total": windowed.total,
                           "closer__drc__whole_total": ctx.drc_result.total}
        ctx.signoff_drc_result = signoff_drc.run_signoff_drc(ctx.paths.gds, ctx.top, ctx.paths.signoff_drc_dir,
                                                             ctx.pdk.signoff_drc_deck, ctx.config.check_jobs)
        return {**whole_check, **signoff_drc_metrics(ctx.signoff_drc_result)}
