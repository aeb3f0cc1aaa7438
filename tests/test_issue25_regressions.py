"""Issue 25, case by case: every bad input the issue lists is now refused (exit 2, one line naming
the file or option, no traceback) or flagged, and every kill/timeout case leaves no process.

One parametrized case per bullet of the issue. The property-based versions of the same readers
are tests/test_fuzz_*.py; the cases that need a full `closer task run` are real-tool tests in
other files, named in `ELSEWHERE` (a test here checks that each named test exists).
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import psutil
import pytest

from closer.metered.cli import tool_group
from closer.metered.paths import WorkspacePaths
from closer.paths import repo_paths
from tests.conftest import require_tool
from tests.fuzz_support import CliResult, assert_refused, run_closer
from tests.metered_helpers import make_record, make_workspace, tool_config

TESTS = Path(__file__).parent
METRICS = TESTS / "fixtures" / "orfs" / "gcd_closer_flow_synth" / "metadata.json"
TARGETS = repo_paths().design_dir("gcd") / "targets.toml"
GCD = repo_paths().design_dir("gcd")
LINES = [json.loads(make_record(i, reward=i / 10, elapsed_s=i * 7.5).model_dump_json()) for i in range(1, 4)]


@pytest.fixture(scope="module")
def started(tmp_path_factory) -> WorkspacePaths:
    """A metered run with one recorded sim call (real iverilog/vvp); cases damage copies of it."""
    require_tool("iverilog")
    ws = make_workspace(tmp_path_factory.mktemp("issue25") / "ws", tool_config(None))
    assert _tool(ws, "sim").code == 0
    return ws


@pytest.fixture(scope="module")
def task(tmp_path_factory) -> Path:
    from closer.tasks.generate import generate_suite
    from closer.tasks.models import TaskKind
    from closer.tasks.paths import SuitePaths

    out = tmp_path_factory.mktemp("suite")
    generate_suite("gcd", out, kinds=[TaskKind.A], budgets=["low"])
    return SuitePaths(out).task("gcd-A-low").root


def _tool(ws: WorkspacePaths, *args: str) -> CliResult:
    return run_closer(["-w", str(ws.root), *args], command=tool_group, prog="closer-tool")


def _copy(ws: WorkspacePaths, dest: Path) -> WorkspacePaths:
    shutil.copytree(ws.root, dest, symlinks=True)
    return WorkspacePaths(dest)


# ------------------------------------------------------------------ readers of files and options

def _reward(tmp: Path, text: str) -> tuple[CliResult, str]:
    (tmp / "metrics.json").write_text(text)
    return run_closer(["reward", "--metrics", str(tmp / "metrics.json"), "--targets", str(TARGETS)]), "metrics.json"


def _metrics_with(key: str, literal: str) -> str:
    marker = "\u0000MARK\u0000"
    return json.dumps({**json.loads(METRICS.read_text()), key: marker}).replace(json.dumps(marker), literal)


def _reward_stage(tmp: Path, damage: Callable[[Path], None]) -> tuple[CliResult, str]:
    logs = tmp / "logs"
    logs.mkdir()
    shutil.copy(METRICS, logs / "1_synth.json")
    damage(logs / "2_1_floorplan.json")
    return run_closer(["reward", "--metrics", str(logs), "--targets", str(TARGETS)]), "2_1_floorplan.json"


def _summarize(tmp: Path, lines: list[dict], *options: str) -> tuple[CliResult, str]:
    path = tmp / "trajectory.jsonl"
    path.write_text("".join(json.dumps(ln) + "\n" for ln in lines))
    result = run_closer(["trajectory", "summarize", str(path), "--wall-budget-s", "100", "--cost-budget", "10",
                         *options])
    return result, (options[0].split("=")[0] if options else "trajectory.jsonl")


def _with(line: dict, **changes: object) -> dict:
    return {**line, **changes}


def _design(tmp: Path, old: str, new: str | bytes, source: Path = GCD) -> tuple[CliResult, str]:
    folder = tmp / source.name
    shutil.copytree(source, folder)
    toml = folder / "design.toml"
    text = toml.read_text()
    if isinstance(new, bytes):
        toml.write_bytes(new)
    else:
        assert old in text, old
        toml.write_text(text.replace(old, new, 1))
    return run_closer(["design", "show", str(folder)]), "design.toml"


def _damaged_tool(tmp: Path, ws: WorkspacePaths, name: str, damage: Callable[[Path], None],
                  command: str = "sim") -> tuple[CliResult, str]:
    ws = _copy(ws, tmp / "ws")
    target = (ws.control / name).resolve() if name.startswith("..") else ws.control / name
    damage(target)
    return _tool(ws, command), target.name


def _as_dir(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


def _as_file(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.write_text("x")


def _replay_snapshot_list(tmp: Path, ws: WorkspacePaths) -> tuple[CliResult, str]:
    ws = _copy(ws, tmp / "ws")
    [manifest] = [p for p in ws.control.joinpath("snapshots").iterdir()
                  if p.name.startswith(json.loads(ws.trajectory.read_text().splitlines()[0])["surface_digest"])]
    manifest.write_text("[]")
    return run_closer(["trajectory", "replay", str(ws.root)]), manifest.name


def _replay_torn(tmp: Path, ws: WorkspacePaths) -> tuple[CliResult, str]:
    ws = _copy(ws, tmp / "ws")
    with open(ws.trajectory, "ab") as handle:
        handle.write(ws.trajectory.read_bytes()[:40])
    return run_closer(["trajectory", "replay", str(ws.root)]), "trajectory.jsonl"


def _run_json_wall(tmp: Path, ws: WorkspacePaths) -> tuple[CliResult, str]:
    def damage(path: Path) -> None:
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, "budget": {**data["budget"], "wall_s": -5}}))
    return _damaged_tool(tmp, ws, "run.json", damage, "status")


def _trajectory_noise(tmp: Path, ws: WorkspacePaths) -> tuple[CliResult, str]:
    return _damaged_tool(tmp, ws, "trajectory.jsonl", lambda p: p.write_bytes(b"\x00\x9c\xf1random bytes\x07"))


def _export_garbage_hidden(tmp: Path, task: Path) -> tuple[CliResult, str]:
    from closer.tasks.paths import TaskPaths

    suite = tmp / "suite"
    shutil.copytree(task.parent.parent, suite, symlinks=True)
    copy = suite / task.relative_to(task.parent.parent)
    hidden = TaskPaths(copy).hidden.root / "hidden.json"
    hidden.write_bytes(b"\x01{garbage")
    # the export checks the suite's checksums before it parses anything: the changed hidden part is named
    return run_closer(["task", "export-harbor", str(copy), "--out", str(tmp / "harbor")]), str(hidden.parent)


# Each case: (fixture it needs or None, the case) -> (result, what the error line must name).
Case = Callable[..., tuple[CliResult, str]]
CRASHES: dict[str, tuple[str | None, Case]] = {
    "reward area 5e-324": (None, lambda t: _reward(t, _metrics_with("synth__design__instance__area__stdcell", "5e-324"))),
    "reward integer 10**400": (None, lambda t: _reward(t, _metrics_with("synth__design__instance__area__stdcell",
                                                                        str(10 ** 400)))),
    "reward 5001-digit integer in an unused key": (None, lambda t: _reward(t, _metrics_with("unused__key", "9" * 5001))),
    "reward 5000-deep nesting": (None, lambda t: _reward(t, _metrics_with("unused__key", "[" * 5000 + "]" * 5000))),
    "summarize reward NaN": (None, lambda t: _summarize(t, [_with(LINES[0], reward=float("nan")), *LINES[1:]])),
    "summarize --wall-budget-s 0": (None, lambda t: _summarize(t, LINES, "--wall-budget-s=0")),
    "design show binary design.toml": (None, lambda t: _design(t, "", b"\xff\xfe\x00\x81binary")),
    "export-harbor garbage hidden.json": ("task", _export_garbage_hidden),
    **{f"closer-tool {name} as a directory": ("started", lambda t, ws, n=name: _damaged_tool(t, ws, n, _as_dir))
       for name in ("trajectory.jsonl", "inflight.json", "lock", "run.json")},
    **{f"closer-tool {name} as a file": ("started", lambda t, ws, n=name: _damaged_tool(t, ws, n, _as_file))
       for name in ("objects", "../results", "../results/0002_sim")},
    "closer-tool binary run.json": ("started", lambda t, ws: _damaged_tool(
        t, ws, "run.json", lambda p: p.write_bytes(b"\xff\xfe\x00garbage"))),
}

SILENT: dict[str, tuple[str | None, Case]] = {
    "reward hold slack nested in a dict": (None, lambda t: _reward(t, _metrics_with("finish__timing__hold__ws",
                                                                                   '{"x": -5.0}'))),
    "reward clock details a bare string": (None, lambda t: _reward(t, _metrics_with("constraints__clocks__details",
                                                                                   '"clk: 10.0"'))),
    "reward stage file a directory": (None, lambda t: _reward_stage(t, Path.mkdir)),
    "reward stage file a broken symlink": (None, lambda t: _reward_stage(t, lambda p: p.symlink_to(t / "gone"))),
    "summarize duplicated record": (None, lambda t: _summarize(t, [LINES[0], LINES[1], LINES[1], LINES[2]])),
    "summarize reversed order": (None, lambda t: _summarize(t, LINES[::-1])),
    "summarize gap in seq": (None, lambda t: _summarize(t, [LINES[0], LINES[2]])),
    "summarize schema_version 999": (None, lambda t: _summarize(t, [_with(LINES[0], schema_version="999"),
                                                                    *LINES[1:]])),
    "summarize another run's run_id": (None, lambda t: _summarize(t, [*LINES[:2], _with(LINES[2], run_id="other")])),
    "summarize reward 2.0": (None, lambda t: _summarize(t, [_with(LINES[0], reward=2.0), *LINES[1:]])),
    "summarize reward -1.0": (None, lambda t: _summarize(t, [_with(LINES[0], reward=-1.0), *LINES[1:]])),
    "summarize time running backwards": (None, lambda t: _summarize(t, [*LINES[:2], _with(LINES[2], elapsed_s=1.0)])),
    "summarize --threshold nan": (None, lambda t: _summarize(t, LINES, "--threshold=nan")),
    "design show period_ns inf": (None, lambda t: _design(t, "period_ns = 10.0", "period_ns = inf")),
    'design show period_ns "10"': (None, lambda t: _design(t, "period_ns = 10.0", 'period_ns = "10"')),
    "design show period_ns true": (None, lambda t: _design(t, "period_ns = 10.0", "period_ns = true")),
    'design show top ""': (None, lambda t: _design(t, 'top = "gcd"', 'top = ""')),
    "design show rtl []": (None, lambda t: _design(t, 'rtl = ["rtl/gcd.v"]', "rtl = []")),
    "design show commit abc": (None, lambda t: _design(t, 'commit = "87c89acc18994c8cf9a2311e871818e87d304568"',
                                                       'commit = "abc"', repo_paths().design_dir("picorv32"))),
    "run.json wall_s -5": ("started", _run_json_wall),
    "trajectory overwritten with random bytes": ("started", _trajectory_noise),
}


def _run_case(request, tmp_path: Path, table: dict, name: str) -> tuple[CliResult, str]:
    needs, case = table[name]
    return case(tmp_path) if needs is None else case(tmp_path, request.getfixturevalue(needs))


@pytest.mark.parametrize("name", sorted(CRASHES))
def test_crash_case_is_a_one_line_refusal(request, tmp_path: Path, name: str):
    result, names = _run_case(request, tmp_path, CRASHES, name)
    assert_refused(result, names)


@pytest.mark.parametrize("name", sorted(SILENT))
def test_silently_accepted_case_is_refused(request, tmp_path: Path, name: str):
    result, names = _run_case(request, tmp_path, SILENT, name)
    assert_refused(result, names)


# `replay` reports per call: a damaged input is that call's mismatch (exit 1), named, not a crash
REPLAY: dict[str, Case] = {
    "replay snapshot manifest []": _replay_snapshot_list,
    "replay torn last line": _replay_torn,
}


@pytest.mark.parametrize("name", sorted(REPLAY))
def test_replay_flags_a_damaged_input(started: WorkspacePaths, tmp_path: Path, name: str):
    result, names = REPLAY[name](tmp_path, started)
    assert result.code == 1 and "Traceback" not in result.err, result
    assert names in result.out + result.err, result
    counts = re.search(r"(\d+) reproduced, (\d+) mismatch, (\d+) skipped, (\d+) unreadable", result.out)
    assert counts and int(counts[2]) + int(counts[4]) >= 1, result.out  # never "all reproduced"


# ------------------------------------------------------------------ kills and timeouts

def test_per_call_timeout_leaves_no_simulator(tmp_path: Path):
    """`closer-tool sim` past its timeout: the call is charged and refused, no closer.sim or vvp is left."""
    require_tool("iverilog")
    ws = make_workspace(tmp_path / "ws", tool_config(None, sim_timeout_s=3))
    tb = ws.root / "tb" / "counter_tb.v"
    tb.write_text(tb.read_text().replace("$finish;", "forever #10;"))  # a simulation that never ends
    done = subprocess.run([sys.executable, "-m", "closer.metered", "sim"], cwd=ws.root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    time.sleep(0.5)
    left = [p for p in psutil.process_iter(["cmdline", "cwd"])
            if str(ws.root) in " ".join(p.info["cmdline"] or []) or str(ws.root) in (p.info["cwd"] or "")]
    assert not left, [p.info["cmdline"] for p in left]
    [record] = [json.loads(ln) for ln in ws.trajectory.read_text().splitlines()]
    assert record["outcome"] == "timeout" and record["cost"]["counted"]


# issue case -> the real-tool test (file::name) that reproduces it
ELSEWHERE = {
    "two closer task run into one --out: FileNotFoundError; both report success, one record survives":
        "test_tasks_run_reliability.py::test_parallel_runs_into_one_out_never_lose_a_record",
    "a killed closer-tool leaves its tool running":
        "test_procs_cleanup.py::test_sigkill_of_closer_tool_sim_leaves_no_process",
    "SIGKILL of closer task run leaves the agent and the evaluator's simulators, no marker; a rerun deletes it":
        "test_tasks_run_reliability.py::test_sigkill_of_task_run_leaves_no_process_and_a_marker",
    "a call cut off by the wall clock is missing from record.json":
        "test_tasks_run_reliability.py::test_call_cut_off_by_the_wall_clock_is_in_the_record",
    "initial forever #0 holds the evaluator for tens of minutes":
        "test_tasks_sim_timeout.py::test_generate_stores_the_golden_time_and_a_hang_is_stopped_at_the_scaled_limit",
    "an agent that kills its own closer-tool makes the run an infrastructure failure":
        "test_security_sandbox.py::test_a_killed_client_is_charged_and_never_an_infrastructure_failure",
    "invalid runs count in the reward means":
        "test_report.py::test_invalid_runs_never_enter_the_means",
}


@pytest.mark.parametrize("case", sorted(ELSEWHERE))
def test_kill_and_timeout_cases_have_their_real_tool_test(case: str):
    filename, test_name = ELSEWHERE[case].split("::")
    tree = ast.parse((TESTS / filename).read_text())
    assert test_name in {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}, ELSEWHERE[case]
