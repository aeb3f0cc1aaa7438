"""closer.flow.direct.synth gives the netlist and area report of SiliconCompiler's synthesis node.

Each case runs the flow up to `synth` with SiliconCompiler (the reference), then a fresh node folder
with the reference's elaborated design in `inputs/`, prepared by `prepare_synthesis` with the ABC
script the reference kept, runs the returned Yosys command, and compares `outputs/<top>.vg` and
`reports/stat.json` byte for byte. Cases: gcd (Verilog), firdma `default` (SystemVerilog through
slang), firdma `full` (its SRAM macro as a second library, and a string parameter left out of
`read_slang`), picorv32 (whose reference keeps its second ABC script). The other way round: another
ABC script or delay margin changes the netlist, a missing input fails the command; and the
preparation never imports SiliconCompiler.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tkinter
from dataclasses import dataclass
from pathlib import Path

import pytest

from closer.designs.model import load_design
from closer.errors import InputError, ToolError
from closer.flow.direct.sources import DesignSources, design_sources
from closer.flow.direct.synth import (
    _tcl, _tcl_string, abc_clock_period_ps, abc_constraints_text, prepare_synthesis,
    prepared_liberty, synthesis_liberty_files,
)
from closer.flow.macros import config_macros
from closer.flow.paths import FlowPaths
from closer.flow.platform import load_platform
from closer.flow.runner import run_flow
from tests.picorv32_support import picorv32_source
from closer.flow.settings import SynthSettings, SynthStrategy, abc_scripts
from closer.flow.tool_versions import siliconcompiler_version
from closer.pdk import pdk
from closer.procs import Command, run

ROOT = Path(__file__).resolve().parents[1]

CASES = [
    ("gcd", "default"),
    ("firdma", "default"),   # SystemVerilog: read_slang reads <top>.sv
    ("firdma", "full"),      # the SRAM macro's library; MEM_STYLE = "macro" left out of read_slang
    ("picorv32", "default"),  # the reference keeps its second ABC script (balanced+syn2)
]


@dataclass(frozen=True)
class Reference:
    paths: FlowPaths
    sources: DesignSources
    abc: str             # the ABC script of the kept attempt (the node folder's)

    @property
    def node(self) -> Path:
        return self.paths.node_dir("synth")


def _reference(design: str, config: str, out: Path) -> Reference:
    result = run_flow(design, config, to="synth", out=out, engine="sc")
    assert result.status == "ok", result.error
    loaded, paths = load_design(design)
    kept = json.loads(Path(result.metadata).read_text())["closer__synth__abc_script"]
    abc = {s.name: s.script for s in abc_scripts(loaded.physical)}[kept]
    assert (FlowPaths(out, loaded.name).node_dir("synth") / "sc_manifest.tcl").is_file()  # SC's node
    return Reference(FlowPaths(out, loaded.name), design_sources(loaded, paths, config), abc)


def _prepare(reference: Reference, design: str, config: str, node: Path, abc: str | None = None,
             settings: SynthSettings | None = None) -> Command:
    """A fresh node folder with the reference's elaborated design, prepared for synthesis."""
    loaded = load_design(design)[0]
    shutil.rmtree(node, ignore_errors=True)
    (node / "inputs").mkdir(parents=True)
    name = reference.sources.elaborated_name
    shutil.copyfile(reference.paths.node_dir("elaborate") / "outputs" / name, node / "inputs" / name)
    pdk_paths = pdk()
    macros = config_macros(loaded.config(config).macros, pdk_paths)
    return prepare_synthesis(node, reference.sources, settings or loaded.physical,
                             abc or reference.abc, load_platform(), pdk_paths, macros,
                             reference.paths.canonical_sdc)


def _outputs(node: Path, top: str) -> dict[str, bytes]:
    return {rel: (node / rel).read_bytes() for rel in (f"outputs/{top}.vg", "reports/stat.json")}


@pytest.fixture(scope="module")
def gcd_reference(tmp_path_factory) -> Reference:
    return _reference("gcd", "default", tmp_path_factory.mktemp("gcd_sc"))


