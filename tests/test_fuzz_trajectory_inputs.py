"""Fuzz of the trajectory readers (`closer trajectory summarize`, the ledger, `replay`) and of the
numbers on their command lines: every bad record, bad order or bad option is refused with exit 2
and one line naming the file (or option); none is summarized silently."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz_support import FUZZ, assert_refused, run_closer
from tests.metered_helpers import make_record

RECORDS = [make_record(i, reward=round(i / 10, 3), elapsed_s=i * 7.5, units=1.0) for i in range(1, 6)]
LINES = [json.loads(r.model_dump_json()) for r in RECORDS]


def _write(tmp_path: Path, lines: list[dict | bytes]) -> Path:
    path = tmp_path / "trajectory.jsonl"
    path.write_bytes(b"".join((ln if isinstance(ln, bytes) else json.dumps(ln).encode()) + b"\n"
                              for ln in lines))
    return path


def _summarize(path: Path, *options: str):
    return run_closer(["trajectory", "summarize", str(path), "--wall-budget-s", "100",
                       "--cost-budget", "10", *options])


def _set(record: dict, dotted: str, value: object) -> dict:
    out = json.loads(json.dumps(record))
    node = out
    *parents, leaf = dotted.split(".")
    for key in parents:
        node = node[key]
    node[leaf] = value
    return out


bad_number = st.sampled_from([float("nan"), float("inf"), float("-inf")])
bad_field = st.one_of(
    st.tuples(st.sampled_from(["reward", "best_reward", "partial_reward"]),
              st.one_of(bad_number, st.sampled_from([-1.0, 2.0, 1.0000001, -1e-9, 1e308]))),
    st.tuples(st.sampled_from(["elapsed_s", "cost.units", "cost.tool_wall_s"]),
              st.one_of(bad_number, st.sampled_from([-1.0, -1e-3]))),
    st.tuples(st.just("metrics"), bad_number.map(lambda v: {"synth__area": v})),
    st.tuples(st.just("schema_version"), st.sampled_from(["999", "0", "", "2", 1])),
    st.tuples(st.just("seq"), st.sampled_from([0, -1, "1", 1.5, None])),
    st.tuples(st.just("run_id"), st.sampled_from(["other-run", "", "HAND"])),
    st.tuples(st.just("started_at"), st.just("2027-01-01T00:00:00Z")),  # after ended_at
    st.tuples(st.just("outcome"), st.sampled_from(["fine", "", None])),
    st.tuples(st.just("tool"), st.sampled_from(["route", "", 3])),
)


@FUZZ
@given(index=st.integers(min_value=0, max_value=len(LINES) - 1), field=bad_field)
def test_a_bad_field_in_any_record_is_refused(tmp_path: Path, index: int, field: tuple[str, object]):
    name, value = field
    lines = list(LINES)
    lines[index] = _set(lines[index], name, value)
    if name == "run_id" and index == 0:  # the first record sets the run: make the others foreign
        lines = [lines[0]] + [_set(ln, "run_id", "hand") for ln in lines[1:]]
    # a bare NaN/Infinity is written the way Python's json writes it
    result = _summarize(_write(tmp_path, lines))
    assert_refused(result, "trajectory.jsonl")


orders = st.one_of(
    st.integers(min_value=0, max_value=4).map(lambda i: LINES[:i + 1] + LINES[i:]),            # duplicate
    st.just(LINES[::-1]),                                                                      # reversed
    st.integers(min_value=0, max_value=3).map(lambda i: LINES[:i] + LINES[i + 1:]),           # gap/missing first
    st.integers(min_value=0, max_value=3).map(                                                 # swapped pair
        lambda i: LINES[:i] + [LINES[i + 1], LINES[i]] + LINES[i + 2:]),
    st.integers(min_value=1, max_value=4).map(                                                 # time backwards
        lambda i: LINES[:i] + [_set(LINES[i], "elapsed_s", LINES[i - 1]["elapsed_s"] - 1.0)] + LINES[i + 1:]),
    st.integers(min_value=1, max_value=4).map(
        lambda i: LINES[:i] + [_set(_set(LINES[i], "ended_at", "2026-11-29T00:00:00Z"),
                                    "started_at", "2026-11-29T00:00:00Z")] + LINES[i + 1:]),
)


@FUZZ
@given(lines=orders)
def test_records_out_of_order_are_refused(tmp_path: Path, lines: list[dict]):
    assert_refused(_summarize(_write(tmp_path, lines)), "trajectory.jsonl")


@FUZZ
@given(index=st.integers(min_value=0, max_value=5), noise=st.binary(min_size=1, max_size=80))
def test_garbage_line_anywhere_is_refused(tmp_path: Path, index: int, noise: bytes):
    noise = b"#" + noise.replace(b"\n", b" ")
    lines: list = list(LINES)
    lines.insert(index, noise)
    assert_refused(_summarize(_write(tmp_path, lines)), "trajectory.jsonl")


def _run_json(tmp_path: Path, **changes) -> Path:
    from datetime import datetime, timezone

    from closer.budget import BudgetOverride, resolve_budget
    from closer.trajectory.record import Provenance, RunInfo

    info = RunInfo(run_id="hand", workspace=str(tmp_path), started_at=datetime(2026, 11, 30, tzinfo=timezone.utc),
                   budget=resolve_budget(BudgetOverride()), baseline_snapshot="0" * 64, tools_config_sha256="0" * 64,
                   provenance=Provenance(closer_version="t", design_revision="0" * 64))
    data = json.loads(info.model_dump_json())
    for dotted, value in changes.items():
        data = _set(data, dotted.replace("__", "."), value)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    return path


def test_records_of_another_run_than_run_json_are_refused(tmp_path: Path):
    _run_json(tmp_path)
    path = _write(tmp_path, [_set(ln, "run_id", "other") for ln in LINES])
    result = run_closer(["trajectory", "summarize", str(path)])
    assert_refused(result, "run_id")


@FUZZ
@given(change=st.sampled_from([("budget__wall_s", -5), ("budget__wall_s", 0), ("budget__cost_units", -1),
                               ("budget__caps__sim", -2), ("schema_version", "999"), ("run_id", 7),
                               ("started_at", "yesterday"), ("budget__weights__sim", -1.0)]))
def test_a_bad_run_json_is_refused(tmp_path: Path, change: tuple[str, object]):
    _run_json(tmp_path, **{change[0]: change[1]})
    path = _write(tmp_path, LINES)
    assert_refused(run_closer(["trajectory", "summarize", str(path)]), "run.json")


def test_binary_run_json_is_refused(tmp_path: Path):
    (tmp_path / "run.json").write_bytes(b"\xff\x00\x81")
    path = _write(tmp_path, LINES)
    assert_refused(run_closer(["trajectory", "summarize", str(path)]), "run.json")


bad_option = st.one_of(
    st.tuples(st.sampled_from(["--wall-budget-s", "--cost-budget", "--window-cost"]),
              st.sampled_from(["0", "-1", "nan", "inf", "-inf", "x", "1e999"])),
    st.tuples(st.just("--window-calls"), st.sampled_from(["0", "-3", "1.5", "nan"])),
    st.tuples(st.just("--threshold"), st.sampled_from(["nan", "-0.1", "1.5", "inf", "x"])),
)


@FUZZ
@given(option=bad_option)
def test_bad_numbers_on_the_command_line_are_refused(tmp_path: Path, option: tuple[str, str]):
    name, value = option
    path = _write(tmp_path, LINES)
    result = run_closer(["trajectory", "summarize", str(path), "--wall-budget-s", "100",
                         "--cost-budget", "10", f"{name}={value}"])
    assert_refused(result, name)


def test_torn_last_line_is_a_warning_in_summarize(tmp_path: Path):
    path = _write(tmp_path, LINES)
    with open(path, "ab") as f:
        f.write(json.dumps(LINES[0]).encode()[:50])
    result = _summarize(path, "--json")
    assert result.code == 0, result.err
    assert "torn last line" in json.loads(result.out)["bad_lines"][0]


def test_the_valid_trajectory_summarizes(tmp_path: Path):
    result = _summarize(_write(tmp_path, LINES), "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["records"] == 5
