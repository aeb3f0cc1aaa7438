"""closer.flow.direct.elaborate writes the same file as SiliconCompiler's slang Elaborate node.

Each case runs the flow up to `elaborate` with SiliconCompiler (the reference) and the direct
engine on the same sources, and compares the elaborated files byte for byte, and the diagnostics
SiliconCompiler logged with the direct engine's log. A made-up design (`quirks`) covers what the
shipped ones do not: an include folder, Verilog listed before SystemVerilog, a package, an
uninstantiated module, and string, real, bit and wide top parameters; and one of its configs
fails in both engines.
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest

from closer.designs.model import load_design
from closer.errors import ToolError
from closer.flow.direct.elaborate import elaborate
from closer.flow.direct.sources import DesignSources, design_sources
from closer.flow.paths import FlowPaths
from closer.flow.runner import run_flow
from tests.picorv32_support import picorv32_source

pytestmark = pytest.mark.slow

QUIRKS_TOML = """[design]
name = "quirks"
top = "quirks"

[sources]
rtl = ["rtl/quirks_leaf.v", "rtl/quirks_pkg.sv", "rtl/quirks.sv"]
include_dirs = ["inc"]

[clock]
port = "clk"
period_ns = 10.0

[constraints]
sdc = "quirks.sdc"

[configs.default]
parameters = {}

[configs.over]
parameters = { NAME = "hello", W = 4, FLAG = true, WIDE = 12345, SCALE = 3 }

[configs.badmode]  # an int for an enum parameter: slang errs, the default cannot be written
parameters = { MODE = 2 }
"""

QUIRKS_FILES = {
    "quirks.sdc": "create_clock -name core_clock -period 10.0 [get_ports clk]\n",
    "inc/quirks_defs.vh": "`define QUIRKS_INIT 8'h5a\n",
    "rtl/quirks_leaf.v": """// leaf: a register
module quirks_leaf #(parameter W = 8) (input wire clk, input wire [W-1:0] d, output reg [W-1:0] q);
    always @(posedge clk) q <= d;
endmodule

// never instantiated: dropped from the output
module quirks_unused (input wire a, output wire y);
    assign y = ~a;
endmodule
""",
    "rtl/quirks_pkg.sv": """package quirks_pkg;
    typedef enum logic [1:0] {MODE_A, MODE_B, MODE_C} mode_t;
endpackage
""",
    "rtl/quirks.sv": """`include "quirks_defs.vh"
/* verilator lint_off WIDTHTRUNC */
/* verilator lint_off WIDTHEXPAND */
module quirks #(
    parameter string NAME = "quirks",
    parameter quirks_pkg::mode_t MODE = quirks_pkg::MODE_A,
    parameter real SCALE = 1.5,
    parameter logic [79:0] WIDE = 80'h1,
    parameter bit FLAG = 1'b0,
    parameter int W = 8
) (
    input  logic         clk,
    input  logic [W-1:0] d,
    output logic [W-1:0] q,
    output logic [1:0]   mode,
    output logic         flag,
    output logic [7:0]   init
);
    quirks_leaf #(.W(W)) u_leaf (.clk(clk), .d(d), .q(q));
    assign mode = MODE;
    assign flag = FLAG ^ WIDE[0] ^ (NAME == "hello") ^ (SCALE > 2.0);
    assign init = `QUIRKS_INIT;
endmodule
""",
}

CASES = [
    ("gcd", "default"),
    ("picorv32", "default"),
    ("firdma", "default"),   # SystemVerilog: <top>.sv
    ("firdma", "small"),
    ("firdma", "full"),      # a string parameter (MEM_STYLE = "macro") and macros
    ("firdma", "wide"),
]


def _quirks(root: Path) -> Path:
    design = root / "quirks"
    for rel, text in {"design.toml": QUIRKS_TOML, **QUIRKS_FILES}.items():
        (design / rel).parent.mkdir(parents=True, exist_ok=True)
        (design / rel).write_text(text)
    return design


def _reference(design: str | Path, config: str, out: Path):
    """SiliconCompiler's elaborate node folder for the design and config (ToolError on failure)."""
    run_flow(str(design), config, to="elaborate", out=out, engine="sc")
    return FlowPaths(out, load_design(design)[0].name).node_dir("elaborate")


def _sources(design: str | Path, config: str) -> DesignSources:
    loaded, paths = load_design(design)
    return design_sources(loaded, paths, config)


