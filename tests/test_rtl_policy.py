"""The RTL policy (closer.tasks.rtl_policy) with pyslang, and the defines every consumer reads the
RTL with: each rule two-way, the golden designs pass, and the `ifdef SYNTHESIS` trick against LEC
with the real Yosys."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from closer.tasks import lec, rtl_policy
from closer.tasks.rtl_policy import check_rtl

from tests.conftest import require_tool

MODULE = "module m(input wire clk, output reg [7:0] y);\n{body}\nendmodule\n"


def _check(tmp_path: Path, body: str, extra: dict[str, str] | None = None, surface=None) -> list[str]:
    rtl = tmp_path / "rtl"
    rtl.mkdir(parents=True, exist_ok=True)
    (rtl / "m.v").write_text(MODULE.format(body=body))
    for rel, text in (extra or {}).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return [str(v) for v in check_rtl([Path("rtl/m.v")], tmp_path, surface)]


@pytest.mark.parametrize("call", [
    '$fopen("x.json", "w")', '$fwrite(1, "{}")', '$fdisplay(1, "x")', '$fstrobe(1, "x")', '$fmonitor(1, y)',
    '$readmemh("m.hex", mem)', '$readmemb("m.bin", mem)', '$writememh("m.hex", mem)', '$system("ls")',
    '$dumpfile("w.vcd")', '$dumpvars', '$fread(y, 1)', '$fscanf(1, "%d", y)', '$fgets(s, 1)',
    '$value$plusargs("X=%d", y)', '$sdf_annotate("x.sdf")', '$my_vpi_task(1)'])
def test_refused_system_tasks_name_file_line_construct(tmp_path: Path, call: str) -> None:
    body = f"  reg [7:0] mem [0:3]; reg [8*8:1] s;\n  initial begin\n    {call};\n  end"
    found = _check(tmp_path, body)
    name = call.split("(")[0]
    assert found and found[0].startswith(f"rtl/m.v:4: {name}: "), found
    assert "not allowed in the design" in found[0]


def test_allowed_system_tasks_and_hidden_text_pass(tmp_path: Path) -> None:
    """Console output, math, assertions; and $fopen only in comments, strings or disabled code."""
    body = """  localparam W = $clog2(256);
  // $fopen("x.json") in a comment
  /* $fwrite(f, "x") */
  initial begin
    $display("$fopen(%d) in a string", W);
    if ($signed(y) < 0) $error("negative");
    $finish;
  end
