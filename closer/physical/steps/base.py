"""What every physical step shares: the run's configuration (PhysicalConfig), its folder
(PhysicalPaths), the state the steps pass on (Context), the Step base class (declared inputs and
outputs; `Step.start` is the one place that times and records a step) and `run_steps`."""

from __future__ import annotations

import json
import os
import resource
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from closer import procs
from closer.errors import InputError
from closer.physical import deadline
from closer.pdk import ALL_CORNERS, CORNERS, MacroAbstract, PdkPaths
from closer.physical.cts import cts
from closer.physical.place import place
from closer.physical.repair import fanout, hold, repair, sizing
from closer.physical.route import bands, groute, route
from closer.physical.signoff import antenna, drc, lvs, signoff_drc, sta
from closer.physical.floorplan.floorplan import FloorplanConfig, Layout
from closer.physical.floorplan.macros import MacroPlacement
from closer.physical.io.lef import Macro, Tech
from closer.physical.io.netlist import Netlist
from closer.sdc import SdcPolicy


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


STEP_CLASSES: dict[str, type[Step]] = {}  # every step by id (Step.__init_subclass__)


class Step(ABC):
    id: ClassVar[str]
    inputs: ClassVar[tuple[str, ...]] = ()
    outputs: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        STEP_CLASSES[cls.id] = cls

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


def round_fits(ctx: Context, last_round_s: float) -> bool:
    """Whether another improvement round ends before the flow's deadline (closer.physical.deadline).
    A round is expected to take `deadline.ROUND_ROUTE_FACTOR` times the Route step's time, or the
    last round's when longer (a setup-repair round may reroute in full and sign off twice). A round
    that does not fit marks the run as cut by its deadline."""
    route_s = next((step["wall_s"] for step in ctx.steps if step["step"] == "Route"), 0.0)
    return fits(ctx, max(deadline.ROUND_ROUTE_FACTOR * route_s, last_round_s))


def trial_fits(ctx: Context, steps: tuple[str, ...]) -> bool:
    """Whether a trial that runs `steps` again ends before the flow's deadline: it is expected to
    take what those steps took in this run."""
    return fits(ctx, sum(step["wall_s"] for step in ctx.steps if step["step"] in steps))


def fits(ctx: Context, expected_s: float) -> bool:
    """Whether work expected to take `expected_s` ends before the flow's deadline; work that does
    not fit is not started, and the run is marked as cut by its deadline."""
    if deadline.allows(expected_s):
        return True
    ctx.metrics[deadline.CUT_KEY] = True
    return False


def timing_sdc(ctx: Context) -> Path:
    """The canonical SDC, or one clock from config.clock_port/clock_period_ns when none was given."""
    if ctx.sdc is not None:
        return ctx.sdc
    sdc = ctx.paths.sta_dir / "clock_only.sdc"
    sdc.parent.mkdir(parents=True, exist_ok=True)
    sdc.write_text(f"create_clock -name clk -period {ctx.config.clock_period_ns} [get_ports {ctx.config.clock_port}]\n")
    return sdc


def run_steps(ctx: Context, ids: tuple[str, ...]) -> None:
    """The steps named in `ids`, in that order (callers list them in the flow's order), again on
    `ctx`: a repair's re-signing."""
    for step_id in ids:
        STEP_CLASSES[step_id]().start(ctx)
