"""closer.sdc: the SDC subset read as data (issue 16). Parser two-way on text; every SDC in the
repository parses; each SDC attack of the issue is refused with file, line and command named;
the canonical SDC is what OpenSTA reads in the flow (real tools on gcd)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from closer.flow.paths import FlowPaths
from closer.flow.runner import run_flow
from closer.paths import repo_paths
from closer.sdc import SdcError, SdcException, SdcPolicy, parse_sdc, parse_sdc_text, write_canonical
from tests.conftest import require_tool

ROOT = repo_paths().root
REPO_SDCS = sorted([*ROOT.glob("designs/*/constraints/*.sdc"), *ROOT.glob("bench/designs/*/constraints/*.sdc"),
                    *ROOT.glob("tests/fixtures/**/*.sdc")])
GCD_SDC = ROOT / "designs" / "gcd" / "constraints" / "gcd.sdc"
HONEST = GCD_SDC.read_text()


# --- every SDC of the repository, and canonical text as a fixed point -------------------------

@pytest.mark.parametrize("path", REPO_SDCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_sdc_parses_and_its_canonical_text_is_a_fixed_point(path: Path) -> None:
    sdc = parse_sdc(path)
    assert sdc.commands and sdc.commands[0].name == "create_clock"
    again = parse_sdc_text(sdc.canonical_text(), "canonical")
    assert [c.emit() for c in again.commands] == [c.emit() for c in sdc.commands]


def test_canonical_gcd_sdc() -> None:
    lines = parse_sdc(GCD_SDC).canonical_text().splitlines()
    assert lines[0].startswith("# canonical SDC (closer.sdc)")
    assert lines[1:] == [
        "create_clock -name core_clock -period 10.0 [get_ports clk]",
        "set_input_delay -clock core_clock 1.0 [delete_from_list [all_inputs] [get_ports clk]]",
        "set_output_delay -clock core_clock 1.0 [all_outputs]",
        "set_load 0.005 [all_outputs]",
    ]


# --- accepted forms -------------------------------------------------------------------------

@pytest.mark.parametrize("text, emitted", [
    ("create_clock -period 4 \\\n    -name c [get_ports {clk}]", "create_clock -name c -period 4.0 [get_ports clk]"),
    ('set_input_delay 0.5 -clock [get_clocks c] [get_ports "a b"]',
     "set_input_delay -clock [get_clocks c] 0.5 [get_ports {a b}]"),
    ("set_output_delay 1 -clock c -max [get_ports {data[3]}]", "set_output_delay -max -clock c 1.0 [get_ports {data[3]}]"),
    ("set_input_delay 1 -clock c [remove_from_collection [all_inputs] [get_ports clk]]",
     "set_input_delay -clock c 1.0 [delete_from_list [all_inputs] [get_ports clk]]"),
    ("set_driving_cell -lib_cell sky130_fd_sc_hd__buf_2 [all_inputs]",
     "set_driving_cell -lib_cell sky130_fd_sc_hd__buf_2 [all_inputs]"),
    ("set_clock_uncertainty -setup 0.25 [all_clocks]", "set_clock_uncertainty -setup 0.25 [all_clocks]"),
    ("set_clock_uncertainty 0.1", "set_clock_uncertainty 0.1"),
    ("set_clock_transition 0.15 [get_clocks c]", "set_clock_transition 0.15 [get_clocks c]"),
    ("set_input_transition 0.2 [all_inputs]", "set_input_transition 0.2 [all_inputs]"),
    ("set_max_transition 0.3 [current_design]", "set_max_transition 0.3 [current_design]"),
    ("set_load 0.5 [get_ports resp_msg*]", "set_load 0.5 [get_ports resp_msg*]"),
])
def test_accepted_forms(text: str, emitted: str) -> None:
    sdc = parse_sdc_text("create_clock -name c -period 4 [get_ports clk]\n" * ("create_clock" not in text)
                         + "# a comment\n\n" + text + "\n", "t.sdc")
    assert sdc.commands[-1].emit() == emitted


# --- refused: each names file, line and command, on one line --------------------------------

ATTACKS = {
    # issue 16 item 1: Tcl run by OpenSTA, and fake marker lines printed into the STA log
    "exec": ("exec touch /tmp/closer_pwned", "exec", "Tcl command"),
    "exec_in_argument": ("set_load [exec touch /tmp/closer_pwned] [all_outputs]", "[exec]", "not an allowed object query"),
    "exec_in_query": ("set_load 0.1 [get_ports [exec id]]", "[exec]", "not an allowed object query"),
    "source": ("source /tmp/evil.tcl", "source", "Tcl command"),
    "proc": ("proc report_checks {args} {puts hi}", "proc", "Tcl command"),
    "puts_marker": ('puts "CLOSER_SETUP 9.0000 slack (MET)"', "puts", "Tcl command"),
    "redefine_metric": ("rename metric evil", "rename", "Tcl command"),
    "variable": ("set_load $::env(X) [all_outputs]", "set_load", "variable substitution"),
    "expr": ("set_load [expr {1 + 1}] [all_outputs]", "[expr]", "not an allowed object query"),
    "semicolon": ("set_load 0.005 [all_outputs]; exec id", "set_load", "one command per line"),
    "expansion": ("set_load 0.005 {*}[all_outputs]", "set_load", "argument expansion"),
    "bare_bus_bit": ("set_load 0.005 data[0]", "set_load", "Tcl command substitution"),
    "namespace_cmd": ("sta::redirect_file_begin /tmp/x", "sta::redirect_file_begin", "Tcl command"),
    # issue 16 item 2: timing relaxations, refused by default
    "multicycle": ("set_multicycle_path 2 -setup -from [all_registers] -to [all_registers]",
                   "set_multicycle_path", "'multicycle_path' is not allowed"),
    "max_delay": ("set_max_delay 14 -from [all_registers] -to [all_registers]", "set_max_delay", "'max_delay' is not allowed"),
    "min_delay": ("set_min_delay 0 -to [all_outputs]", "set_min_delay", "'min_delay' is not allowed"),
    "false_path": ("set_false_path -from [all_inputs]", "set_false_path", "'false_path' is not allowed"),
    "disable_timing": ("set_disable_timing [get_cells *]", "set_disable_timing", "'disable_timing' is not allowed"),
    "case_analysis": ("set_case_analysis 0 [get_ports reset]", "set_case_analysis", "'case_analysis' is not allowed"),
    "clock_latency": ("set_clock_latency 2.0 [get_clocks core_clock]", "set_clock_latency", "'clock_latency' is not allowed"),
    "negative_uncertainty": ("set_clock_uncertainty -0.5", "set_clock_uncertainty", "negative value -0.5"),
    "negative_input_delay": ("set_input_delay -3 -clock core_clock [get_ports req_val]", "set_input_delay", "negative value -3"),
    "negative_load": ("set_load -1 [all_outputs]", "set_load", "negative value -1"),
    "second_clock": ("create_clock -name slow -period 100 [get_ports req_val]", "create_clock", "a second clock"),
    "clock_add": ("create_clock -add -name c2 -period 20 [get_ports clk]", "create_clock", "-add is timing exception"),
    "unknown_command": ("set_units -time ps", "set_units", "not in the SDC subset"),
    "unknown_option": ("set_load -subtract 0.1 [all_outputs]", "set_load", "unknown option -subtract"),
    "not_a_number": ("set_load 1+1 [all_outputs]", "set_load", "not a literal number"),
    "infinite": ("set_load inf [all_outputs]", "set_load", "not a literal number"),
    "zero_period": ("create_clock -name core_clock -period 0 [get_ports clk]", "create_clock", "must be > 0"),
    "option_as_name": ("set_load 0.1 [get_ports -regexp]", "[get_ports]", "unknown option -regexp"),
}


@pytest.mark.parametrize("name", ATTACKS)
def test_attack_is_refused_naming_file_line_and_command(name: str) -> None:
    line, command, reason = ATTACKS[name]
    text = HONEST + line + "\n"
    with pytest.raises(SdcError) as info:
        parse_sdc_text(text, "constraints/gcd.sdc")
    message = str(info.value)
    where = f"constraints/gcd.sdc:{len(HONEST.splitlines()) + 1}: "
    assert message.startswith(where + command), message
    assert reason in message and "\n" not in message


def test_honest_sdc_without_the_perturbation_parses() -> None:
    """The other way of each refusal: the same file without the added line is accepted."""
    assert len(parse_sdc_text(HONEST, "constraints/gcd.sdc").commands) == 4


def test_allowed_exception_parses_and_is_counted() -> None:
    line = "set_multicycle_path 2 -setup -from [all_registers] -to [all_registers]\n"
    policy = SdcPolicy(allow=frozenset({SdcException.MULTICYCLE_PATH}))
    sdc = parse_sdc_text(HONEST + line, "t.sdc", policy)
    assert [c.name for c in sdc.exceptions] == ["set_multicycle_path"]
    assert sdc.canonical_text().splitlines()[-1] == (
        "set_multicycle_path -setup -from [all_registers] -to [all_registers] 2")
    with pytest.raises(SdcError, match="'max_delay' is not allowed"):  # only what is listed
        parse_sdc_text(HONEST + "set_max_delay 14 -to [all_outputs]\n", "t.sdc", policy)
    with pytest.raises(SdcError, match="integer >= 1"):
        parse_sdc_text(HONEST + line.replace(" 2 ", " 1.5 "), "t.sdc", policy)


def test_task_models_carry_the_kind_allow_list() -> None:
    from closer.designs.model import Constraints
    from closer.tasks.models import KindSpec

    kind = KindSpec.model_validate({"start": "weak", "edit_surface": {"constraints/*": "constraint"},
                                    "gates": ["sta"], "flow_to": "finish"})
    assert kind.sdc_exceptions == []  # default: none
    allowed = Constraints.model_validate({"sdc": "c.sdc", "sdc_exceptions": ["false_path"]})
    assert allowed.sdc_policy().allows(SdcException.FALSE_PATH)
    with pytest.raises(ValueError):
        Constraints.model_validate({"sdc": "c.sdc", "sdc_exceptions": ["everything"]})


# --- the flow: refused before any tool runs; the honest SDC through the real tools ----------

def _design_copy(dest: Path, extra: str = "") -> Path:
    shutil.copytree(ROOT / "designs" / "gcd", dest, ignore=shutil.ignore_patterns("weak", "__pycache__"))
    if extra:
        sdc = dest / "constraints" / "gcd.sdc"
        sdc.write_text(sdc.read_text() + extra)
    return dest


def test_cli_refuses_exec_in_the_sdc_before_any_tool_runs(tmp_path: Path) -> None:
    """Issue 16: `exec` in the SDC ran (as root) from the flow's sta and pnr directories."""
    marker = tmp_path / "pwned"
    design = _design_copy(tmp_path / "gcd", f"exec touch {marker}\n")
    done = subprocess.run([sys.executable, "-m", "closer", "flow", "run", str(design), "--to", "sta",
                           "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert f"gcd.sdc:6: exec: a Tcl command" in done.stderr
    assert not marker.exists()
    record = json.loads((tmp_path / "run" / "flow.json").read_text())
    assert record["status"] == "failed" and "gcd.sdc:6: exec" in record["error"]
    assert not (tmp_path / "run" / "sc").exists()  # SiliconCompiler never started


@pytest.fixture(scope="module")
def gcd_sta(tmp_path_factory) -> FlowPaths:
    require_tool("sta")
    tmp = tmp_path_factory.mktemp("sdc_flow")
    run_flow(str(_design_copy(tmp / "gcd")), to="sta", backend="classic", out=tmp / "run")
    return FlowPaths(tmp / "run", "gcd")


def test_honest_sdc_reaches_opensta_only_as_canonical_text(gcd_sta: FlowPaths) -> None:
    canonical = gcd_sta.canonical_sdc.read_text()
    assert canonical == parse_sdc(GCD_SDC).canonical_text()
    node = gcd_sta.node_dir("sta")
    # the node reads it through closer.sdc again (the header names the canonical file's hash)
    assert (node / "sdc" / "0.sdc").read_text().splitlines()[1:] == canonical.splitlines()[1:]
    assert "read_sdc" not in (node / "sta_config.tcl").read_text()
    assert "{sdc/0.sdc}" in (node / "sta_config.tcl").read_text()
    report = (node / "reports" / "closer_sta.txt").read_text().splitlines()
    assert report[-1] == "done" and "clock core_clock 10.000000 clk" in report
    metadata = json.loads(gcd_sta.metadata.read_text())
    assert metadata["closer__timing__sdc_exceptions"] == 0
    assert metadata["closer__timing__unconstrained_endpoints"] == 0
    assert -5.0 < metadata["synth__timing__setup__ws"] < 5.0  # the gcd at 10 ns (ss corner)


def test_physical_sta_reads_the_sdc_as_data(repo, pdk_paths, gcd_sta: FlowPaths, tmp_path: Path) -> None:
    """closer.physical's OpenSTA runs: results from their report files; an SDC with Tcl in it is
    refused before OpenSTA starts (before the change it printed a fake CLOSER_SETUP block)."""
    from closer.physical.signoff import sta

    netlist = gcd_sta.node_dir("synth") / "outputs" / "gcd.vg"
    lib = pdk_paths.liberty("tt_025C_1v80")
    honest = sta.run_sta("tt_025C_1v80", lib, netlist, "gcd", GCD_SDC, None, tmp_path)
    assert honest.setup_ws_ns is not None and 0.0 < honest.setup_ws_ns < 10.0
    assert honest.power_total_w and honest.max_slew_violations == 0
    assert (tmp_path / "sta_tt_025C_1v80_nospef.setup.rpt").is_file()
    fake = tmp_path / "fake.sdc"
    fake.write_text(HONEST + 'puts "CLOSER_SETUP"\nputs "   9.0000   slack (MET)"\n')
    with pytest.raises(SdcError, match=r"fake.sdc:6: puts: a Tcl command"):
        sta.run_sta("tt_025C_1v80", lib, netlist, "gcd", fake, None, tmp_path / "fake")


def test_physical_sta_numbers_ignore_what_the_log_says(pdk_paths, gcd_sta: FlowPaths, tmp_path: Path) -> None:
    """Defense in depth: even an SDC run as Tcl (bypassing closer.sdc) that prints the old
    `CLOSER_SETUP ... slack (MET)` block into the log leaves the setup slack as OpenSTA computed
    it (issue 16: the log parser reported 9.0 ns)."""
    from closer.physical.signoff import sta
    from closer.procs import Command, run

    netlist = gcd_sta.node_dir("synth") / "outputs" / "gcd.vg"
    lib = pdk_paths.liberty("tt_025C_1v80")
    honest = sta.run_sta("tt_025C_1v80", lib, netlist, "gcd", GCD_SDC, None, tmp_path / "honest")
    raw = tmp_path / "raw.sdc"
    raw.write_text(HONEST + 'puts "CLOSER_SETUP"\nputs "   9.0000   slack (MET)"\nputs "CLOSER_HOLD"\n')
    reports = sta.StaReports.of(tmp_path, "forged")
    tcl = tmp_path / "forged.tcl"
    tcl.write_text(sta.sta_script(lib, netlist, "gcd", raw, None, None, None, reports))
    done = run(Command(["sta", "-no_init", "-exit", str(tcl)], cwd=tmp_path, timeout_s=120),
               tmp_path / "forged.log", check=False)
    assert "9.0000   slack (MET)" in done.log.read_text()
    forged = sta.parse_sta_reports(reports, "tt_025C_1v80", lib, None, done.log)
    assert forged.setup_ws_ns == honest.setup_ws_ns != 9.0


def test_physical_sta_reports_total_negative_slack(pdk_paths, gcd_sta: FlowPaths, tmp_path: Path) -> None:
    """The sign-off STA's TNS per check (bench/flow_scaling reads it from the Sta step): 0 where
    every path meets the clock, and at a 1 ns clock a sum over the failing endpoints, at least as
    negative as the worst slack."""
    from closer.physical.signoff import sta

    netlist = gcd_sta.node_dir("synth") / "outputs" / "gcd.vg"
    lib = pdk_paths.liberty("tt_025C_1v80")
    met = sta.run_sta("tt_025C_1v80", lib, netlist, "gcd", GCD_SDC, None, tmp_path / "met")
    assert met.setup_ws_ns > 0 and met.setup_tns_ns == 0 and met.hold_tns_ns == 0
    tight = tmp_path / "tight.sdc"
    tight.write_text(HONEST.replace("-period 10.0", "-period 1.0"))
    missed = sta.run_sta("tt_025C_1v80", lib, netlist, "gcd", tight, None, tmp_path / "missed")
    assert missed.setup_ws_ns < 0 and missed.setup_tns_ns < missed.setup_ws_ns


def test_total_negative_slack_line_is_required(tmp_path: Path) -> None:
    from closer.errors import ToolError
    from closer.physical.signoff.sta import total_negative_slacks

    assert total_negative_slacks("CLOSER_TNS -1.25e-09 0\n", tmp_path / "t.rpt") == (-1.25, 0.0)
    with pytest.raises(ToolError, match="no CLOSER_TNS"):
        total_negative_slacks("", tmp_path / "t.rpt")


@pytest.fixture(scope="module")
def task_b(tmp_path_factory):
    from closer.tasks.generate import generate_suite
    from closer.tasks.paths import SuitePaths

    out = tmp_path_factory.mktemp("suite")
    generate_suite("gcd", out, kinds=None, budgets=["low"])
    return SuitePaths(out).task("gcd-B-low")


def test_evaluator_scores_a_refused_sdc_zero_and_says_why(task_b, tmp_path: Path) -> None:
    """Issue 16: `set_multicycle_path 2` scored 0.962 on gcd-B; now the flow stops at the SDC,
    the record is scored 0 and its flow error names the file, line and command."""
    from closer.tasks.evaluate import evaluate

    ws = tmp_path / "ws"
    shutil.copytree(task_b.workspace, ws)
    shutil.copyfile(task_b.hidden.solution / "rtl" / "gcd.v", ws / "rtl" / "gcd.v")
    sdc = ws / "constraints" / "gcd.sdc"
    sdc.write_text(sdc.read_text() + "set_multicycle_path 2 -setup -from [all_registers] -to [all_registers]\n")
    record = evaluate(ws, task_b.root, tmp_path / "eval")
    assert record.accepted and record.gates["func"] == "pass"
    assert record.scored and record.reward == 0.0 and record.gate == 0
    assert "constraints/gcd.sdc:6: set_multicycle_path: timing exception 'multicycle_path' is not allowed" \
        in record.flow_error
    assert record.failing_gates  # the flow built nothing: gls (no netlist) fails


def test_docs_list_the_subset_as_the_code_defines_it(repo) -> None:
    from closer.sdc.docs import subset_markdown

    text = (repo.docs / "security.md").read_text()
    assert "## SDC as data" in text and subset_markdown() in text


@pytest.mark.parametrize("outputs, audited", [("[all_outputs]", 0), ("[get_ports {resp_msg* tie_lo}]", 2)])
def test_a_tie_cell_output_is_no_unconstrained_endpoint_but_an_undelayed_output_is(tmp_path: Path, outputs,
                                                                                  audited):
    """A constant output (a tie cell drives it) has no timing path: OpenSTA's `check_setup` counts
    it as an unconstrained endpoint, the STA node's own audit does not, and the count a stopped flow
    is scored on (closer.tasks.checks) is the audit's, as a finished flow's is. Outputs left without
    an output delay (req_rdy, resp_val) still count."""
    from closer.tasks.checks import unconstrained_from_report, unconstrained_from_sta_node

    require_tool("sta")
    design = _design_copy(tmp_path / "gcd")
    sdc = design / "constraints" / "gcd.sdc"
    sdc.write_text(sdc.read_text().replace("-clock core_clock [all_outputs]", f"-clock core_clock {outputs}"))
    rtl = design / "rtl" / "gcd.v"
    text = rtl.read_text().replace("    output wire [WIDTH-1:0]   resp_msg",
                                   "    output wire [WIDTH-1:0]   resp_msg,\n    output wire               tie_lo")
    rtl.write_text(text.replace("endmodule", "    assign tie_lo = 1'b0;\nendmodule"))
    run_flow(str(design), to="sta", backend="classic", out=tmp_path / "run")
    node = FlowPaths(tmp_path / "run", "gcd").node_dir("sta")
    assert unconstrained_from_report(node / "reports" / "unconstrained.rpt") == 1 + audited  # tie_lo too
    assert unconstrained_from_sta_node(node) == audited
    metadata = json.loads(FlowPaths(tmp_path / "run", "gcd").metadata.read_text())
    assert metadata["closer__timing__unconstrained_endpoints"] == audited
