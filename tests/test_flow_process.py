"""What the flow's process loads, and what it leaves to the node processes (closer.flow.sc_process,
closer.physical's lazy names): each check runs in a fresh interpreter, since sys.modules is
shared by every test of this session."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import NamedTuple

import pytest


def _run(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


_RESOLVE = """
import json, sys
{prepare}
from siliconcompiler.package import Resolver, PythonPathResolver
resolver = Resolver.find_resolver("python://siliconcompiler")
try:
    Resolver.find_resolver("git+https://example.invalid/repo.git")
    remote = "resolved"
except ValueError as exc:
    remote = str(exc)
print(json.dumps({{"python": resolver is PythonPathResolver, "remote": remote,
                  "github": "siliconcompiler.package.github" in sys.modules,
                  "jinja2": "jinja2" in sys.modules}}))
"""


def test_local_resolvers_resolve_local_sources_without_the_remote_modules():
    prepared = _run(_RESOLVE.format(prepare="from closer.flow.sc_process import prepare_process\n"
                                            "prepare_process()"))
    assert prepared["python"] is True
    assert prepared["github"] is False
    assert prepared["remote"] != "resolved" and "git+https" in prepared["remote"]
    assert prepared["jinja2"] is True   # loaded once here, inherited by the forked nodes


def test_siliconcompilers_own_registry_imports_the_remote_modules():
    """The reference the change is measured against: without it the same lookup imports PyGithub
    and resolves the remote scheme."""
    plain = _run(_RESOLVE.format(prepare=""))
    assert plain["python"] is True
    assert plain["github"] is True
    assert plain["remote"] == "resolved"


def test_light_physical_submodules_do_not_load_the_back_half():
    loaded = _run("""
import json, sys
import closer.physical.io.lef
print(json.dumps({"flow": "closer.physical.flow" in sys.modules, "numpy": "numpy" in sys.modules}))
""")
    assert loaded == {"flow": False, "numpy": False}


def test_physical_names_load_on_first_use():
    from closer import physical
    from closer.physical.flow import PhysicalConfig, run_physical

    assert physical.run_physical is run_physical
    assert physical.PhysicalConfig is PhysicalConfig
    with pytest.raises(AttributeError, match="no_such_name"):
        physical.no_such_name  # noqa: B018


class FrontRun(NamedTuple):
    elaborated: str
    netlist: str
    reports: list[str]      # the synthesis node's report files
    metadata: dict
    tool_cpu: dict[str, float | None]   # flow.json's exe_cpu_s per step


def _front_run(out, top: str = "gcd") -> FrontRun:
    """SiliconCompiler's engine: these are its tasks' settings."""
    from closer.flow.paths import FlowPaths
    from closer.flow.runner import run_flow

    result = run_flow(top, to="synth", out=out, engine="sc")
    paths = FlowPaths(out, top)
    return FrontRun(
        elaborated=(paths.node_dir("elaborate") / "outputs" / f"{top}.v").read_text(),
        netlist=(paths.node_dir("synth") / "outputs" / f"{top}.vg").read_text(),
        reports=sorted(p.name for p in (paths.node_dir("synth") / "reports").iterdir()),
        metadata=json.loads(open(result.metadata).read()),
        tool_cpu={step.name: step.exe_cpu_s for step in result.steps})


def _without_src(netlist: str) -> list[str]:
    return [line for line in netlist.splitlines() if not line.lstrip().startswith("(* src =")]


@pytest.mark.slow
def test_front_nodes_skip_the_unread_outputs_with_the_same_netlist(tmp_path, monkeypatch):
    """gcd to synth with the real tools: the elaborated file without SiliconCompiler's source
    banners and no hierarchical cell-area report; against SiliconCompiler's defaults (banners on,
    report written) the netlist differs only in its `src` line numbers and the metrics not at all."""
    ours = _front_run(tmp_path / "ours")

    from siliconcompiler.tools.slang.elaborate import Elaborate
    from siliconcompiler.tools.yosys.syn_asic import ASICSynthesis

    from closer.flow.synth_task import CloserSynthesis

    monkeypatch.setattr(Elaborate, "set_slang_includesourcepaths", lambda *a, **k: None)
    monkeypatch.setattr(CloserSynthesis, "_generate_cell_area_report",
                        ASICSynthesis._generate_cell_area_report)
    default = _front_run(tmp_path / "default")

    assert "//   File:" not in ours.elaborated and "//   File:" in default.elaborated
    assert "hierarchical_cell_area.json" not in ours.reports
    assert "hierarchical_cell_area.json" in default.reports and "stat.json" in ours.reports
    assert ours.netlist != default.netlist and _without_src(ours.netlist) == _without_src(default.netlist)
    assert ours.metadata == default.metadata
    assert ours.tool_cpu["elaborate"] is None            # a Python task: no tool process
    assert ours.tool_cpu["lint"] > 0 and ours.tool_cpu["synth"] > 0.2   # Yosys with its ABC


def test_tool_cpu_record_is_read_strictly(tmp_path):
    from closer.flow.tool_cpu import TOOL_CPU_FILE, tool_cpu_s

    assert tool_cpu_s(tmp_path) is None
    for text, expected in (('{"cpu_s": 1.25}', 1.25), ('{"cpu_s": true}', None), ('{"cpu_s": "1"}', None),
                           ("[1]", None), ("not json", None),
                           ('{"cpu_s": NaN}', None), ('{"cpu_s": -1}', None), ('{"cpu_s": 1e400}', None),
                           ('{"cpu_s": 0}', 0.0)):
        (tmp_path / TOOL_CPU_FILE).write_text(text)
        assert tool_cpu_s(tmp_path) == expected, text
