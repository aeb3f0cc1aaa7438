"""The register-correspondence miter (closer.tasks.lec_miter) with real Yosys and ABC: two small
modules written by Yosys as and/not gates and flip-flops, the miter proven or refuted by
yosys-abc's `&cec`. Two-way: a register the netlist renamed pairs by its next-state function and
the miter is proven; with that function changed it stays unpaired and the miter is refuted.
Cells the miter does not take and ports that differ are refused with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from closer.procs import Command, run
from closer.tasks.lec import parse_cec_log
from closer.tasks.lec_miter import MiterError, build_miter
from closer.toolchain import search_path
from tests.conftest import require_tool

GOLD = """module top(input clk, input d, input e, output q, output [1:0] s);
  reg r; reg [1:0] c;
  always @(posedge clk) begin r <= d & e; c <= c + {1'b0, d}; end
  assign q = ~r; assign s = c;
endmodule
"""
# the same registers under other names: `r` is `_07_` (as a netlist names an instance's output)
GATE = """module top(input clk, input d, input e, output q, output [1:0] s);
  reg _07_; reg [1:0] c;
  always @(posedge clk) begin _07_ <= ~(~e | ~d); c[0] <= c[0] ^ d; c[1] <= c[1] ^ (c[0] & d); end
  assign q = ~_07_; assign s = c;
endmodule
"""


def _json(tmp_path: Path, gold: str, gate: str) -> Path:
    require_tool("yosys")
    (tmp_path / "gold.v").write_text(gold)
    (tmp_path / "gate.v").write_text(gate)
    script = "\n".join([
        "read_verilog gold.v", "proc", "techmap", "aigmap", "rename top gold", "design -stash gold",
        "read_verilog gate.v", "proc", "techmap", "aigmap", "rename top gate", "design -stash gate",
        "design -copy-from gold -as gold gold", "design -copy-from gate -as gate gate", "write_json pair.json"])
    (tmp_path / "pair.ys").write_text(script + "\n")
    run(Command(["yosys", "-q", "-s", "pair.ys"], cwd=tmp_path, env={"PATH": search_path()}, timeout_s=60),
        tmp_path / "yosys.log")
    return tmp_path / "pair.json"


def _cec(tmp_path: Path, miter: Path) -> str:
    done = run(Command(["yosys-abc", "-c", f"&r {miter}; &cec -m"], cwd=tmp_path, env={"PATH": search_path()},
                       timeout_s=60), tmp_path / "cec.log", check=False)
    return parse_cec_log(done.log.read_text())


def test_renamed_register_pairs_by_signature_and_is_proven(tmp_path: Path) -> None:
    cut = build_miter(_json(tmp_path, GOLD, GATE), tmp_path / "m.aig")
    assert (cut.pairs_by_name, cut.pairs_by_signature) == (2, 1), cut.summary()
    assert ("r", "_07_", "signature") in cut.pairs and not cut.unpaired_gold
    assert _cec(tmp_path, tmp_path / "m.aig") == "equivalent"


def test_changed_next_state_stays_unpaired_and_is_refuted(tmp_path: Path) -> None:
    cut = build_miter(_json(tmp_path, GOLD, GATE.replace("~(~e | ~d)", "~(~e & ~d)")), tmp_path / "m.aig")
    assert cut.unpaired_gold == ["r"] and cut.unpaired_gate == ["_07_"], cut.summary()
    assert _cec(tmp_path, tmp_path / "m.aig") == "not equivalent"


def test_a_counter_bit_wrong_is_refuted(tmp_path: Path) -> None:
    cut = build_miter(_json(tmp_path, GOLD, GATE.replace("c[1] ^ (c[0] & d)", "c[1] ^ (c[0] | d)")),
                      tmp_path / "m.aig")
    assert cut.pairs_by_name == 2, "the counter's registers pair by name"
    assert _cec(tmp_path, tmp_path / "m.aig") == "not equivalent"


def test_unsupported_cells_and_differing_ports_are_refused(tmp_path: Path) -> None:
    path = _json(tmp_path, GOLD, GATE)
    design = json.loads(path.read_text())
    latch = {"type": "$_DLATCH_P_", "port_directions": {}, "connections": {"E": [2], "D": [3], "Q": [4]}}
    design["modules"]["gate"]["cells"]["l"] = latch
    (tmp_path / "latch.json").write_text(json.dumps(design))
    with pytest.raises(MiterError, match=r"cell l of type \$_DLATCH_P_"):
        build_miter(tmp_path / "latch.json", tmp_path / "m.aig")
    design["modules"]["gate"]["cells"].pop("l")
    design["modules"]["gate"]["ports"].pop("q")
    (tmp_path / "ports.json").write_text(json.dumps(design))
    with pytest.raises(MiterError, match="the ports differ: q output"):
        build_miter(tmp_path / "ports.json", tmp_path / "m.aig")


def test_a_combinational_loop_is_refused(tmp_path: Path) -> None:
    """An and gate fed by its own output (a loop the RTL may contain) ends the miter with the reason."""
    path = _json(tmp_path, GOLD, GATE)
    design = json.loads(path.read_text())
    gate = design["modules"]["gate"]
    and_gate = next(c for c in gate["cells"].values() if c["type"] == "$_AND_")
    and_gate["connections"]["A"] = list(and_gate["connections"]["Y"])
    (tmp_path / "loop.json").write_text(json.dumps(design))
    with pytest.raises(MiterError, match="combinational loop"):
        build_miter(tmp_path / "loop.json", tmp_path / "m.aig")
