"""Fanout trees by placement (closer.physical.repair.fanout): synthesis's buffers out, trees from the
placed sinks in, the Verilog rewritten in one pass; on the real gcd through the whole flow, proven
equivalent to the RTL by the LEC gate's Yosys run (and a perturbed netlist is not)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from closer.physical import PhysicalConfig, run_physical
from closer.physical.cts import cts
from closer.physical.io.netlist import Instance, Netlist
from closer.physical.repair import fanout
from closer.physical.repair.repair import RepairConfig

BUF = "sky130_fd_sc_hd__buf_1"


def _netlist() -> Netlist:
    inst = {
        "d": Instance("d", "sky130_fd_sc_hd__inv_1", {"A": "a", "Y": "n0"}),
        "_1_": Instance("_1_", BUF, {"A": "n0", "X": "n1"}),
        "_2_": Instance("_2_", BUF, {"A": "n1", "X": "n2"}),
        "_3_": Instance("_3_", BUF, {"A": "n0", "X": "out"}),    # drives a port: stays
        "_4_": Instance("_4_", BUF, {"A": "clk", "X": "ck"}),    # on the clock: stays
        "mine": Instance("mine", BUF, {"A": "n0", "X": "n3"}),   # named in the RTL: stays
        "s1": Instance("s1", "sky130_fd_sc_hd__inv_1", {"A": "n1", "Y": "y1"}),
        "s2": Instance("s2", "sky130_fd_sc_hd__inv_1", {"A": "n2", "Y": "y2"}),
        "s3": Instance("s3", "sky130_fd_sc_hd__nand2_1", {"A": "n2", "B": "n3", "Y": "y3"}),
        "f": Instance("f", "sky130_fd_sc_hd__dfxtp_1", {"CLK": "ck", "D": "y3", "Q": "q"}),
    }
    nets: dict[str, list[tuple[str, str]]] = {"a": [("PIN", "a")], "out": [("PIN", "out")], "clk": [("PIN", "clk")]}
    for i in inst.values():
        for pin, net in i.pins.items():
            nets.setdefault(net, []).append((i.name, pin))
    return Netlist("t", inst, {"a": "input", "out": "output", "clk": "input"}, nets,
                   original={"s3": "s3", "n0": "n0[1]", "n3": "x.y"}, vector_bits={"n0"})


def test_unbuffer_collapses_chains_and_keeps_port_clock_and_rtl_buffers():
    n = _netlist()
    removed = fanout.unbuffer(n, {"clk"})
    assert [r.name for r in removed] == ["_1_", "_2_"]
    assert set(n.instances) == {"d", "_3_", "_4_", "mine", "s1", "s2", "s3", "f"}
    assert "n1" not in n.nets and "n2" not in n.nets
    assert sorted(n.nets["n0"]) == sorted([("d", "Y"), ("_3_", "A"), ("mine", "A"), ("s1", "A"), ("s2", "A"), ("s3", "A")])
    assert n.instances["s3"].pins == {"A": "n0", "B": "n3", "Y": "y3"}
    # the Verilog moves: every surviving sink onto the root's Verilog name (a vector bit here)
    assert fanout.removed_moves(n, removed) == {"s1": {"A": "n0[1]"}, "s2": {"A": "n0[1]"}, "s3": {"A": "n0[1]"}}


def test_verilog_net_tells_vector_bits_from_escaped_scalars():
    n = _netlist()
    n.original.update({"st": "state[2]", "v": "a.b[3]"})
    n.vector_bits |= {"v"}
    assert cts.verilog_net(n, "n0") == "n0[1]"          # a bit of the vector n0
    assert cts.verilog_net(n, "st") == "\\state[2] "    # splitnets' scalar: escaped
    assert cts.verilog_net(n, "v") == "\\a.b [3]"       # a bit of an escaped vector
    assert cts.verilog_net(n, "n3") == "\\x.y "
    assert cts.verilog_net(n, "q") == "q"


VERILOG = """module t(a, out);
  input a;
  output out;
  wire \\state[2] ;
  sky130_fd_sc_hd__inv_1 d (
    .A(a),
    .Y(n0)
  );
  sky130_fd_sc_hd__buf_1 _1_ (
    .A(n0),
    .X(n1)
  );
  sky130_fd_sc_hd__nand2_1 \\s.3  (
    .A(n1),
    .B(\\state[2] ),
    .Y(out)
  );