def _logged_diagnostics(node: Path) -> list[str]:
    """The warning and error lines SiliconCompiler's node logged (`| LEVEL | job | step | index |
    message`)."""
    lines = []
    for line in (node / "sc_elaborate_0.log").read_text().splitlines():
        fields = line.split(" | ", 4)
        if len(fields) == 5 and fields[0].strip("| ") in ("WARNING", "ERROR"):
            lines.append(fields[4])
    return lines


def _direct(sources: DesignSources, tmp_path: Path) -> tuple[bool, Path, str]:
    output = tmp_path / "direct" / sources.elaborated_name
    output.parent.mkdir(parents=True, exist_ok=True)
    log = io.StringIO()
    ok = elaborate(sources, output, log)
    return ok, output, log.getvalue()


def _assert_same_as_reference(design: str | Path, config: str, tmp_path: Path) -> None:
    node = _reference(design, config, tmp_path / "sc_run")
    sources = _sources(design, config)
    ok, output, log = _direct(sources, tmp_path)
    assert ok, log
    assert "Error:" not in log
    reference = node / "outputs" / sources.elaborated_name
    assert output.read_bytes() == reference.read_bytes(), f"{output} differs from {reference}"
    diagnostics = [line for line in log.splitlines()
                   if not line.startswith(("runtime arguments:", "Number of "))]
    assert diagnostics == _logged_diagnostics(node)


@pytest.mark.parametrize(("design", "config"), CASES, ids=[f"{d}-{c}" for d, c in CASES])
def test_byte_identical_to_siliconcompiler(design, config, tmp_path):
    if design == "picorv32":
        picorv32_source()   # fetched from the pinned package bootstrap installs
    _assert_same_as_reference(design, config, tmp_path)


@pytest.mark.parametrize("config", ["default", "over"])
def test_quirks_byte_identical_to_siliconcompiler(config, tmp_path):
    _assert_same_as_reference(_quirks(tmp_path), config, tmp_path)


def test_quirks_keeps_reachable_code_and_rewrites_overridden_defaults(tmp_path):
    ok, output, log = _direct(_sources(_quirks(tmp_path), "over"), tmp_path)
    assert ok, log
    text = output.read_text()
    assert output.name == "quirks.sv"
    assert text.index("package quirks_pkg") < text.index("module quirks #") \
        < text.index("module quirks_leaf")            # SystemVerilog files first, as SC lists them
    assert "quirks_unused" not in text
    assert "`include" not in text and "8'h5a" in text
    for default in ('NAME = "hello"', "SCALE = 3", "WIDE = 80'h3039", "FLAG = 1'h1", "W = 32'sh4",
                    "MODE = quirks_pkg::MODE_A"):  # MODE not overridden: its source default
        assert default in text


def test_a_failing_config_fails_in_both_engines(tmp_path):
    design = _quirks(tmp_path)
    with pytest.raises(ToolError, match="elaborate"):
        _reference(design, "badmode", tmp_path / "sc_run")
    ok, _, log = _direct(_sources(design, "badmode"), tmp_path)
    assert not ok
    assert "Error: cannot rewrite the default of top parameter 'MODE'" in log
    assert "error: no implicit conversion from 'int' to 'mode_t'" in log


def test_syntax_error_fails(tmp_path):
    bad = tmp_path / "gcd.v"
    bad.write_text("module gcd(input a, output b);\n  assign b = a +;\nendmodule\n")
    sources = dataclasses.replace(_sources("gcd", "default"), rtl=(bad,), params=())
    ok, _, log = _direct(sources, tmp_path)
    assert not ok
    assert f"{bad}:2:17: error: expected expression" in log
    assert "Error: slang reported 1 error(s)" in log


def test_unknown_top_fails(tmp_path):
    sources = dataclasses.replace(_sources("gcd", "default"), top="no_such_top")
    ok, _, log = _direct(sources, tmp_path)
    assert not ok
    assert "error: 'no_such_top' is not a valid top-level module" in log
    assert "Error:" in log


def test_missing_source_fails(tmp_path):
    sources = dataclasses.replace(_sources("gcd", "default"), rtl=(tmp_path / "none.v",))
    ok, _, log = _direct(sources, tmp_path)
    assert not ok
    assert f"Error: source file not found: {tmp_path / 'none.v'}" in log