`ifdef CLOSER_NEVER_DEFINED
  initial $system("rm -rf /");
`endif"""
    assert _check(tmp_path, body) == []


def test_macro_built_system_task_is_found_where_used(tmp_path: Path) -> None:
    body = "`define OPEN $fo``pen\n  integer f;\n  initial f = `OPEN(\"r.json\", \"w\");"
    found = _check(tmp_path, body)
    assert len(found) == 1 and found[0].startswith("rtl/m.v:4: $fopen: "), found


def test_code_slang_cannot_parse_is_refused(tmp_path: Path) -> None:
    """Tokens the parser skips after a syntax error are not checked one by one: refuse the file."""
    found = _check(tmp_path, '  initial begin $fopen("r.json", "w") ) ; end\n  wire [ x;')
    assert found and any(": syntax: slang (the flow's front end) cannot parse this" in f for f in found), found
    assert _check(tmp_path, "  wire [7:0] x = 8'd3;\n  specify $setup(x, posedge clk, 1); endspecify") == []


@pytest.mark.parametrize("pragma", ["// synopsys translate_off", "/* synthesis translate_on */",
                                    "// pragma translate_off", "//synthesis_off"])
def test_synthesis_pragma_comments_are_refused(tmp_path: Path, pragma: str) -> None:
    found = _check(tmp_path, f"  {pragma}\n  initial y = 1;")
    assert len(found) == 1 and found[0].startswith("rtl/m.v:2: // ") and "synthesis pragma" in found[0], found
    # ordinary comments that mention the words, and attributes, are fine
    assert _check(tmp_path, "  // no translate_off here: the block is synthesizable\n  (* keep *) wire w;") == []


def test_dpi_is_refused(tmp_path: Path) -> None:
    found = _check(tmp_path, '  import "DPI-C" function int host_call(input int x);')
    assert len(found) == 1 and found[0].startswith("rtl/m.v:2: DPI: "), found
    assert _check(tmp_path, "  function int inside_call(input int x); return x; endfunction") == []


@pytest.mark.parametrize("include, problem", [
    ('"/etc/passwd.vh"', "absolute include paths are not allowed"),
    ('"../hidden/solution/rtl/gcd.v"', "`..` in an include path"),
    ("<defs.vh>", "system includes are not allowed"),
    ('"missing.vh"', "was not found"),
    ('"notes.txt"', "must end in one of"),
])
def test_includes_from_outside_are_refused(tmp_path: Path, include: str, problem: str) -> None:
    found = _check(tmp_path / "ws", f"`include {include}", {"notes.txt": "x", "hidden/solution/rtl/gcd.v": ""})
    assert len(found) == 1 and found[0].startswith("rtl/m.v:2: `include") and problem in found[0], found


def test_include_symlink_and_surface(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (tmp_path / "secret.vh").write_text("`define SECRET 1\n")
    (ws / "rtl").mkdir(parents=True)
    (ws / "rtl" / "link.vh").symlink_to(tmp_path / "secret.vh")
    found = _check(ws, '`include "link.vh"')
    assert len(found) == 1 and "symlink" in found[0], found
    # the workspace's own header, in the surface: taken; outside the surface: refused
    (ws / "rtl" / "link.vh").unlink()
    extra = {"rtl/defs.vh": "`define W 8\n", "docs/defs.vh": "`define W 8\n"}
    assert _check(ws, '`include "defs.vh"\n  wire [`W-1:0] w;', extra, ["rtl/*"]) == []
    (ws / "rtl" / "defs.vh").unlink()
    found = _check(ws, '`include "../docs/defs.vh"', None, ["rtl/*"])
    assert found and "`.." in found[0]


@pytest.mark.parametrize("macro", ["SYNTHESIS", "YOSYS", "VERILATOR", "__ICARUS__", "COCOTB_SIM", "FUNCTIONAL"])
def test_tool_macro_tests_are_refused(tmp_path: Path, macro: str) -> None:
    found = _check(tmp_path, f"`ifdef {macro}\n  initial y = 1;\n`else\n  initial y = 2;\n`endif")
    assert len(found) == 1 and found[0].startswith(f"rtl/m.v:2: `ifdef {macro}: {macro} is predefined by"), found
    found = _check(tmp_path, f"`ifndef FOO\n`elsif {macro}\n`endif")
    assert len(found) == 1 and f"`elsif {macro}" in found[0], found
    # a macro of the design's own (an include guard, a width) is fine
    assert _check(tmp_path, "`ifndef M_VH\n`define M_VH\n`endif\n`define WIDTH 8\n  wire [`WIDTH-1:0] w;") == []


def test_verilator_and_slang_predefines_are_all_known(tmp_path: Path) -> None:
    """Every macro Verilator predefines (`-E --dump-defines`) and slang's `__slang__` are in the
    refused set, so a test of one of them cannot make the flow's lint read other code."""
    verilator = require_tool("verilator")
    (tmp_path / "e.v").write_text("module e; endmodule\n")
    out = subprocess.run([verilator, "-E", "--dump-defines", str(tmp_path / "e.v")], capture_output=True,
                         text=True, check=True).stdout
    names = {line.split()[1] for line in out.splitlines() if line.startswith("`define ")}
    assert names and names <= rtl_policy.TOOL_MACROS, names - rtl_policy.TOOL_MACROS
    found = _check(tmp_path, "`ifdef __slang__\n`endif")
    assert found and "__slang__" in found[0]


