"""The anti-gaming gates a B/C task is scored by, each two-way with the real tools:
finish-stage DRV counts (OpenSTA 2.0.17), the unconstrained-path audit (front-half STA), LEC (Yosys)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from closer import metrics as mk
from closer.flow.runner import run_flow
from closer.physical.signoff import sta
from closer.reward import metrics_from_mapping
from closer.reward.gates import GATES, observe
from closer.reward.targets import GateName
from closer.tasks import lec
from tests.conftest import require_tool

# OpenSTA 2.0.17 `report_check_types -max_transition -all_violators` on gcd with
# `set_max_transition 0.75` and `set_load 0.5` on resp_msg (recorded 2026-11-30, shortened)
RECORDED_MAX_TRANSITION = """\
max_transition

Pin                                    Limit   Trans   Slack
------------------------------------------------------------
resp_msg[10]                            0.75    4.73   -3.98 (VIOLATED)
_279_/A                                 0.75    4.73   -3.98 (VIOLATED)
resp_msg[10]$_SDFFE_PP0P_/Q             0.75    4.73   -3.98 (VIOLATED)

"""
RECORDED_DRIVERS = """\
CLOSER_DRIVER _213_/X X sky130_fd_sc_hd__tt_025C_1v80/sky130_fd_sc_hd__or4_1 2.466999976020621e-15
CLOSER_DRIVER resp_msg[0]$_SDFFE_PP0P_/Q Q sky130_fd_sc_hd__tt_025C_1v80/sky130_fd_sc_hd__dfxtp_1 5.122159749300359e-13
"""


def test_max_transition_report_parser() -> None:
    assert sta.max_transition_violators(RECORDED_MAX_TRANSITION) == [
        "resp_msg[10]", "_279_/A", "resp_msg[10]$_SDFFE_PP0P_/Q"]
    assert sta.max_transition_violators("") == []  # OpenSTA prints nothing when there is none


def test_max_cap_from_driver_lines_and_liberty_limits(pdk_paths) -> None:
    limits = sta.liberty_max_capacitance(pdk_paths.liberty("tt_025C_1v80"))
    assert limits[("sky130_fd_sc_hd__dfxtp_1", "Q")] == pytest.approx(0.162058e-12)
    drivers = sta.driver_caps(RECORDED_DRIVERS)
    assert drivers[0] == ("_213_/X", "X", "sky130_fd_sc_hd__or4_1", pytest.approx(2.467e-15))
    # the 0.51 pF on a dfxtp_1 output is over its 0.162 pF limit; the or4 at 2.5 fF is not
    assert sta.max_cap_violators(drivers, limits) == ["resp_msg[0]$_SDFFE_PP0P_/Q"]


def test_liberty_without_unit_is_a_clear_error(tmp_path: Path) -> None:
    from closer.errors import ToolError

    lib = tmp_path / "bad.lib"
    lib.write_text('library (x) {\n cell ("c") {\n  pin ("Y") {\n   max_capacitance : 0.1;\n  }\n }\n}\n')
    with pytest.raises(ToolError, match="bad.lib.*capacitive_load_unit"):
        sta.liberty_max_capacitance(lib)


# ---- the real tools on gcd ---------------------------------------------------------------------

def _design_copy(repo, tmp: Path, sdc_extra: str = "", drop_clock: bool = False,
                 sdc_exceptions: tuple[str, ...] = ()) -> Path:
    folder = tmp / "gcd"
    shutil.copytree(repo.root / "designs" / "gcd", folder)
    if sdc_exceptions:  # closer.sdc refuses timing exceptions the design does not allow
        toml = folder / "design.toml"
        listed = ", ".join(f'"{e}"' for e in sdc_exceptions)
        toml.write_text(toml.read_text().replace('sdc = "constraints/gcd.sdc"',
                                                 f'sdc = "constraints/gcd.sdc"\nsdc_exceptions = [{listed}]'))
    sdc = folder / "constraints" / "gcd.sdc"
    lines = sdc.read_text().splitlines()
    if drop_clock:
        lines = [line for line in lines if "create_clock" not in line and "-clock" not in line]
    sdc.write_text("\n".join(lines) + "\n" + sdc_extra)
    return folder


@pytest.fixture(scope="module")
def gcd_netlist(repo, tmp_path_factory) -> Path:
    require_tool("sta")
    tmp = tmp_path_factory.mktemp("gcd_sta")
    run_flow(str(_design_copy(repo, tmp)), to="sta", backend="classic", out=tmp / "flow")
    netlist = tmp / "flow" / "sc" / "gcd" / "job" / "synth" / "0" / "outputs" / "gcd.vg"
    assert netlist.is_file()
    return netlist


def test_drv_counts_two_way_with_opensta(repo, pdk_paths, gcd_netlist: Path, tmp_path: Path) -> None:
    lib = pdk_paths.liberty("tt_025C_1v80")
    clean = sta.run_sta("tt_025C_1v80", lib, gcd_netlist, "gcd", repo.root / "designs/gcd/constraints/gcd.sdc",
                        None, tmp_path)
    assert clean.max_slew_violations == 0 and clean.max_cap_violations == 0
    bad_sdc = tmp_path / "tight.sdc"
    bad_sdc.write_text((repo.root / "designs/gcd/constraints/gcd.sdc").read_text()
                       + "set_max_transition 0.3 [current_design]\nset_load 0.5 [get_ports resp_msg*]\n")
    bad = sta.run_sta("tt_025C_1v80", lib, gcd_netlist, "gcd", bad_sdc, None, tmp_path)
    assert bad.max_slew_violations > 0
    assert bad.max_cap_violations == 16  # the 16 resp_msg flops drive 0.5 pF each
    gate = GATES[GateName.STA]
    ok = {mk.HOLD_WS: clean.hold_ws_ns, mk.DRV_MAX_SLEW: clean.max_slew_violations,
          mk.DRV_MAX_CAP: clean.max_cap_violations}
    assert observe(gate, metrics_from_mapping(ok, "clean")).observed.value == "pass"
    worse = ok | {mk.DRV_MAX_SLEW: bad.max_slew_violations, mk.DRV_MAX_CAP: bad.max_cap_violations}
    assert observe(gate, metrics_from_mapping(worse, "tight")).observed.value == "fail"


SDC_GAMING = {
    "false_path_everything": "set_false_path -from [all_inputs]\nset_false_path -to [all_outputs]\n"
                             "set_false_path -from [all_registers] -to [all_registers]\n",
    "false_path_from_inputs": "set_false_path -from [all_inputs]\n",
    "false_path_to_registers": "set_false_path -to [all_registers]\n",
    "setup_only_false_path": "set_false_path -setup -to [all_registers]\n",
}


@pytest.mark.parametrize("edit", sorted(SDC_GAMING))
def test_unconstrained_path_audit_two_way(repo, tmp_path: Path, edit: str) -> None:
    """Each false-path edit (allowed here: by default closer.sdc refuses it) leaves check_setup's
    count at 0; the audit counts the untimed pins and the sta gate fails. (The clean SDC gives 0:
    test_flow and the evaluator's oracle run.)"""
    require_tool("sta")
    design = _design_copy(repo, tmp_path, SDC_GAMING[edit], sdc_exceptions=("false_path",))
    result = run_flow(str(design), to="sta", backend="classic", out=tmp_path / "flow")
    import json

    meta = json.loads(Path(result.metadata).read_text())
    raw = json.loads((tmp_path / "flow/sc/gcd/job/sta/0/reports/sta.json").read_text())["metrics"]
    assert raw["timing__check_setup__unconstrained"] == 0  # what check_setup alone reports
    assert meta[mk.UNCONSTRAINED_ENDPOINTS] > 0
    assert meta["closer__timing__sdc_exceptions"] == SDC_GAMING[edit].count("set_false_path")
    report = (tmp_path / "flow/sc/gcd/job/sta/0/reports/untimed.rpt").read_text()
    assert f"There are {meta[mk.UNCONSTRAINED_ENDPOINTS]} untimed pins" in report
    values = {mk.HOLD_WS: 1.0, mk.DRV_MAX_SLEW: 0, mk.DRV_MAX_CAP: 0,
              mk.UNCONSTRAINED_ENDPOINTS: meta[mk.UNCONSTRAINED_ENDPOINTS]}
    assert observe(GATES[GateName.STA], metrics_from_mapping(values, edit)).observed.value == "fail"


def test_clean_sdc_has_no_untimed_pins(gcd_netlist: Path) -> None:
    report = gcd_netlist.parents[3] / "sta" / "0" / "reports" / "untimed.rpt"
    assert report.read_text().startswith("There are 0 untimed pins")


# ---- LEC ---------------------------------------------------------------------------------------

RECORDED_EQUIV_STATUS = """\
18. Executing EQUIV_STATUS pass.
Found 35 $equiv cells in equiv:
  Of those cells 34 are proven and 1 are unproven.
"""
RECORDED_BMC = """\
  Time Signal Name                                     Dec       Hex                                 Bin
     6 \\trigger                                          0         0                                   0
     7 \\trigger                                          1         1                                   1
SAT proof finished - model found: FAIL!
"""


def test_lec_log_parsers() -> None:
    assert lec.parse_equiv_log(RECORDED_EQUIV_STATUS) == lec.EquivStatus(34, 1)
    assert lec.parse_equiv_log("ERROR: Can't match gate port `resp_msg_gate' to a gold port.\n").port_mismatch
    assert lec.parse_equiv_log("nothing") is None
    assert lec.parse_bmc_log(RECORDED_BMC) == ("fail", 7)
    assert lec.parse_bmc_log("SAT proof finished - no model found: SUCCESS!\n") == ("pass", None)
    assert lec.find_reset(["clk", "rst_n", "d"]) == lec.ResetPort("rst_n", False)
    assert lec.find_reset(["clk", "reset"]) == lec.ResetPort("reset", True)


def _lec(repo, pdk_paths, netlist: Path, work: Path, timeout_s: float = 300.0) -> lec.LecResult:
    job = lec.LecJob(rtl=[repo.root / "designs/gcd/rtl/gcd.v"], top="gcd", netlist=netlist,
                     liberty=pdk_paths.liberty("tt_025C_1v80"), work=work, parameters={"WIDTH": 16},
                     reset=lec.find_reset(lec.netlist_inputs(netlist)), timeout_s=timeout_s)
    return lec.run_lec(job)


def test_lec_past_its_time_limit_is_inconclusive(repo, pdk_paths, gcd_netlist: Path, tmp_path: Path) -> None:
    """Real Yosys stopped at its limit (0.2 s: LecJob.timeout_s + 60): no verdict, the gate fails,
    and the evaluation goes on (the stop used to escape as ToolTimeout). The same job with its
    time proves equivalence (test_lec_two_way)."""
    stopped = _lec(repo, pdk_paths, gcd_netlist, tmp_path / "stopped", timeout_s=-59.8)
    assert stopped.result == "inconclusive" and "limit" in stopped.reason, stopped.reason
    assert _lec_gate(stopped) == "fail"


def _lec_gate(result: lec.LecResult) -> str:
    return observe(GATES[GateName.LEC], metrics_from_mapping(result.metrics(), "lec")).observed.value


def test_lec_two_way(repo, pdk_paths, gcd_netlist: Path, tmp_path: Path) -> None:
    golden = _lec(repo, pdk_paths, gcd_netlist, tmp_path / "golden")
    assert golden.result == "equivalent" and golden.unproven == 0, golden.reason
    assert golden.reason.startswith("ABC &cec proved"), "the register-correspondence proof decided"
    assert _lec_gate(golden) == "pass"

    text = gcd_netlist.read_text()
    swapped = tmp_path / "swapped.vg"  # one cell's function changed: nand2 -> nor2
    swapped.write_text(text.replace("sky130_fd_sc_hd__nand2_1 ", "sky130_fd_sc_hd__nor2_1 ", 1))
    assert swapped.read_text() != text
    bad = _lec(repo, pdk_paths, swapped, tmp_path / "swapped")
    assert bad.result == "not_equivalent" and bad.counterexample_cycle, bad.reason
    assert "ABC &cec on " in bad.reason and ": not equivalent" in bad.reason, "the first proof rejected it"
    assert _lec_gate(bad) == "fail"


def test_lec_without_abc_is_decided_by_the_yosys_proof(repo, pdk_paths, gcd_netlist: Path, tmp_path: Path,
                                                      monkeypatch) -> None:
    """yosys-abc missing: the first proof is skipped with its reason, the Yosys proof decides."""
    from closer.errors import ToolMissing

    real_run = lec.run

    def no_abc(command, log, **kwargs):
        if command.argv[0] == "yosys-abc":
            raise ToolMissing("yosys-abc: not found on PATH")
        return real_run(command, log, **kwargs)

    monkeypatch.setattr(lec, "run", no_abc)
    result = _lec(repo, pdk_paths, gcd_netlist, tmp_path)
    assert result.result == "equivalent", result.reason
    assert result.reason.startswith("ABC &cec not run: yosys-abc: not found") and "equiv_induct" in result.reason


TIE_NETLIST = """\
module tie(clk, d, q, one, zero);
  input clk; input d; output q; output one; output [1:0] zero;
  wire lo;
  sky130_fd_sc_hd__dfxtp_1 r (.CLK(clk), .D(d), .Q(q));
  sky130_fd_sc_hd__conb_1 t (.HI(one), .LO(lo));
  assign zero[0] = lo;
  assign zero[1] = lo;
endmodule
"""


def _run_flow_sta_script(pdk_paths, work: Path, sdc_text: str) -> dict:
    """closer_sta.tcl run directly by OpenSTA, with the sta_config.tcl the flow's STA task writes."""
    from closer.flow.direct.sta import SCRIPTS_DIR, STA_REPORT, parse_sta_report
    from closer.procs import Command, run

    work.mkdir(parents=True)
    (work / "reports").mkdir()
    (work / "tie.vg").write_text(TIE_NETLIST)
    (work / "tie.sdc").write_text(sdc_text)
    lib = pdk_paths.liberty("tt_025C_1v80")
    (work / "sta_config.tcl").write_text(
        "set closer_top tie\nset closer_netlist tie.vg\nset closer_sdc {tie.sdc}\n"
        f"set closer_corners {{{{tt_025C_1v80 {{{lib}}} {{setup hold power}}}}}}\nset closer_clock_port clk\n"
        f"set closer_report {STA_REPORT}\n")
    done = run(Command(["sta", "-no_init", "-exit", str(SCRIPTS_DIR / "closer_sta.tcl")], cwd=work, timeout_s=120),
               work / "sta.log", check=False)
    return parse_sta_report((work / STA_REPORT).read_text())["metrics"]


def test_audit_ignores_constant_outputs_but_counts_false_paths(pdk_paths, tmp_path: Path) -> None:
    """Tie-cell-driven outputs are no STA endpoints (check_setup still lists them); a false path
    from the data input leaves the register's D pin and the input untimed."""
    require_tool("sta")
    sdc = ("create_clock -name c -period 10 [get_ports clk]\nset_input_delay 1 -clock c [get_ports d]\n"
           "set_output_delay 1 -clock c [all_outputs]\n")
    clean = _run_flow_sta_script(pdk_paths, tmp_path / "clean", sdc)
    assert clean["timing__check_setup__unconstrained"] == 3  # one, zero[0], zero[1]
    assert clean["timing__unconstrained__count"] == 0
    gamed = _run_flow_sta_script(pdk_paths, tmp_path / "gamed", sdc + "set_false_path -from [get_ports d]\n")
    assert gamed["timing__unconstrained__count"] == 2  # endpoint r/D and input d
    report = (tmp_path / "gamed" / "reports" / "untimed.rpt").read_text()
    assert "endpoint r/D" in report and "input d" in report
