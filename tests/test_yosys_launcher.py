"""The `yosys` launcher over pyosys: version format, -p/-s/-c, Tcl commands, exit codes."""

import json
import os
import subprocess
from pathlib import Path

from packaging.version import Version

from tests.conftest import require_tool

FIXTURES = Path(__file__).parent / "fixtures"
COUNTER = FIXTURES / "sim" / "counter.v"


def _yosys(*args: str, env: dict | None = None, cwd: Path | None = None):
    return subprocess.run([require_tool("yosys"), *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, timeout=300)


def test_version_parses_as_siliconcompiler_expects():
    from siliconcompiler.tools.yosys import YosysTask

    proc = _yosys("--version")
    assert proc.returncode == 0
    version = YosysTask.parse_version(None, proc.stdout)
    assert Version(YosysTask.normalize_version(None, version)) >= Version("0.48")
    assert _yosys("-V").stdout == proc.stdout


def test_p_synthesizes_to_sky130_cells(pdk_paths, tmp_path):
    netlist = tmp_path / "counter.v"
    lib = pdk_paths.liberty("tt_025C_1v80")
    proc = _yosys("-p", f"read_verilog {COUNTER}; synth -top counter; dfflibmap -liberty {lib}; "
                        f"abc -liberty {lib}; opt_clean; write_verilog -noattr {netlist}")
    assert proc.returncode == 0, proc.stderr
    text = netlist.read_text()
    assert "sky130_fd_sc_hd__dfxtp_1" in text
    assert "$_DFF" not in text


def test_yosys_error_exits_nonzero():
    proc = _yosys("-p", "read_verilog /nonexistent/file.v")
    assert proc.returncode != 0
    assert "ERROR" in proc.stderr
    assert _yosys("-p", "no_such_pass").returncode != 0


def test_s_runs_a_script_and_stops_at_an_error(tmp_path):
    good = tmp_path / "good.ys"
    good.write_text(f"read_verilog {COUNTER}\nhierarchy -top counter\n")
    assert _yosys("-s", str(good)).returncode == 0
    bad = tmp_path / "bad.ys"
    bad.write_text(f"read_verilog {COUNTER}\nhierarchy -top not_a_module\n")
    proc = _yosys("-s", str(bad))
    assert proc.returncode != 0 and "not_a_module" in proc.stderr


def test_tcl_script_like_siliconcompiler(pdk_paths, tmp_path):
    env = {"COUNTER_V": str(COUNTER), "LIBERTY": str(pdk_paths.liberty("tt_025C_1v80")),
           "STAT_JSON": str(tmp_path / "stat.json"), "NETLIST": str(tmp_path / "net.v")}
    proc = _yosys("-c", str(FIXTURES / "yosys" / "sc_style.tcl"), "extra", env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert "TAG=hello" in proc.stdout
    assert "ARGV=extra" in proc.stdout
    stat = json.loads((tmp_path / "stat.json").read_text())
    assert stat["design"]["area"] > 0
    assert "sky130_fd_sc_hd__" in (tmp_path / "net.v").read_text()


def test_tcl_error_exits_nonzero(tmp_path):
    script = tmp_path / "bad.tcl"
    script.write_text("yosys echo on\nno_such_tcl_command\n")
    proc = _yosys("-c", str(script))
    assert proc.returncode == 1
    assert "no_such_tcl_command" in proc.stderr
    script.write_text("yosys no_such_pass\n")
    assert _yosys("-c", str(script)).returncode != 0