def test_golden_designs_pass(repo) -> None:
    for files in (["designs/gcd/rtl/gcd.v"], ["designs/gcd/weak/rtl/gcd.v"],
                  sorted(p.relative_to(repo.root).as_posix() for p in (repo.root / "designs/firdma/rtl").glob("*.sv"))):
        assert check_rtl([Path(f) for f in files], repo.root) == [], files


def test_not_a_regular_file_is_a_violation(tmp_path: Path) -> None:
    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "m.v").symlink_to("/etc/hostname")
    found = [str(v) for v in check_rtl([Path("rtl/m.v"), Path("rtl/none.v")], tmp_path)]
    assert found == ["rtl/m.v:0: file: not a regular file (symlink, missing or special)",
                     "rtl/none.v:0: file: not a regular file (symlink, missing or special)"]


# --- the same defines for LEC as for the flow and simulation: the `ifdef SYNTHESIS` trick ---

TRICK_RTL = """module inv(input wire a, output wire y);
`ifdef SYNTHESIS
  assign y = a;
`else
  assign y = ~a;
`endif
endmodule
"""

INV_NETLIST = """module inv(a, y);
  input a;
  output y;
  sky130_fd_sc_hd__inv_1 u0 (.A(a), .Y(y));
endmodule
"""


def test_lec_reads_the_rtl_without_synthesis_defined(pdk_paths, tmp_path: Path) -> None:
    """The flow (slang) and the simulator see the `else` branch (y = ~a) and synthesize an
    inverter; LEC used to read the SYNTHESIS branch (Yosys's implicit define) and compare other
    code. Now LEC reads the same branch: equivalent to the inverter, not to a buffer."""
    require_tool("yosys")
    rtl, netlist = tmp_path / "inv.v", tmp_path / "inv_netlist.v"
    rtl.write_text(TRICK_RTL)
    netlist.write_text(INV_NETLIST)
    read = lec.read_rtl_lines([rtl], "inv")[0]
    assert read.startswith("read_slang ") and "SYNTHESIS" not in read
    liberty = pdk_paths.liberty("tt_025C_1v80")
    same = lec.run_lec(lec.LecJob(rtl=[rtl], top="inv", netlist=netlist, liberty=liberty, work=tmp_path / "a"))
    assert same.result == lec.EQUIVALENT, same.reason
    buffer = tmp_path / "buf_netlist.v"
    buffer.write_text(INV_NETLIST.replace("inv_1", "buf_1"))
    other = lec.run_lec(lec.LecJob(rtl=[rtl], top="inv", netlist=buffer, liberty=liberty, work=tmp_path / "b"))
    assert other.result == lec.NOT_EQUIVALENT, other.reason
    # and the policy rejects the trick outright
    assert [v.what for v in check_rtl([rtl], tmp_path)] == ["`ifdef SYNTHESIS"]


def test_lec_reads_includes_from_the_rtl_folder(pdk_paths, tmp_path: Path) -> None:
    """LEC gets the same include folders as simulation and the flow (the RTL's own folder)."""
    require_tool("yosys")
    (tmp_path / "rtl").mkdir()
    rtl, netlist = tmp_path / "rtl" / "inv.v", tmp_path / "inv_netlist.v"
    (tmp_path / "rtl" / "inv_body.vh").write_text("assign y = ~a;\n")
    rtl.write_text('module inv(input wire a, output wire y);\n`include "inv_body.vh"\nendmodule\n')
    netlist.write_text(INV_NETLIST)
    result = lec.run_lec(lec.LecJob(rtl=[rtl], top="inv", netlist=netlist,
                                    liberty=pdk_paths.liberty("tt_025C_1v80"), work=tmp_path / "lec"))
    assert result.result == lec.EQUIVALENT, result.reason
    assert check_rtl([rtl], tmp_path) == []