# --- the same netlist as SiliconCompiler's node ----------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize(("design", "config"), CASES, ids=[f"{d}-{c}" for d, c in CASES])
def test_byte_identical_to_siliconcompiler(design, config, tmp_path, gcd_reference):
    if design == "picorv32":
        picorv32_source()   # fetched from the pinned package bootstrap installs
    reference = gcd_reference if design == "gcd" else _reference(design, config, tmp_path / "sc")
    node = tmp_path / "direct" / "synth"
    run(_prepare(reference, design, config, node), node / "synth.log")
    top = reference.sources.top
    mine, theirs = _outputs(node, top), _outputs(reference.node, top)
    for rel in mine:
        assert mine[rel] == theirs[rel], f"{node / rel} differs from {reference.node / rel}"


@pytest.mark.slow
def test_manifest_keys_hold_siliconcompilers_values(gcd_reference, tmp_path):
    """Every key the direct manifest writes has the value SiliconCompiler's manifest has, but the
    node's own paths, the flow's name and the fileset list (only its first entry is read)."""
    node = tmp_path / "direct"
    _prepare(gcd_reference, "gcd", "default", node)
    keys = [tuple(re.findall(r'"([^"]*)"', m)) for m in
            re.findall(r'^dict set sc_cfg ((?:"[^"]*" )+)', (node / "sc_manifest.tcl").read_text(), re.M)]
    assert len(keys) > 40
    mine = _values(node / "sc_manifest.tcl", keys)
    theirs = _values(gcd_reference.node / "sc_manifest.tcl",
                     [k for k in keys if k[0] not in ("flowgraph", "option") or k[1] == "optmode"])
    differ = {("tool", "yosys", "task", "syn_asic", "var", "abc_constraint_file")}
    for key, value in theirs.items():
        if key not in differ:
            assert value == mine[key], key
    assert mine[("option", "fileset")] == "rtl"
    assert mine[("tool", "yosys", "task", "syn_asic", "var", "abc_clock_period")] == "7000"
    assert (node / "inputs" / "sc_abc.constraints").read_bytes() == \
        (gcd_reference.node / "inputs" / "sc_abc.constraints").read_bytes()


