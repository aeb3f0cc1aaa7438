"""Fuzz of `closer reward`'s readers (metrics JSON, per-stage log dirs, targets TOML): every bad
input is refused with exit 2 and one line naming the file; none crashes or scores silently."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz_support import FUZZ, assert_refused, run_closer

FIXTURE = Path(__file__).parent / "fixtures" / "orfs" / "gcd_closer_flow_synth" / "metadata.json"
TARGETS = Path(__file__).resolve().parents[1] / "designs" / "gcd" / "targets.toml"
BASE: dict = json.loads(FIXTURE.read_text())
USED = ["synth__design__instance__area__stdcell", "synth__power__total"]
KEYS = sorted(BASE)

tiny = st.floats(min_value=5e-324, max_value=9e-31).flatmap(lambda v: st.sampled_from([v, -v]))
huge_float = st.floats(min_value=1.1e30, max_value=1.7e308).flatmap(lambda v: st.sampled_from([v, -v]))
long_int = st.integers(min_value=41, max_value=6000).map(lambda n: "9" * n)
non_finite = st.sampled_from(["NaN", "Infinity", "-Infinity"])


def _with(key: str, literal: str) -> str:
    """The fixture as JSON text with `key`'s value replaced by the raw JSON `literal`."""
    marker = "\u0000MARK\u0000"
    text = json.dumps({**BASE, key: marker})
    return text.replace(json.dumps(marker), literal)


def _score(tmp_path: Path, text: bytes | str, targets: Path = TARGETS):
    path = tmp_path / "metrics.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return run_closer(["reward", "--metrics", str(path), "--targets", str(targets)]), "metrics.json"


bad_literal = st.one_of(
    non_finite,
    tiny.map(repr), huge_float.map(repr), long_int,
    st.integers(min_value=60, max_value=5000).map(lambda d: "[" * d + "]" * d),  # deep
    st.integers(min_value=1, max_value=4).map(lambda d: '{"x": ' * d + "-5.0" + "}" * d),  # nested
)


@FUZZ
@given(key=st.sampled_from(KEYS + USED * 4), literal=bad_literal)
def test_bad_value_at_any_key_is_refused(tmp_path: Path, key: str, literal: str):
    result, name = _score(tmp_path, _with(key, literal))
    assert_refused(result, name)


@FUZZ
@given(key=st.sampled_from(USED), literal=st.one_of(
    st.sampled_from(['"10"', "true", "false", "null", "[1]", '""', "0", "-3.5"])))
def test_used_key_of_wrong_type_or_sign_is_refused(tmp_path: Path, key: str, literal: str):
    result, name = _score(tmp_path, _with(key, literal))
    assert_refused(result, name)


@FUZZ
@given(data=st.one_of(
    st.binary(min_size=1, max_size=64).filter(lambda b: b.strip()),
    st.integers(min_value=1, max_value=len(json.dumps(BASE)) - 1).map(lambda n: json.dumps(BASE)[:n].encode()),
    st.sampled_from([b"[]", b"3", b'"x"', b"{}", b"null", b"\xff\xfe{}", b"   "]),
))
def test_malformed_documents_are_refused(tmp_path: Path, data: bytes):
    result, name = _score(tmp_path, data)
    assert_refused(result, name)


def test_duplicate_key_is_refused(tmp_path: Path):
    text = json.dumps(BASE)[:-1] + f', "{USED[0]}": 1.0}}'
    assert_refused(_score(tmp_path, text)[0], "metrics.json")


@pytest.mark.parametrize("damage", ["directory", "broken_symlink", "fifo"])
def test_stage_file_that_is_not_a_file_is_refused(tmp_path: Path, damage: str):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "1_synth.json").write_text(json.dumps(BASE))
    bad = logs / "2_1_floorplan.json"
    {"directory": bad.mkdir, "broken_symlink": lambda: bad.symlink_to(tmp_path / "gone"),
     "fifo": lambda: os.mkfifo(bad)}[damage]()
    result = run_closer(["reward", "--metrics", str(logs), "--targets", str(TARGETS)])
    assert_refused(result, "2_1_floorplan.json")


TARGET_TEXT = TARGETS.read_text()


@FUZZ
@given(edit=st.one_of(
    st.sampled_from(["2000.0", "0.0008"]).flatmap(lambda old: st.sampled_from(
        ["nan", "inf", "-inf", "0.0", "-1.0", "1e-40", "1e40", '"2000"', "true", "[1]", "1" * 5000]
    ).map(lambda new: (f"target = {old}", f"target = {new}"))),
    st.sampled_from(["weight = 1.0"]).flatmap(lambda old: st.sampled_from(
        ["nan", "-1.0", "1e9", '"1"', "false"]).map(lambda new: (old, f"weight = {new}"))),
))
def test_bad_targets_are_refused(tmp_path: Path, edit: tuple[str, str]):
    old, new = edit
    assert old in TARGET_TEXT
    targets = tmp_path / "targets.toml"
    targets.write_text(TARGET_TEXT.replace(old, new, 1))
    metrics = tmp_path / "m.json"
    shutil.copy(FIXTURE, metrics)
    result = run_closer(["reward", "--metrics", str(metrics), "--targets", str(targets)])
    assert_refused(result, "targets.toml")


@FUZZ
@given(data=st.one_of(st.binary(min_size=1, max_size=64),
                      st.sampled_from([b"[" * 3000, b"x = " + b"1" * 5000, b"a = [" * 2000])))
def test_garbage_targets_are_refused(tmp_path: Path, data: bytes):
    targets = tmp_path / "targets.toml"
    targets.write_bytes(data)
    result = run_closer(["reward", "--metrics", str(FIXTURE), "--targets", str(targets)])
    assert_refused(result, "targets.toml")


def test_valid_fixture_still_scores():
    result = run_closer(["reward", "--metrics", str(FIXTURE), "--targets", str(TARGETS)])
    assert result.code == 0, result.err
