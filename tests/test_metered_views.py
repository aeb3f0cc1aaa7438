"""The metered call's hot path without pydantic: the msgspec views of run.json and tools.toml
against their models (never accept what the model refuses, same values), the record written from
the view (what the model writes, read back equal), and the plain tool call's imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from closer.errors import InputError
from closer.metered.config import ToolConfig
from closer.metered.quickstatus import tool_arguments
from closer.toolclass import ToolClass
from closer.metered.views import RunView, ToolConfigView, load_run_view, load_tool_view
from closer.trajectory import record as record_module
from closer.trajectory.fastrecord import SCHEMA_VERSION, RecordView, new_record, record_json
from closer.trajectory.record import RunInfo, TrajectoryRecord

from tests.fuzz_support import assert_fast_within_reference
from tests.metered_helpers import make_workspace, tool_config
from tests.test_trajectory_fastrecord import _perturb, odd_value, records

PROPERTY = settings(max_examples=150, deadline=None, derandomize=True)
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def started(tmp_path_factory) -> tuple[dict, dict]:
    """(run.json, tools.toml) of a started workspace, as data."""
    ws = make_workspace(tmp_path_factory.mktemp("views") / "ws", tool_config(None, {"sim": 3}))
    config = tool_config(None, {"sim": 3})
    config["tree"] = {"control_files": ["targets.toml"]}
    config["layers"] = {"rtl": ["rtl/*"]}
    return json.loads(ws.run_info.read_text()), config


def _view_or_none(view_type):
    def fast(raw: bytes):
        try:
            return msgspec.convert(json.loads(raw), view_type)
        except msgspec.ValidationError:
            return None
    return fast


def _model_or_none(model, json_mode: bool):
    def reference(raw: bytes):
        try:
            return model.model_validate_json(raw) if json_mode else model.model_validate(json.loads(raw))
        except ValidationError:
            return None
    return reference


def _same_as(view_type, drop: tuple[str, ...] = ()):
    def same(view, model) -> None:
        expected = msgspec.convert(model.model_dump(mode="json"), view_type)
        assert msgspec.structs.replace(view, **{k: {} for k in drop}) == \
            msgspec.structs.replace(expected, **{k: {} for k in drop})
    return same


RUN_FIELDS = ["run_id", "started_at", "schema_version", "budget.tier", "budget.caps.sim", "budget.caps.verify",
              "budget.wall_s", "budget.cost_units", "budget.weights.sim", "budget.stagnation.window_calls",
              "budget.overridden", "budget.extra", "provenance.design", "provenance.tool_versions.sim",
              "baseline_snapshot", "tools_config_sha256", "extra"]
TOOL_FIELDS = ["run.design", "surface.include", "surface.max_file_bytes", "layers.rtl", "layers.nolayer",
               "reward.estimator", "reward.targets", "tree.control_files", "tools.sim.commands",
               "tools.sim.timeout_s", "tools.sim.log_metrics.k", "tools.sim.version", "tools.sim.env.K",
               "tools.sim.extra", "tools.nosuch.commands", "extra"]
odd_config_value = st.one_of(odd_value, st.sampled_from([
    [["iverilog"]], [[]], [], ["a/b"], [".."], "m:f", "m", "(", r"x (\d+)", "x", {"k": "("}, {"k": r"(\d)"}]))


@PROPERTY
@given(field=st.sampled_from(RUN_FIELDS), value=odd_value, delete=st.booleans())
def test_the_run_view_never_accepts_what_the_model_refuses(started, field: str, value: object, delete: bool):
    data = _perturb(json.loads(json.dumps(started[0])), field, value, delete)
    raw = json.dumps(data).encode()
    assert_fast_within_reference(_view_or_none(RunView), _model_or_none(RunInfo, json_mode=True),
                                 _same_as(RunView), raw)


@PROPERTY
@given(field=st.sampled_from(TOOL_FIELDS), value=odd_config_value, delete=st.booleans())
def test_the_tool_view_never_accepts_what_the_model_refuses(started, field: str, value: object, delete: bool):
    """Outside [budget], which the view keeps as read (the run header's budget is the run's, and a
    changed tools.toml is refused by its checksum: tests/test_metered.py)."""
    data = _perturb(json.loads(json.dumps(started[1])), field, value, delete)
    raw = json.dumps(data).encode()
    assert_fast_within_reference(_view_or_none(ToolConfigView), _model_or_none(ToolConfig, json_mode=False),
                                 _same_as(ToolConfigView, drop=("budget",)), raw)


def test_the_views_take_a_started_run_and_word_errors_as_the_models(tmp_path: Path):
    ws = make_workspace(tmp_path / "ws", tool_config(None, {"sim": 3}))
    run = load_run_view(ws.run_info)
    assert run.budget.cap(ToolClass.SIM) == 3 and run.budget.weights.of(ToolClass.SIM) == 1.0
    assert load_tool_view(ws.tools_config).tools  # the sim and verify tables
    ws.run_info.write_text(ws.run_info.read_text().replace('"wall_s":', '"wall_s": -1, "x":', 1))
    with pytest.raises(InputError, match=r"run.json: key"):
        load_run_view(ws.run_info)
    ws.tools_config.write_text(ws.tools_config.read_text().replace("timeout_s = 120", 'timeout_s = "soon"'))
    with pytest.raises(InputError, match=r"tools.toml: key tools.sim.timeout_s"):
        load_tool_view(ws.tools_config)


def test_a_lax_value_the_model_takes_comes_back_as_the_models_value(tmp_path: Path):
    ws = make_workspace(tmp_path / "ws", tool_config(None))
    ws.run_info.write_text(ws.run_info.read_text().replace('"window_calls": ', '"window_calls": "', 1)
                           .replace(',\n      "window_cost_units"', '",\n      "window_cost_units"', 1))
    assert isinstance(load_run_view(ws.run_info).budget.stagnation.window_calls, int)


@PROPERTY
@given(record=records())
def test_a_record_written_from_the_view_reads_back_as_the_model(record: TrajectoryRecord):
    written = new_record(**record.model_dump())
    line = record_json(written)
    assert line.startswith('{"schema_version":')
    assert TrajectoryRecord.model_validate_json(line) == record
    if isinstance(written, RecordView):
        assert json.loads(line) == json.loads(record.model_dump_json())


def test_a_record_the_model_refuses_is_refused_naming_the_field():
    record = json.loads(TrajectoryRecord.model_validate({
        "seq": 1, "run_id": "r", "started_at": "2026-11-30T00:00:00Z", "ended_at": "2026-11-30T00:00:00Z",
        "elapsed_s": 0, "tool": "sim", "surface_digest": None, "outcome": "ok",
        "cost": {"counted": True, "units": 1, "tool_wall_s": 0}}).model_dump_json())
    with pytest.raises(ValidationError, match="metrics"):
        new_record(**{**record, "metrics": {"m": float("inf")}})
    assert SCHEMA_VERSION == record_module.SCHEMA_VERSION


@pytest.mark.parametrize("argv, parsed", [
    (["sim"], (".", "sim", [])),
    (["-w", "ws", "synth", "-D", "x"], ("ws", "synth", ["-D", "x"])),
    (["--workspace=ws", "pnr"], ("ws", "pnr", [])),
    (["status"], None), (["sim", "--help"], None), (["sim", "--", "x"], None), (["-v", "sim"], None),
    (["nosuch"], None), ([], None),
])
def test_plain_tool_command_lines_are_taken_and_the_rest_left_to_click(argv, parsed, monkeypatch):
    monkeypatch.delenv("CLOSER_WORKSPACE", raising=False)
    monkeypatch.chdir(ROOT)
    got = tool_arguments(argv)
    if parsed is None:
        assert got is None
    else:
        folder, tool, args = got
        assert (Path(folder).resolve(), tool, args) == (Path(parsed[0]).resolve(), parsed[1], parsed[2])


def test_the_plain_tool_call_imports_no_model_and_no_click():
    code = ("import sys; import closer.metered.quickcall; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'click') or m == 'closer.budget'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"
