"""Hard macros of a design config through the flow's front half and its hand-off to the physical
flow (closer.flow.macros): firdma `full` with its SKY130 SRAM through lint, synthesis and STA with
the real tools; bad `macros` / `macro_placements` refused with a one-line error naming the file and
key; the placements reaching PhysicalConfig."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from closer.designs.model import load_design
from closer.errors import InputError, ToolError
from closer.flow import metrics
from closer.flow.macros import blackbox_verilog, netlist_instances, resolve_instance, sc_macro_library
from closer.flow.paths import FlowPaths
from closer.flow.platform import load_platform
from closer.flow.runner import run_flow
from closer.paths import repo_paths, schema_path
from closer.pdk import liberty_corner
from tests.conftest import require_tool

SRAM = "sky130_sram_2kbyte_1rw1r_32x512_8"
SRAM_AREA = 284538.474          # its Liberty `area` (683.1 x 416.54 um LEF)
INSTANCE = "u_buf.u_mem.g_macro.g_bank[0].u_sram"          # design.toml
NETLIST_INSTANCE = "u_buf/u_mem/g_macro.g_bank[0].u_sram"  # the flow's netlist
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def firdma_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "firdma"
    shutil.copytree(repo_paths().design_dir("firdma"), dest)
    return dest


def _edit(folder: Path, old: str, new: str) -> Path:
    toml = folder / "design.toml"
    text = toml.read_text()
    assert old in text
    toml.write_text(text.replace(old, new))
    return toml


# --- design.toml: macros and placements ------------------------------------------------------

def test_firdma_full_declares_its_sram_and_placement():
    config = load_design("firdma")[0].config("full")
    assert config.macros == [SRAM]
    (placement,) = config.macro_placements
    assert (placement.instance, placement.orient, placement.halo_um) == (INSTANCE, "N", 40.0)
    assert load_design("firdma")[0].config("small").macros == []


@pytest.mark.parametrize("old, new, message", [
    (f'macros = ["{SRAM}"]', 'macros = ["sky130_sram_9kbyte_nosuch"]',
     r"key configs\.full\.macros\[0\]: unknown macro 'sky130_sram_9kbyte_nosuch': no LEF and Liberty in "
     r".*sky130_sram_macros \(known: sky130_sram_1kbyte_1rw1r_32x256_8, " + SRAM + r"\)"),
    ('orient = "N"', 'orient = "E"', r"key configs\.full\.macro_placements\.0\.orient: Input should be "
                                     r"'N' or 'FS'"),
    ("y_um = 40.0", "y_um = -5.0", r"key configs\.full\.macro_placements\.0\.y_um: Input should be "
                                    r"greater than or equal to 0"),
    ("halo_um = 40.0", 'halo_um = "10"', r"key configs\.full\.macro_placements\.0\.halo_um: Input should "
                                         r"be a valid number"),
    ("x_um = 40.0", "x_um = 40.0\nwidth_um = 3.0", r"macro_placements\.0\.width_um: Extra inputs"),
    (f'macros = ["{SRAM}"]', f'macros = ["{SRAM}", "{SRAM}"]', r"macros: Value error, a macro is listed twice"),
    (f'macros = ["{SRAM}"]', "", r"key configs\.full: Value error, macro_placements without macros"),
])
def test_bad_macros_name_the_file_and_key(firdma_copy: Path, old, new, message):
    toml = _edit(firdma_copy, old, new)
    with pytest.raises(InputError, match=message) as info:
        load_design(firdma_copy)
    assert str(toml) in str(info.value) and "\n" not in str(info.value)


def test_cli_refuses_an_unknown_macro_with_exit_2(firdma_copy: Path, tmp_path: Path):
    toml = _edit(firdma_copy, f'macros = ["{SRAM}"]', 'macros = ["sky130_sram_nosuch"]')
    done = subprocess.run([sys.executable, "-m", "closer", "flow", "run", str(firdma_copy), "--config", "full",
                           "--to", "sta", "--out", str(tmp_path / "run")], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert str(toml) in lines[0] and "key configs.full.macros[0]: unknown macro 'sky130_sram_nosuch'" in lines[0]
    assert not (tmp_path / "run" / "sc").exists()  # refused before any tool ran


# --- the PDK's abstracts as flow inputs ------------------------------------------------------

def test_liberty_corner_names(pdk_paths):
    assert liberty_corner(f"{SRAM}_TT_1p8V_25C.lib") == "tt_025C_1v80"
    assert liberty_corner("m_FF_1p95V_n40C.lib") == "ff_n40C_1v95"
    assert liberty_corner("m_SS_1p6V_100C.lib") == "ss_100C_1v60"
    assert liberty_corner("sky130_fd_sc_hd__ff_n40C_1v95.lib") == "ff_n40C_1v95"
    assert liberty_corner("sram.lib") is None
    sram = pdk_paths.macro(SRAM)
    assert list(sram.liberty_files) == ["tt_025C_1v80"] and sram.area_um2 == SRAM_AREA
    assert sram.liberty_for("ss_100C_1v60") == sram.liberty_files["tt_025C_1v80"]
    assert pdk_paths.macro("sky130_sram_nosuch") is None


def test_macro_library_maps_every_corner_to_the_tt_liberty(pdk_paths):
    platform = load_platform()
    library = sc_macro_library(pdk_paths.macro(SRAM), list(platform.corners), "nldm", pdk_paths)
    for corner in platform.corners:
        (fileset,) = library.get("asic", "libcornerfileset", corner, "nldm")
        assert fileset == "models.timing.tt_025C_1v80.nldm"
    (liberty,) = library.find_files("fileset", "models.timing.tt_025C_1v80.nldm", "file", "liberty")
    assert Path(liberty).name == f"{SRAM}_TT_1p8V_25C.lib"
    assert library.get("asic", "aprfileset") == ["models.physical"]


def test_blackbox_has_the_lef_signal_ports(pdk_paths):
    text = blackbox_verilog(SRAM, pdk_paths.macro(SRAM).lef)
    ports = dict((name, (direction, width)) for direction, width, name in
                 re.findall(r"(input|output) wire (?:\[(\d+):0\] )?(\w+)", text))
    assert ports == {"din0": ("input", "31"), "addr0": ("input", "8"), "addr1": ("input", "8"),
                     "csb0": ("input", ""), "csb1": ("input", ""), "web0": ("input", ""),
                     "clk0": ("input", ""), "clk1": ("input", ""), "wmask0": ("input", "3"),
                     "dout0": ("output", "31"), "dout1": ("output", "31")}
    assert "vccd1" not in text and "(* blackbox *)" in text


def test_placement_instances_resolve_to_netlist_names():
    netlist = (f"  {SRAM} \\{NETLIST_INSTANCE}  (\n    .clk0(clk),\n  sky130_fd_sc_hd__buf_1 _1_ (\n"
               f"  {SRAM} other (\n")
    found = netlist_instances(netlist, {SRAM})
    assert found == {NETLIST_INSTANCE: SRAM, "other": SRAM}
    assert resolve_instance(INSTANCE, found) == NETLIST_INSTANCE
    assert resolve_instance(NETLIST_INSTANCE, found) == NETLIST_INSTANCE
    assert resolve_instance("u_buf.u_mem.u_sram", found) is None


def test_placements_reach_the_physical_config(tmp_path: Path):
    from closer.flow.pnr_task import PnrTask
    from closer.physical.floorplan.macros import MacroPlacement

    config = load_design("firdma")[0].config("full")
    node = PnrTask()
    node.set_macros(config.macros, config.macro_placements, step=None, index=None)
    netlist = tmp_path / "firdma.vg"
    netlist.write_text(f"module firdma ();\n  {SRAM} \\{NETLIST_INSTANCE}  (\n  );\nendmodule\n")
    physical = node._physical_config(node._placed_macros(netlist))
    assert physical.macros == (MacroPlacement(NETLIST_INSTANCE, 40.0, 40.0, "N", 40.0),)
    netlist.write_text(f"module firdma ();\n  {SRAM} \\u_other  (\n  );\nendmodule\n")
    with pytest.raises(ValueError, match=r"no instance 'u_buf\.u_mem.*its macro instances: u_other"):
        node._placed_macros(netlist)
    assert PnrTask()._physical_config().macros == ()


# --- metrics ---------------------------------------------------------------------------------

def test_synth_metrics_split_macros_from_stdcells(tmp_path: Path):
    stat = {"design": {"area": 1000.0 + SRAM_AREA, "num_cells": 11, "sequential_area": 10.0,
                       "num_port_bits": 4, "num_cells_by_type": {SRAM: 1, "sky130_fd_sc_hd__buf_1": 10}}}
    (tmp_path / "stat.json").write_text(json.dumps(stat))
    out = metrics.synth_metrics(tmp_path / "stat.json", {SRAM: SRAM_AREA})
    assert out["synth__design__instance__count__macros"] == 1
    assert out["synth__design__instance__area__macros"] == SRAM_AREA
    assert out["synth__design__instance__area__stdcell"] == pytest.approx(1000.0)
    assert out["synth__design__instance__count__stdcell"] == 10
    assert out["synth__design__instance__area"] == 1000.0 + SRAM_AREA
    plain = metrics.synth_metrics(tmp_path / "stat.json")   # a config without macros
    assert plain["synth__design__instance__count__macros"] == 0
    assert plain["synth__design__instance__area__stdcell"] == plain["synth__design__instance__area"]


def test_sta_metrics_record_the_macro_liberty_corner(tmp_path: Path):
    from closer.flow.direct.sta import parse_sta_report

    raw = parse_sta_report((Path(__file__).parent / "fixtures" / "flow" / "gcd_sta.report.txt").read_text())
    lib = f"/pdk/sky130_sram_macros/lib/{SRAM}_TT_1p8V_25C.lib"
    raw["macro_liberty"] = {c: [lib] for c in ("ss_100C_1v60", "tt_025C_1v80", "ff_n40C_1v95")}
    (tmp_path / "sta.json").write_text(json.dumps(raw))
    out = metrics.sta_metrics(tmp_path / "sta.json", load_platform())
    assert out[metrics.MACRO_LIBERTY_CORNER] == {"ff_n40C_1v95": "tt_025C_1v80", "ss_100C_1v60": "tt_025C_1v80",
                                                 "tt_025C_1v80": "tt_025C_1v80"}
    raw["macro_liberty"] = {}
    (tmp_path / "sta.json").write_text(json.dumps(raw))
    assert metrics.MACRO_LIBERTY_CORNER not in metrics.sta_metrics(tmp_path / "sta.json", load_platform())


# --- the real tools --------------------------------------------------------------------------

@pytest.mark.slow
def test_firdma_full_through_synthesis_and_sta_with_its_sram(tmp_path: Path, pdk_paths, no_flow_reuse):
    """lint (black box), synthesis (the SRAM a kept black-box instance, its Liberty area counted)
    and three-corner STA (the SRAM's own arcs in the reports, its TT Liberty at every corner)."""
    for tool in ("verilator", "yosys", "sta"):
        require_tool(tool)
    result = run_flow("firdma", config="full", to="sta", out=tmp_path)
    assert [s.name for s in result.steps] == ["lint", "elaborate", "synth", "sta"]
    paths = FlowPaths(tmp_path, "firdma")
    netlist = (paths.node_dir("synth") / "outputs" / "firdma.vg").read_text()
    assert netlist_instances(netlist, {SRAM}) == {NETLIST_INSTANCE: SRAM}
    assert f"module {SRAM}" not in netlist  # a black-box cell, never a module of its own
    meta = json.loads(paths.metadata.read_text())
    jsonschema.validate(meta, json.loads(schema_path("flow-metadata").read_text()))
    assert meta["synth__design__instance__count__macros"] == 1
    assert meta["synth__design__instance__area__macros"] == SRAM_AREA
    assert meta["synth__design__instance__area"] == pytest.approx(
        meta["synth__design__instance__area__stdcell"] + SRAM_AREA)
    assert 60_000 < meta["synth__design__instance__area__stdcell"] < 150_000
    assert meta["closer__sta__macro_liberty_corner"] == {c: "tt_025C_1v80" for c in
                                                         ("ss_100C_1v60", "tt_025C_1v80", "ff_n40C_1v95")}
    assert meta["closer__timing__unconstrained_endpoints"] == 0  # the SRAM's unused dout0 is no endpoint
    sta_dir = paths.node_dir("sta") / "reports"
    timed = [r.name for r in sorted(sta_dir.glob("*.rpt")) if f"{NETLIST_INSTANCE}/" in r.read_text()
             and r.name.startswith(("setup", "hold"))]
    assert timed, "no worst path through the SRAM's pins at any corner"
    sta_raw = json.loads((sta_dir / "sta.json").read_text())
    assert all(Path(f).name == f"{SRAM}_TT_1p8V_25C.lib" for files in sta_raw["macro_liberty"].values()
               for f in files)
    for corner in ("ss_100C_1v60", "tt_025C_1v80"):
        assert meta[f"synth__timing__setup__ws__corner__{corner}"] > 0


@pytest.mark.slow
def test_without_its_macros_the_config_fails_at_lint(firdma_copy: Path, tmp_path: Path, no_flow_reuse):
    """The other way round: the same RTL with `macros` left out has no definition of the SRAM."""
    require_tool("verilator")
    _edit(firdma_copy, f'macros = ["{SRAM}"]\n', "")
    text = (firdma_copy / "design.toml").read_text()
    (firdma_copy / "design.toml").write_text(text[:text.index("[[configs.full.macro_placements]]")]
                                             + text[text.index("[configs.wide]"):])
    with pytest.raises(ToolError, match=rf"step lint \(verilator\) failed(.|\n)*MODMISSING(.|\n)*{SRAM}"):
        run_flow(firdma_copy, config="full", to="sta", out=tmp_path)