endmodule
"""


def test_rewrite_instances_moves_pins_and_drops_instances_in_one_pass(tmp_path: Path):
    out = cts.rewrite_instances(VERILOG, {"s.3": {"A": "\\state[2] "}}, {"_1_"}, tmp_path / "t.v")
    assert "_1_" not in out and ".X(n1)" not in out
    assert "  sky130_fd_sc_hd__nand2_1 \\s.3  (\n    .A(\\state[2] ),\n    .B(\\state[2] ),\n" in out
    assert out.count("sky130_fd_sc_hd__") == 2 and out.startswith("module t(a, out);\n  input a;")
    with pytest.raises(ValueError, match="instance nope not found"):
        cts.rewrite_instances(VERILOG, {"nope": {"A": "x"}}, set(), tmp_path / "t.v")
    with pytest.raises(ValueError, match="instance d has no pin Z"):
        cts.rewrite_instances(VERILOG, {"d": {"Z": "x"}}, set(), tmp_path / "t.v")


def test_only_large_designs_are_rebuffered():
    n = _netlist()
    assert not fanout.FanoutConfig().applies(n)
    assert fanout.FanoutConfig(min_instances=0).applies(n) and not fanout.FanoutConfig(enabled=False, min_instances=0).applies(n)


# ---- the real gcd through the flow ------------------------------------------------------------

@pytest.fixture(scope="module")
def gcd_rebuffered(tmp_path_factory):
    from closer.flow.runner import run_flow

    work = tmp_path_factory.mktemp("fanout")
    run_flow("gcd", to="synth", out=work / "flow")
    netlist = next((work / "flow").rglob("synth/0/outputs/gcd.vg"))
    # the repair's rounds check DRC in windows here (large designs' setting), so the windowed path
    # runs in a real repair and its end check compares it with the whole-chip DRC
    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=10.0, fanout=fanout.FanoutConfig(min_instances=0, max_sinks=4),
                         repair=RepairConfig(windowed_min_instances=1))
    return run_physical(netlist, "gcd", None, work / "phys", cfg), netlist, work


def _lec(repo, pdk_paths, netlist: Path, work: Path) -> str:
    from closer.tasks.lec import LecJob, run_lec

    job = LecJob([(repo.design_dir("gcd") / "rtl" / "gcd.v").resolve()], "gcd", netlist.resolve(),
                 pdk_paths.liberty("tt_025C_1v80"), work)
    return run_lec(job).result


def test_gcd_rebuffered_routes_clean_and_stays_equivalent(gcd_rebuffered, repo, pdk_paths, tmp_path: Path):
    result, synthesized, _ = gcd_rebuffered
    m = result.metrics
    assert 0 < m["closer__fanout__removed"] <= synthesized.read_text().count("sky130_fd_sc_hd__buf_")
    assert m["closer__fanout__buffers"] > 0 and m["closer__fanout__levels"] >= 2
    assert m["closer__route__unrouted_nets"] == 0 and m["closer__signoff__lvs__clean"] is True
    if "closer__drc__windowed_total" in m:  # a round was kept: its windowed DRC is the whole chip's
        assert m["closer__drc__windowed_total"] == m["closer__drc__whole_total"]
    phys = result.metadata.parent
    final = Path(json.loads(result.metadata.read_text())["provenance"]["physical"]["design"]["netlist"])
    assert final.name != synthesized.name
    assert _lec(repo, pdk_paths, phys / "gcd_fanout.v", tmp_path / "fanout") == "equivalent"
    assert _lec(repo, pdk_paths, final, tmp_path / "final") == "equivalent"
    # two-way: one sink moved onto the tree of another signal is caught
    text = (phys / "gcd_fanout.v").read_text()
    roots = dict(re.findall(r"sky130_fd_sc_hd__buf_4 (fo_\d+) \(\n\s*\.A\(([^)]*)\)", text))
    first, other = "fo_0", next(b for b, root in roots.items() if root != roots["fo_0"] and not root.startswith("fo_"))
    wrong = tmp_path / "wrong.v"
    wrong.write_text(text.replace(f"(fo_net_{first[3:]})", f"(fo_net_{other[3:]})", 1))
    assert wrong.read_text() != text
    assert _lec(repo, pdk_paths, wrong, tmp_path / "wrong") == "not_equivalent"
