"""Fuzz of the readers of files Closer wrote earlier and reads back (a mutant set's manifest, a
mutant design.toml, a suite manifest, a rescore file, a metered tool's metrics file, the Harbor
verifier's evaluation record): garbage, a directory or a broken symlink in their place is one
InputError line naming the file (or, where the reader documents a fallback, that fallback) and
never a traceback; a valid file still reads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from closer.errors import InputError
from closer.paths import repo_paths
from tests.fuzz_support import FUZZ

json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                                     st.text(max_size=6)),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                      max_size=3), max_leaves=8)
garbage = st.one_of(
    st.binary(max_size=120),
    st.sampled_from([b"", b"[]", b"{}", b"null", b"NaN", b'{"a": NaN}', b"[" * 5000, b"9" * 5000,
                     b'{"x": 1e999}', b"\xff\xfe\x00", b'{"a": 1, "a": 2}']),
    json_values.map(lambda v: json.dumps(v).encode()),
)
toml_garbage = st.one_of(st.binary(max_size=120),
                         st.sampled_from([b"x = [" * 3000, b"a = " + b"1" * 5000, b"[design]\ntop = 3\n", b"= ="]))


def _put(path: Path, content: bytes | str) -> None:
    """`content` bytes as the file, or the damage named by a string."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if content == "directory":
        path.mkdir()
    elif content == "broken symlink":
        path.symlink_to(path.parent / "gone")
    else:
        path.write_bytes(content)


damaged = st.one_of(garbage, st.sampled_from(["directory", "broken symlink"]))


def _refused(read: Callable[[], object], name: str) -> None:
    try:
        read()
    except InputError as exc:
        assert name in str(exc) and "\n" not in str(exc), str(exc)
    else:  # a garbage that happens to be valid JSON of the right shape is still refused by the model
        pytest.fail(f"{name}: accepted")


@FUZZ
@given(content=damaged)
def test_mutant_manifest(tmp_path: Path, content):
    from closer.mutants.generate import load_manifest
    from closer.mutants.paths import MutantStorePaths

    store = MutantStorePaths(tmp_path / "set")
    _put(store.manifest, content)
    _refused(lambda: load_manifest(store), "manifest.json")


@FUZZ
@given(content=st.one_of(toml_garbage, st.sampled_from(["directory", "broken symlink"])))
def test_mutant_design_toml(tmp_path: Path, content):
    from closer.mutants.design_input import load_design

    folder = tmp_path / "d"
    _put(folder / "design.toml", content)
    _refused(lambda: load_design(str(folder)), "design.toml")


def test_mutant_design_toml_valid():
    from closer.mutants.design_input import load_design

    assert load_design(str(repo_paths().design_dir("gcd"))).top == "gcd"


@FUZZ
@given(content=damaged)
def test_suite_manifest(tmp_path: Path, content):
    from closer.tasks.generate import _existing_manifest
    from closer.tasks.paths import SuitePaths

    suite = SuitePaths(tmp_path / "suite")
    _put(suite.manifest, content)
    _refused(lambda: _existing_manifest(suite), "suite.json")


@FUZZ
@given(content=damaged)
def test_rescore_file(tmp_path: Path, content):
    from closer.tasks.rescore import RESCORE_FILE, load_rescore

    _put(tmp_path / RESCORE_FILE, content)
    _refused(lambda: load_rescore(tmp_path), RESCORE_FILE)


@FUZZ
@given(content=damaged)
def test_metered_metrics_file_is_a_tool_error(tmp_path: Path, content):
    from closer.metered.config import ToolCommands
    from closer.metered.execute import Outcome, ToolRun, _collect_metrics

    path = tmp_path / "metrics.json"
    _put(path, content)
    run = ToolRun(Outcome.OK)
    _collect_metrics(run, ToolCommands(commands=[["true"]]), path)
    if isinstance(content, bytes) and _strict_object(content):
        assert run.outcome is Outcome.OK and run.metrics == json.loads(content)
    else:
        assert run.outcome is Outcome.TOOL_ERROR and "metrics.json" in run.message and "\n" not in run.message


def _strict_object(content: bytes) -> bool:
    from closer.inputs import JsonShapeError, parse_json

    try:
        return isinstance(parse_json(content), dict)
    except JsonShapeError:
        return False


def _reward_json(tmp_path: Path, content) -> tuple[int, dict, str]:
    """The verifier's reward step (closer.tasks.harbor_reward): exit, reward.json, reason.txt."""
    from closer.tasks.harbor_reward import main

    evaluation, out = tmp_path / "evaluation.json", tmp_path / "verifier"
    _put(evaluation, content)
    result = CliRunner().invoke(main, [str(evaluation), str(out)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    reason = out / "reason.txt"
    return result.exit_code, json.loads((out / "reward.json").read_text()), reason.read_text() if reason.is_file() else ""


@FUZZ
@given(content=damaged)
def test_harbor_reward_json_of_a_damaged_evaluation_is_zero(tmp_path: Path, content):
    code, reward, err = _reward_json(tmp_path, content)
    assert code == 0 and reward["reward"] == 0.0 and reward["scored"] == 0.0
    assert "evaluation.json" in err and len(err.strip().splitlines()) == 1


def test_harbor_reward_json_of_a_real_evaluation(tmp_path: Path):
    from closer.tasks.evaluate import EvaluationRecord

    record = EvaluationRecord(task_id="gcd-A-low", suite_version="1", design="gcd", kind="A", budget_tier="low",
                              evaluated_at="2026-12-01T00:00:00+00:00", workspace=str(tmp_path), accepted=True,
                              scored=True, reward=0.5, gates={"func": "pass"})
    code, reward, _ = _reward_json(tmp_path, record.model_dump_json().encode())
    assert code == 0 and reward["reward"] == 0.5 and reward["scored"] == 1.0 and reward["gate__func"] == 1.0
