"""The `pnr` node as a SiliconCompiler task (the SiliconCompiler engine's): its settings are task
parameters, its work closer.flow.direct.pnr's."""

from __future__ import annotations

import traceback
from pathlib import Path

from siliconcompiler.asic import ASICTask

from closer.flow.direct.pnr import PnrSettings, physical_config, physical_revision, placed_macros, run_pnr


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

    def settings(self) -> PnrSettings:
        def get(key):
            return self.get("var", key)
        return PnrSettings(
            core_utilization=get("core_utilization"), aspect_ratio=get("aspect_ratio"),
            router_passes=get("router_passes"), repair_rounds=get("repair_rounds"),
            timing_repair_rounds=get("timing_repair_rounds"), place_seed=get("place_seed"),
            corners=tuple(get("corners")) if get("corners") else None,
            sdc_exceptions=tuple(get("sdc_exceptions") or ()), macros=tuple(get("macros") or ()),
            macro_placements=tuple(tuple(p) for p in get("macro_placements") or ()))

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
        return physical_config(self.settings(), macros)

    def _placed_macros(self, netlist: Path):
        return placed_macros(self.settings(), netlist)

    def _sdc_files(self) -> list[str]:
        files: list[str] = []
        for lib, fileset in self.project.get_filesets():
            files.extend(lib.find_files("fileset", fileset, "file", "sdc") or [])
        return files

    def run(self) -> int:
        sdc = self._sdc_files()
        try:
            if len(sdc) != 1:
                raise ValueError(f"expected one SDC file in the design, got {sdc}")
            summary = run_pnr(Path("."), self.design_topmodule, Path(sdc[0]), self.settings())
        except Exception as exc:  # the node fails; the message lands in the node log
            print(traceback.format_exc())
            print(f"Error: pnr: run_physical failed: {exc}")
            return 1
        print(summary)
        return 0
