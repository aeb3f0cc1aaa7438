"""Agent resolution and the sweep baseline's edits (no tools)."""

from __future__ import annotations

from pathlib import Path

import pytest

from closer.agents import resolve_agent
from closer.agents.baselines import _sdc_period, _set_period, _set_toml_number
from closer.errors import InputError


def test_baselines_are_labeled_machinery() -> None:
    for name in ("null", "oracle", "sweep"):
        spec = resolve_agent(name)
        assert spec.machinery_baseline and spec.label == name and spec.backend == "machinery"
    oracle, sweep, null = (resolve_agent(n) for n in ("oracle", "sweep", "null"))
    assert all(oracle.reads_solution(k) for k in "ABC")
    assert sweep.reads_solution("C") and not sweep.reads_solution("A") and not sweep.reads_solution("B")
    assert not any(null.reads_solution(k) for k in "ABC")


def test_solution_argument_only_when_given(tmp_path: Path) -> None:
    sweep = resolve_agent("sweep")
    without = sweep.argv(tmp_path / "ws", tmp_path / "i.md", None)
    assert "--solution" not in without and "" not in without
    assert sweep.argv(tmp_path / "ws", tmp_path / "i.md", tmp_path / "sol")[-2:] == ["--solution", str(tmp_path / "sol")]


def test_bare_solution_placeholder_drops_only_itself(tmp_path: Path) -> None:
    from closer.agents import AgentSpec

    for template in (["{solution}", "run", "{workspace}"], ["run", "{workspace}", "{solution}"]):
        spec = AgentSpec(label="x", argv_template=template, machinery_baseline=False)
        assert spec.argv(tmp_path / "ws", tmp_path / "i.md", None) == ["run", str(tmp_path / "ws")]


def test_sweep_copies_only_the_rtl_layer(tmp_path: Path) -> None:
    from closer.agents.baselines import copy_solution

    solution, ws = tmp_path / "solution", tmp_path / "ws"
    (solution / "rtl").mkdir(parents=True)
    (solution / "rtl" / "top.v").write_text("module top; endmodule\n")
    (solution / "constraints").mkdir()
    (solution / "constraints" / "top.sdc").write_text("create_clock -period 1 [get_ports clk]\n")
    surface = {"rtl/*": "rtl", "constraints/*": "constraint"}
    assert copy_solution(solution, ws, frozenset({"rtl"}), surface) == ["rtl/top.v"]
    assert (ws / "rtl" / "top.v").is_file() and not (ws / "constraints").exists()


def test_command_agent_placeholders(tmp_path: Path) -> None:
    spec = resolve_agent("my-agent --dir {workspace} --prompt-file {instructions}", model="m", quantization="q4")
    argv = spec.argv(tmp_path / "ws", tmp_path / "i.md", None)
    assert argv == ["my-agent", "--dir", str(tmp_path / "ws"), "--prompt-file", str(tmp_path / "i.md")]
    assert spec.label == "my-agent" and not spec.machinery_baseline and spec.model == "m"
    with pytest.raises(InputError, match="no \\{workspace\\} or \\{instructions\\}"):
        resolve_agent("my-agent --go")
    with pytest.raises(InputError, match="unknown placeholder"):
        resolve_agent("my-agent {workspace} {secret}")


def test_sweep_edits_period_and_settings(tmp_path: Path) -> None:
    sdc = "create_clock -name core_clock -period 10.0 [get_ports clk]\nset_load 0.005 [all_outputs]\n"
    assert _sdc_period(sdc) == 10.0
    assert _sdc_period(_set_period(sdc, 12.5)) == 12.5
    settings = tmp_path / "settings.toml"
    settings.write_text("# c\nrouter_passes = 15\n")
    _set_toml_number(settings, "router_passes", 10)
    assert "router_passes = 10\n" in settings.read_text()
