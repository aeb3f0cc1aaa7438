"""Timing: Sta (every corner, with and without parasitics) and the sizing steps
RoutedSetupRepair (before the first sign-off) and SetupRepair (after the antenna repair)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from closer.physical.cts import cts
from closer.physical.repair import buffering, incremental, sizing
from closer.physical.signoff import parasitics, sta
from closer.physical.steps.base import Context, Step, round_fits, run_steps, timing_sdc
from closer.physical.steps.reroute import REROUTE_STEPS, SIGNOFF_STEPS, reroute_changed_cells
from closer.physical.steps.routing import signoff_problems


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
        rounds, last_round_s = 0, 0.0
        while cfg.enabled and rounds < cfg.max_rounds:
            corner = _sizing_corner(ctx)
            if corner is None:
                break
            if not round_fits(ctx, last_round_s):
                break
            started = time.monotonic()
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
            last_round_s = time.monotonic() - started
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
    result = sizing.size_for_setup(corner, ctx.liberties(corner), ctx.netlist_v, ctx.top, timing_sdc(ctx),
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
    rerouted held (`reroute_changed_cells`), and no checks in between — the sign-off that follows
    (Gds, Drc, Lvs, Repair) checks and mends the routing and the resizing at once. SetupRepair,
    after the antenna repair, then only has what the diodes and repairs changed. On PicoRV32 each
    of SetupRepair's rounds was a whole sign-off, antenna rounds included, and a held reroute its
    repair could not mend sent a round to the full reroute (docs/physical.md).

    Skipped while nets are unrouted (their parasitics are missing, and Replace or the repair may
    change the layout wholesale); for the same reason no round follows one whose reroute left nets
    unrouted (`closer__routed_setup_repair__stopped`)."""

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
        last_round_s = 0.0
        while rounds < cfg.routed_rounds:
            if not round_fits(ctx, last_round_s):
                break
            started = time.monotonic()
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
            last_round_s = time.monotonic() - started
            # a whole check follows: the reroute's windows are not against a checked layout
            ctx.changed_windows = None
            if ctx.route_result.failed_nets:
                # the next round would size on missing parasitics, and each held reroute only adds
                # nets for Repair to mend (the null firdma-B: round 1 left 1 net, round 2 11, and
                # Repair's 576 s kept nothing)
                out[f"{self.key}__stopped"] = "unrouted nets"
                break
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
    (`reroute_changed_cells`, recorded in `work/setup_repair.json`). Returns the nets rerouted."""
    nets = incremental.cell_nets(ctx.netlist, changed)
    windows = incremental.cell_windows((ctx.layout.cells[n] for n in changed), ctx.macros)
    return reroute_changed_cells(ctx, nets, windows, work, {"cells": sorted(changed), "cell_nets": sorted(nets)},
                                 "setup_repair.json")


def _reroute_after_setup_repair(ctx: Context, changed: list[str], k: int) -> dict[str, Any]:
    """Route and sign off (Closer's deck, LVS, rip-up repair, fills; the official deck runs once,
    after SetupRepair) the layout with the round's `changed` cells: incrementally (only the
    changed cells' nets and the nets with wiring near their new footprints rerouted, every other
    wire kept: a vacated site gets fill, which has nothing but the rails every cell has), and by
    the full reroute (REROUTE_STEPS) when that leaves unrouted nets, Closer-deck markers or LVS
    problems than the layout had before the round (those it started with are not the round's: a
    large design's unrouted nets would otherwise send every round into a full reroute that does
    not free them either) and the flow's deadline leaves time for it, or with
    `SizingConfig.incremental_reroute` off. The checks are whole-chip either way."""
    out: dict[str, Any] = {"full_reroute": True}
    if ctx.config.sizing.incremental_reroute:
        before = signoff_problems(ctx)
        chosen = _reroute_resized(ctx, changed, ctx.paths.route_dir / f"setup{k}")
        run_steps(ctx, SIGNOFF_STEPS)
        left = signoff_problems(ctx)
        out = {"rerouted_nets": len(chosen), "problems_before": before, "incremental_problems": left,
               "full_reroute": left > before}
        if not out["full_reroute"]:
            return out
        if not round_fits(ctx, 0.0):
            # a full reroute is a Route and a sign-off: begun too late it is killed with the flow
            # (the null firdma-B: begun 26 min before the limit, its Route alone took 16); the
            # incremental layout, signed off above, is the one the flow signs off
            out.update(full_reroute=False, full_reroute_skipped="the flow's deadline")
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
