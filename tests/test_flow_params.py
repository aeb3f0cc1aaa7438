"""String parameters reach Verilator lint intact through SiliconCompiler (closer.flow.lint_task)."""

import subprocess
import sys
from pathlib import Path

RTL = """module strparam #(parameter STYLE = "flop") (input wire clk, input wire d, output reg q);
  always @(posedge clk) q <= d;
  if (STYLE == "macro") begin : g_ok
  end else begin : g_bad
    missing_module_for_wrong_style u_missing ();
  end
endmodule
"""

DESIGN = """[design]
name = "strparam"
top = "strparam"
[sources]
rtl = ["rtl/strparam.v"]
[clock]
port = "clk"
period_ns = 10.0
[constraints]
sdc = "strparam.sdc"
[configs.default]
parameters = { STYLE = "macro" }
[configs.wrong]
parameters = { STYLE = "flop" }
"""


def _design(tmp_path: Path) -> Path:
    root = tmp_path / "strparam"
    (root / "rtl").mkdir(parents=True)
    (root / "rtl" / "strparam.v").write_text(RTL)
    (root / "design.toml").write_text(DESIGN)
    (root / "strparam.sdc").write_text("create_clock -name core_clock -period 10 [get_ports clk]\n")
    return root


def _lint(design: Path, config: str, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "closer.cli", "flow", "run", str(design),
                           "--config", config, "--to", "lint", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)


def test_string_parameter_selects_the_right_branch(tmp_path):
    design = _design(tmp_path)
    good = _lint(design, "default", tmp_path / "good")
    assert good.returncode == 0, good.stdout + good.stderr
    bad = _lint(design, "wrong", tmp_path / "bad")
    assert bad.returncode != 0
    assert "missing_module_for_wrong_style" in bad.stdout + bad.stderr
