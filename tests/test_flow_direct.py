"""The direct engine (closer.flow.direct) against SiliconCompiler's (the reference): the same node
folders, netlists and metrics; reuse keyed on what a node reads; failures named."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from closer.designs.model import load_design
from closer.errors import ToolError
from closer.flow.direct.node import NODE_RECORD, node_key, read_record
from closer.flow.paths import FlowPaths
from closer.flow.runner import run_flow

ENGINE_KEYS = {"run__flow__engine"}


def _run(design: str, out: Path, engine: str, to: str = "sta", config: str = "default"):
    result = run_flow(design, config=config, to=to, out=out, engine=engine)
    return result, json.loads(Path(result.metadata).read_text())


def _same_files(a: Path, b: Path, names: list[str]) -> None:
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.mark.slow
@pytest.mark.parametrize("design, config", [("gcd", "default"), ("firdma", "full")])
def test_direct_engine_gives_siliconcompilers_netlists_and_metrics(tmp_path: Path, design: str, config: str):
    """Real tools, to sta: every node's outputs byte-identical, metadata.json equal but for the
    engine's name, the same tools and versions; firdma's `full` config is SystemVerilog with a
    hard macro (slang in Yosys, black boxes in lint, macro Liberty in STA)."""
    direct, direct_meta = _run(design, tmp_path / "direct", "direct", config=config)
    sc, sc_meta = _run(design, tmp_path / "sc", "sc", config=config)
    top = load_design(design)[0].top
    d, s = FlowPaths(tmp_path / "direct", design), FlowPaths(tmp_path / "sc", design)
    elaborated = next((s.node_dir("elaborate") / "outputs").glob(f"{top}.*v")).name
    _same_files(d.node_dir("elaborate"), s.node_dir("elaborate"), [f"outputs/{elaborated}"])
    _same_files(d.node_dir("synth"), s.node_dir("synth"), [f"outputs/{top}.vg", "reports/stat.json"])
    _same_files(d.node_dir("sta"), s.node_dir("sta"), ["reports/sta.json", "reports/sdc.json",
                                                       "reports/untimed.rpt"])
    assert {k: v for k, v in direct_meta.items() if k not in ENGINE_KEYS} == \
           {k: v for k, v in sc_meta.items() if k not in ENGINE_KEYS}
    assert (direct_meta["run__flow__engine"], sc_meta["run__flow__engine"]) == ("direct", "sc")
    assert [(r.name, r.tool, r.tool_version) for r in direct.steps] == \
           [(r.name, r.tool, r.tool_version) for r in sc.steps]
    assert all(r.exe_cpu_s > 0 for r in direct.steps if r.name != "elaborate")


def test_the_direct_engine_never_imports_siliconcompiler(tmp_path: Path):
    """The point of the engine: none of SiliconCompiler's schema, scheduler or tasks in the
    process (its Yosys scripts run, read from its installed folder); the `sc` engine does."""
    code = ("import sys; from closer.flow.runner import run_flow; "
            "run_flow('gcd', to='elaborate', out=sys.argv[1], engine=sys.argv[2]); "
            "print('siliconcompiler' in sys.modules)")
    for engine, expected in (("direct", "False"), ("sc", "True")):
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path / engine), engine],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip().splitlines()[-1] == expected, engine


def test_the_node_key_follows_every_input(tmp_path: Path):
    rtl = tmp_path / "a.v"
    rtl.write_text("module a; endmodule\n")
    folder = tmp_path / "inc"
    folder.mkdir()
    (folder / "x.vh").write_text("`define X 1\n")

    def key(**change):
        args = {"step": "lint", "settings": {"top": "a"}, "inputs": {"rtl": rtl, "inc": folder},
                "tool_version": "5.048", "platform_revision": "p1"} | change
        return node_key(args["step"], args["settings"], args["inputs"], args["tool_version"],
                        args["platform_revision"])

    base = key()
    assert key() == base
    changed = [key(step="elaborate"), key(settings={"top": "b"}), key(tool_version="5.050"),
               key(platform_revision="p2"), key(inputs={"rtl": rtl})]
    rtl.write_text("module a; wire w; endmodule\n")
    changed.append(key())
    rtl.write_text("module a; endmodule\n")
    (folder / "x.vh").write_text("`define X 2\n")
    changed.append(key())
    assert base not in changed and len(set(changed)) == len(changed)


def test_reuse_needs_the_record_its_key_and_the_outputs(tmp_path: Path, pdk_paths):
    """gcd to elaborate: an unchanged rerun reuses both nodes; a damaged record, a record of
    another key or a missing output reruns that node (and only what follows reads new files)."""
    out = tmp_path / "run"
    first = run_flow("gcd", to="elaborate", out=out)
    assert [s.reused for s in first.steps] == [False, False]
    assert [s.reused for s in run_flow("gcd", to="elaborate", out=out).steps] == [True, True]
    paths = FlowPaths(out, "gcd")
    record = paths.node_dir("elaborate") / NODE_RECORD
    for damage in ("garbage", "other key", "missing output"):
        if damage == "garbage":
            record.write_text("{not json")
        elif damage == "other key":
            data = json.loads(record.read_text())
            record.write_text(json.dumps(data | {"key": "0" * 64}))
        else:
            (paths.node_dir("elaborate") / "outputs" / "gcd.v").unlink()
        again = run_flow("gcd", to="elaborate", out=out)
        assert [s.reused for s in again.steps] == [True, False], damage
        assert read_record(paths.node_dir("elaborate")) is not None
        assert (paths.node_dir("elaborate") / "outputs" / "gcd.v").is_file()


def test_a_failing_node_is_named_with_its_log_and_recorded(tmp_path: Path, pdk_paths):
    """An RTL error stops the run at lint with the step, the tool, the log and its error lines;
    flow.json records the failure and the engine."""
    design, dpaths = load_design("gcd")
    folder = tmp_path / "gcd"
    shutil.copytree(dpaths.root, folder)
    rtl = folder / design.sources.rtl[0]
    rtl.write_text(rtl.read_text().replace("endmodule", "wire = ;\nendmodule", 1))
    out = tmp_path / "run"
    with pytest.raises(ToolError, match=r"step lint \(verilator\) failed; log: .*lint\.log\n%Error"):
        run_flow(str(folder), to="sta", out=out)
    record = json.loads((out / "flow.json").read_text())
    assert record["status"] == "failed" and record["engine"] == "direct"
    assert "step lint (verilator) failed" in record["error"]


def test_progress_names_each_step_as_it_runs_or_is_reused(tmp_path: Path, pdk_paths):
    """Off a terminal, a line per step on stderr, whatever the tools' speed: `flow: lint` when it
    runs, `flow: lint: reused` when its node is reused."""
    from click.testing import CliRunner

    from closer.flow.cli import flow_group

    argv = ["run", "gcd", "--to", "elaborate", "--out", str(tmp_path)]
    first, second = (CliRunner().invoke(flow_group, argv) for _ in range(2))
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    assert [line.split(" (at ")[0] for line in first.stderr.splitlines()] == ["flow: lint", "flow: elaborate"]
    assert [line.split(" (at ")[0] for line in second.stderr.splitlines()] == \
           ["flow: lint: reused", "flow: elaborate: reused"]
