"""The sky130hd platform as SiliconCompiler objects (closer.flow.platform's `Platform` and files
under PDK_ROOT; no lambdapdk, no network): `sc_library(platform, pdk_paths)` returns the
StdCellLibrary, its PDK attached, that the SiliconCompiler engine's tasks read."""

from __future__ import annotations

from pathlib import Path

from siliconcompiler import PDK
from siliconcompiler.tools.openroad import OpenROADPDK, OpenROADStdCellLibrary
from siliconcompiler.tools.yosys import YosysStdCellLibrary

from closer.flow.platform import Platform, dont_use_cells, load_platform
from closer.pdk import PdkPaths, pdk


def sc_library(platform: Platform | None = None, pdk_paths: PdkPaths | None = None):
    """The SiliconCompiler StdCellLibrary for the sky130hd platform, its PDK attached."""
    return Sky130HdLibrary(platform, pdk_paths)


def _resolve(platform: Platform | None, pdk_paths: PdkPaths | None) -> tuple[Platform, PdkPaths]:
    return platform or load_platform(), pdk_paths or pdk()


# SiliconCompiler pickles these objects into node processes and re-creates them from manifests by
# class path, so they are module-level classes whose constructors take no required arguments.
class Sky130HdPdk(OpenROADPDK, PDK):
    def __init__(self, platform: Platform | None = None, pdk_paths: PdkPaths | None = None) -> None:
        super().__init__()
        platform, pdk_paths = _resolve(platform, pdk_paths)
        info = platform.platform
        self.set_name(f"{info.name}_pdk")
        self.set_foundry("skywater")
        self.set_stackup(info.stackup)
        self.set_node(info.node_nm)
        self.set_dataroot("pdk_root", str(pdk_paths.root))
        with self.active_dataroot("pdk_root"), self.active_fileset("views.lef"):
            self.add_file(str(pdk_paths.tech_lef.relative_to(pdk_paths.root)), filetype="lef")
            self.add_aprtechfileset("openroad")
        self.set_aprroutinglayers(min="met1", max="met5")


class Sky130HdLibrary(YosysStdCellLibrary, OpenROADStdCellLibrary):
    def __init__(self, platform: Platform | None = None, pdk_paths: PdkPaths | None = None) -> None:
        super().__init__()
        platform, pdk_paths = _resolve(platform, pdk_paths)
        info = platform.platform
        lib_rel = Path(info.pdk) / "libs.ref" / info.library
        self.set_name(info.name)
        self.add_asic_pdk(Sky130HdPdk(platform, pdk_paths))
        self.add_asic_site(info.site)
        self.set_dataroot("pdk_root", str(pdk_paths.root))
        with self.active_dataroot("pdk_root"):
            for corner in platform.corners:
                with self.active_fileset(f"models.timing.{corner}.{info.delay_model}"):
                    self.add_file(str(lib_rel / "lib" / f"{info.library}__{corner}.lib"),
                                  filetype="liberty")
                    self.add_asic_libcornerfileset(corner, info.delay_model)
            with self.active_fileset("models.physical"):
                self.add_file(str(pdk_paths.cell_lef.relative_to(pdk_paths.root)), filetype="lef")
                self.add_file(str(pdk_paths.gds.relative_to(pdk_paths.root)), filetype="gds")
                self.add_asic_aprfileset()
            with self.active_fileset("models.sim"):
                for model in pdk_paths.verilog_models:
                    self.add_file(str(model.relative_to(pdk_paths.root)), filetype="verilog")
        for kind, cells in platform.cells.items():
            self.add_asic_celllist(kind, cells)
        self.add_asic_celllist("dontuse", dont_use_cells(pdk_paths, info.name))
        syn = platform.synthesis
        self.set_yosys_driver_cell(syn.driver_cell)
        self.set_yosys_buffer_cell(*syn.buffer_cell)
        self.set_yosys_tielow_cell(*syn.tielow_cell)
        self.set_yosys_tiehigh_cell(*syn.tiehigh_cell)
        self.set_yosys_abc(syn.abc_clock_multiplier, syn.abc_load_ff)