def _values(manifest: Path, keys: list[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """The value of each key path in a manifest's `sc_cfg` (Tcl evaluates the file: SiliconCompiler's
    inlines its helper procs, the direct one sources them)."""
    tcl = tkinter.Tcl()
    tcl.eval(f"source {_tcl_string(str(manifest))}")
    return {key: tcl.eval("dict get $sc_cfg " + " ".join(_tcl_string(k) for k in key)) for key in keys}


# --- another input, another result -----------------------------------------------------------------

@pytest.mark.slow
def test_another_abc_script_gives_another_netlist(gcd_reference, tmp_path):
    area = abc_scripts(SynthSettings(synth_strategy=SynthStrategy.AREA))[0].script
    assert area != gcd_reference.abc
    node = tmp_path / "direct"
    run(_prepare(gcd_reference, "gcd", "default", node, abc=area), node / "synth.log")
    top = gcd_reference.sources.top
    assert _outputs(node, top)[f"outputs/{top}.vg"] != _outputs(gcd_reference.node, top)[f"outputs/{top}.vg"]


@pytest.mark.slow
def test_another_delay_margin_gives_another_target_and_netlist(gcd_reference, tmp_path):
    loaded = load_design("gcd")[0]
    settings = loaded.physical.model_copy(update={"synth_delay_margin": 0.6})
    node = tmp_path / "direct"
    run(_prepare(gcd_reference, "gcd", "default", node, settings=settings), node / "synth.log")
    assert '"var" "abc_clock_period" 4000\n' in (node / "sc_manifest.tcl").read_text()
    assert "abc -showtmp -D 4000 " in (node / "synth.log").read_text()
    top = gcd_reference.sources.top
    assert _outputs(node, top)[f"outputs/{top}.vg"] != _outputs(gcd_reference.node, top)[f"outputs/{top}.vg"]


@pytest.mark.slow
def test_a_missing_input_fails(gcd_reference, tmp_path):
    node = tmp_path / "direct"
    command = _prepare(gcd_reference, "gcd", "default", node)
    (node / "inputs" / "gcd.v").unlink()
    with pytest.raises(ToolError, match="yosys"):
        run(command, node / "synth.log")
    assert not (node / "outputs" / "gcd.vg").exists()
    with pytest.raises(InputError, match="gcd.v: the synthesis node's input"):
        _prepare_without_input(gcd_reference, node)


def _prepare_without_input(reference: Reference, node: Path) -> Command:
    loaded = load_design("gcd")[0]
    return prepare_synthesis(node, reference.sources, loaded.physical, reference.abc, load_platform(),
                             pdk(), [], reference.paths.canonical_sdc)


@pytest.mark.slow
def test_preparation_does_not_import_siliconcompiler(gcd_reference, tmp_path):
    node = tmp_path / "direct"
    _prepare(gcd_reference, "gcd", "default", node)
    (node / "sc_manifest.tcl").unlink()
    code = f"""
import sys
from pathlib import Path
from closer.designs.model import load_design
from closer.flow.direct.sources import design_sources
from closer.flow.direct.synth import prepare_synthesis
from closer.flow.platform import load_platform
from closer.pdk import pdk
design, paths = load_design("gcd")
prepare_synthesis(Path({str(node)!r}), design_sources(design, paths, "default"), design.physical,
                  {gcd_reference.abc!r}, load_platform(), pdk(), [],
                  Path({str(gcd_reference.paths.canonical_sdc)!r}))
assert Path({str(node / "sc_manifest.tcl")!r}).is_file()
print(sorted(m for m in sys.modules if m.split(".")[0] == "siliconcompiler"))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# --- the pieces, against SiliconCompiler's own ------------------------------------------------------

def test_prepared_liberty_is_liberty_preps_cache_entry(tmp_path):
    """The direct node reads the very files the SiliconCompiler engine does (their paths are in
    stat.json), though it computes their cache path without importing SiliconCompiler."""
    import siliconcompiler

    from closer.flow.liberty_prep import prepared_liberty as sc_prepared

    pdk_paths = pdk()
    macros = config_macros(load_design("firdma")[0].config("full").macros, pdk_paths)
    named = synthesis_liberty_files(load_platform(), pdk_paths, macros)
    assert [name for name, _ in named] == [
        "sc_sky130hd_sky130_fd_sc_hd__ss_100C_1v60.lib",
        "sc_sky130_sram_2kbyte_1rw1r_32x512_8_sky130_sram_2kbyte_1rw1r_32x512_8_TT_1p8V_25C.lib"]
    for name, source in named:
        assert prepared_liberty(source, name, tmp_path) == sc_prepared(source, name)
    assert siliconcompiler_version() == siliconcompiler.__version__
    assert not list(tmp_path.iterdir())   # the cache was used


def test_tcl_values_as_siliconcompiler_writes_them():
    from siliconcompiler.schema.parametertype import NodeType

    tricky = 'a$b[c]"d\\e{f} \u00fc \U0001f600'
    assert _tcl_string(tricky) == NodeType.to_tcl(tricky, "str")
    assert tkinter.Tcl().eval(f"set x {_tcl_string(tricky)}") == tricky
    assert _tcl(7000.0) == NodeType.to_tcl(7000.0, "float") == "7000"
    assert _tcl(1234.5678901234) == NodeType.to_tcl(1234.5678901234, "float")
    assert _tcl(["x", "y"]) == NodeType.to_tcl(["x", "y"], ["str"])
    assert _tcl(True) == "true" and _tcl(None) == "{}" and _tcl(0) == "0"


def test_abc_target_and_constraints():
    assert abc_clock_period_ps(10.0, 1000.0, 0.3) == 7000.0
    assert abc_clock_period_ps(20.0, 1000.0, 0.3) == 14000.0
    assert abc_clock_period_ps(None, 1000.0, 0.3) is None
    assert abc_clock_period_ps(10.0, 1000.0, 1.5) == 10000.0   # SiliconCompiler ignores it (> 1)
    assert abc_constraints_text("sky130_fd_sc_hd__buf_4", 11.0) == \
        "set_driving_cell sky130_fd_sc_hd__buf_4\nset_load 11.0"
    assert abc_constraints_text(None, 11.0) == "\nset_load 11.0"
    assert abc_constraints_text(None, None) is None
