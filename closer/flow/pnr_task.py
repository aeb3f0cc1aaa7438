"""Placement, routing and signoff (closer.physical.run_physical) as one SiliconCompiler task node.

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
import traceback
from pathlib import Path

from siliconcompiler.asic import ASICTask

from closer import metrics as closer_keys

PNR_JSON = "reports/pnr.json"
PHYS_DIR = "phys"


def physical_revision() -> str:
    """SHA-256 (16 hex) over closer.physical's code and data and this module: part of the node's
    settings, so a change to the physical flow reruns `pnr` even when its netlist is unchanged."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parents[1] / "physical"
    files = [p for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    for path in [*files, Path(__file__).resolve()]:
        digest.update(str(path.relative_to(root.parent)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


class PnrTask(ASICTask):
    def __init__(self) -> None:
        super().__init__()
        self.add_parameter("physical_revision", "str",
                           "hash of closer.physical's sources (reruns the node when they change)")
        self.add_parameter("core_utilization", "float", "cell area / core area of the floorplan")
        self.add_parameter("aspect_ratio", "float", "core height / width")
        self.add_parameter("router_passes", "int", "qrouter stage2 rip-up passes")
        self.add_parameter("repair_rounds", "int", "search-and-repair batch rounds")
        self.add_parameter("timing_repair_rounds", "int", "post-route timing repair rounds")
        self.add_parameter("sdc_exceptions", "[str]", "timing exceptions the SDC may use (closer.sdc)")
        self.add_parameter("corners", "[str]", "STA corners of the signoff")
        self.add_parameter("place_seed", "int", "placer IO-order seed")
        self.add_parameter("macros", "[str]", "the config's hard macros (cell names)")
        self.add_parameter("macro_placements", "[(str,float,float,str,float)]",
                           "macro placements: (instance, x_um, y_um, orient, halo_um), from the "
                           "core's lower-left corner")

    def set_physical(self, physical, step: str, index: str) -> None:
        """The design's [physical] table (closer.designs.model.Physical)."""
        for key in ("core_utilization", "aspect_ratio", "router_passes", "repair_rounds", "timing_repair_rounds",
                    "place_seed"):
            self.set("var", key, getattr(physical, key), step=step, index=index)
        if physical.corners is not None:
            self.set("var", "corners", list(physical.corners), step=step, index=index)

    def set_sdc_exceptions(self, exceptions, step: str, index: str) -> None:
        self.set("var", "sdc_exceptions", [str(e) for e in exceptions], step=step, index=index)

    def set_macros(self, macros: list[str], placements, step: str, index: str) -> None:
        """The config's `macros` and `macro_placements` (closer.designs.model.MacroPlacementConfig)."""
        if macros:
            self.set("var", "macros", list(macros), step=step, index=index)
        if placements:
            self.set("var", "macro_placements",
                     [(p.instance, p.x_um, p.y_um, str(p.orient), p.halo_um) for p in placements],
                     step=step, index=index)

    def macro_placements(self):
        """The placements as closer.physical's MacroPlacement, in design.toml order."""
        from closer.physical.floorplan.macros import MacroPlacement

        return tuple(MacroPlacement(instance, float(x), float(y), orient, float(halo))
                     for instance, x, y, orient, halo in self.get("var", "macro_placements") or [])

    def tool(self) -> str:
        return "closer_physical"

    def task(self) -> str:
        return "pnr"

    def setup(self) -> None:
        super().setup()
        self.set("var", "physical_revision", physical_revision())
        self.add_required_key("var", "physical_revision")
        for key in ("sdc_exceptions", "macros", "macro_placements"):
            if self.get("var", key):  # SiliconCompiler refuses an empty required key
                self.add_required_key("var", key)
        self.add_input_file(ext="vg")
        self.add_output_file(ext="vg")
        self.add_output_file(ext="gds")
        self.add_output_file(ext="def")

    def _physical_config(self, macros=()):
        """The PhysicalConfig of the node's settings; `macros`: the placements with netlist names."""
        from closer.physical import PhysicalConfig
        from closer.physical.floorplan.floorplan import FloorplanConfig
        from closer.physical.place.place import PlaceConfig
        from closer.physical.repair.repair import RepairConfig
        from closer.physical.repair.sizing import SizingConfig
        from closer.physical.route.route import RouteConfig
        from closer.sdc import SdcPolicy

        util, aspect, passes, rounds = (self.get("var", k) for k in
                                        ("core_utilization", "aspect_ratio", "router_passes", "repair_rounds"))
        floorplan = FloorplanConfig(**({"density": util} if util is not None else {}),
                                    **({"aspect": aspect} if aspect is not None else {}))
        route = RouteConfig(**({"max_passes": passes} if passes is not None else {}))
        repair = RepairConfig() if rounds is None else RepairConfig(rounds=rounds, item_rounds=3 * rounds)
        timing_rounds = self.get("var", "timing_repair_rounds")
        # 0 turns the timing repair off, the rounds on the routed layout before sign-off included
        sizing = SizingConfig() if timing_rounds is None else SizingConfig(
            max_rounds=timing_rounds, routed_rounds=min(timing_rounds, SizingConfig.routed_rounds))
        policy = SdcPolicy(allow=frozenset(self.get("var", "sdc_exceptions") or []))
        seed, corners = self.get("var", "place_seed"), self.get("var", "corners")
        place = PlaceConfig(seed=seed or 0)
        extra = {"corners": tuple(corners)} if corners else {}
        return PhysicalConfig(floorplan=floorplan, place=place, route=route, repair=repair, sizing=sizing,
                              sdc_policy=policy, macros=tuple(macros), **extra)

    def _placed_macros(self, netlist: Path):
        """The placements with each instance as the netlist names it (closer.flow.macros.
        resolve_instance: `/` and `.` both separate hierarchy); ValueError when a placement names
        no instance of the config's macros."""
        from dataclasses import replace

        from closer.flow.macros import netlist_instances, resolve_instance

        placements = self.macro_placements()
        if not placements:
            return ()
        found = netlist_instances(netlist.read_text(), set(self.get("var", "macros") or []))
        out = []
        for placement in placements:
            name = resolve_instance(placement.instance, found)
            if name is None:
                raise ValueError(f"macro_placements: no instance {placement.instance!r} of the config's "
                                 f"macros in the netlist; its macro instances: "
                                 f"{', '.join(sorted(found)) or 'none'}")
            out.append(replace(placement, instance=name))
        return tuple(out)

    def _sdc_files(self) -> list[str]:
        files: list[str] = []
        for lib, fileset in self.project.get_filesets():
            files.extend(lib.find_files("fileset", fileset, "file", "sdc") or [])
        return files

    def run(self) -> int:
        top = self.design_topmodule
        sdc = self._sdc_files()
        try:
            if len(sdc) != 1:
                raise ValueError(f"expected one SDC file in the design, got {sdc}")
            macros = self._placed_macros(Path(f"inputs/{top}.vg"))
            from closer.physical import run_physical

            result = run_physical(Path(f"inputs/{top}.vg").resolve(), top, Path(sdc[0]).resolve(),
                                  Path(PHYS_DIR).resolve(),  # tools run in subdirectories
                                  self._physical_config(macros))
        except Exception as exc:  # the node fails; the message lands in the node log
            print(traceback.format_exc())
            print(f"Error: pnr: run_physical failed: {exc}")
            return 1
        Path(PNR_JSON).parent.mkdir(parents=True, exist_ok=True)
        Path(PNR_JSON).write_text(json.dumps(signoff_metrics(result.metrics), indent=1,
                                             sort_keys=True, default=str) + "\n")
        # the layout's netlist: the input with the clock tree's buffers (closer.physical.cts.cts)
        shutil.copyfile(result.netlist or f"inputs/{top}.vg", f"outputs/{top}.vg")
        shutil.copyfile(result.gds, f"outputs/{top}.gds")
        shutil.copyfile(result.def_, f"outputs/{top}.def")
        print(f"pnr: unrouted {result.metrics.get('closer__route__unrouted_nets')}, DRC "
              f"{result.metrics.get('detailedroute__route__drc_errors')} (official deck "
              f"{result.metrics.get('closer__signoff__official_drc__errors')}), antenna nets "
              f"{result.metrics.get('detailedroute__antenna__violating__nets')}, LVS opens/shorts "
              f"{result.metrics.get('closer__signoff__lvs__opens')}/"
              f"{result.metrics.get('closer__signoff__lvs__shorts')}")
        return 0


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
