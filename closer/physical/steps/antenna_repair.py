"""The Antenna step (LEF ratios, diode rounds) and the checkpoint that undoes a round found worse."""

from __future__ import annotations

import copy
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from closer.physical.repair import diodes, incremental
from closer.physical.signoff import antenna
from closer.physical.io.netlist import Netlist
from closer.physical.steps.base import Context, Step, round_fits, run_steps
from closer.physical.steps.reroute import REROUTE_STEPS, SIGNOFF_STEPS, reroute_changed_cells
from closer.physical.steps.routing import signoff_problems


def antenna_metrics(a: antenna.AntennaResult, n: Netlist) -> dict[str, Any]:
    return {"detailedroute__antenna__violating__nets": len(a.violating_nets),
            "detailedroute__antenna_diodes_count": sum(1 for i in n.instances.values() if i.master == diodes.DIODE_CELL),
            "closer__signoff__antenna__violations": len(a.violations),
            "closer__signoff__antenna__checks": a.checks,
            "closer__signoff__antenna__worst_margin": round(a.worst_margin, 4),
            "closer__signoff__antenna__violating_net_names": a.violating_nets[:50]}


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
        last_round_s = 0.0
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
            if not round_fits(ctx, last_round_s):
                skipped = "the flow's deadline"
                break
            started = time.monotonic()
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
            last_round_s = time.monotonic() - started
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
    return (signoff_problems(ctx) if checked else 0), len(ctx.antenna_result.violating_nets)


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
    (`reroute_changed_cells`). Returns the nets rerouted."""
    windows = incremental.cell_windows((ctx.layout.cells[n] for n in names), ctx.macros)
    return reroute_changed_cells(ctx, nets, windows, work, {"diodes": names, "diode_nets": sorted(nets)},
                                 "diodes.json", "nets_over_diodes")
