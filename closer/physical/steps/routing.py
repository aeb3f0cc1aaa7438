"""Routing: Route (global route, guides, qrouter, the final DEF) and the routability fallbacks
Replace and ReplaceAfterRepair."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from closer.physical import deadline
from closer.physical.io import defio
from closer.physical.route import bands, groute, route
from closer.physical.steps.base import Context, PhysicalPaths, Step, run_steps, trial_fits


class Route(Step):
    id = "Route"
    inputs = ("layout", "access")

    def run(self, ctx):
        cfg = deadline_capped(ctx.config.route)
        r, guides, planned = self._route(ctx, cfg)
        if r.time_limited and cfg.pass_budget_s < ctx.config.route.pass_budget_s:
            ctx.metrics[deadline.CUT_KEY] = True  # the deadline, not the route's own budget, stopped it
        return self._finish(ctx, r, guides, planned)

    @staticmethod
    def _route(ctx: Context, cfg: route.RouteConfig) -> tuple[route.RouteResult, Path | None, dict[str, Any]]:
        if ctx.config.bands.applies(len(ctx.netlist.nets)):
            r, banded = bands.route_bands(ctx.netlist, ctx.layout, ctx.macros, ctx.tech, ctx.pdk.tech_lef,
                                          ctx.paths.router_lef, ctx.paths.placed_def, ctx.paths.route_dir, cfg,
                                          ctx.config.bands)
            return r, None, bands.metrics(banded)
        guides, planned = None, {}
        if cfg.guides_min_nets and len(ctx.netlist.nets) >= cfg.guides_min_nets:
            plan = groute.global_route(ctx.netlist, ctx.layout, ctx.macros, ctx.tech, cfg.layers,
                                       groute.power_blockages(ctx.layout) + groute.macro_blockages(ctx.layout, ctx.macros),
                                       ctx.config.groute)
            ctx.paths.route_dir.mkdir(parents=True, exist_ok=True)
            groute.write_json(plan, ctx.paths.groute_json)
            guides = groute.write_guides(plan, ctx.paths.guides_txt, cfg.guide_halo)
            planned = plan.metrics()
        r = route.route(ctx.pdk.tech_lef, ctx.paths.router_lef, ctx.paths.placed_def, ctx.layout,
                        ctx.paths.route_dir, cfg, ctx.netlist, guides)
        return r, guides, planned

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


def deadline_capped(cfg: route.RouteConfig) -> route.RouteConfig:
    """The route settings with no rip-up pass starting after the flow's deadline less its finish
    reserve (closer.physical.deadline); qrouter's first pass always runs."""
    budget = deadline.within(cfg.pass_budget_s)
    return cfg if budget == cfg.pass_budget_s else replace(cfg, pass_budget_s=budget)


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
        if not trial_fits(ctx, self.trial_steps):
            out[f"{self.key}__deadline"] = True
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


def signoff_problems(ctx: Context) -> int:
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
        return signoff_problems(ctx)

    def wanted(self, ctx: Context) -> bool:
        return ctx.config.repair.rounds > 0 and not ctx.metrics.get("closer__replace__ran")
