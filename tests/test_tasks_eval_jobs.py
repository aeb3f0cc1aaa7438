"""The evaluator's two scorings (hidden, public): side by side on two CPUs, one after the other on
one or with CLOSER_EVAL_JOBS=1; a malformed setting is one error naming the variable."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from closer.errors import InputError
from closer.tasks import evaluate
from closer.tasks.paths import EvalPaths


def _fake_scorings(monkeypatch) -> list[tuple[str, float, float]]:
    spans: list[tuple[str, float, float]] = []
    lock = threading.Lock()

    def score_tree(tree, task, sc, out, progress=None, shared=None):
        start = time.monotonic()
        time.sleep(0.4)
        with lock:
            spans.append((sc, start, time.monotonic()))
        return f"{sc} of {out.name}"

    monkeypatch.setattr(evaluate, "score_tree", score_tree)
    monkeypatch.setattr(evaluate, "hidden_conditions", lambda task, hidden, paths: "hidden")
    monkeypatch.setattr(evaluate, "public_conditions", lambda task, tree: "public")
    return spans


def _overlap(spans) -> bool:
    (_, a0, a1), (_, b0, b1) = spans
    return a0 < b1 and b0 < a1


@pytest.mark.parametrize("jobs, side_by_side", [("2", True), ("1", False)])
def test_the_two_scorings_run_side_by_side_with_two_jobs(monkeypatch, tmp_path: Path, jobs, side_by_side) -> None:
    spans = _fake_scorings(monkeypatch)
    monkeypatch.setenv(evaluate.EVAL_JOBS_ENV, jobs)
    hid, pub = evaluate._score_both(None, None, None, EvalPaths(tmp_path))
    assert (hid, pub) == ("hidden of hidden", "public of public")  # results in (hidden, public) order
    assert _overlap(spans) is side_by_side


def test_default_follows_the_cpus(monkeypatch) -> None:
    monkeypatch.delenv(evaluate.EVAL_JOBS_ENV, raising=False)
    monkeypatch.setattr(evaluate.os, "sched_getaffinity", lambda pid: {0})
    assert evaluate.scoring_jobs() == 1
    monkeypatch.setattr(evaluate.os, "sched_getaffinity", lambda pid: {0, 1, 2})
    assert evaluate.scoring_jobs() == 2


@pytest.mark.parametrize("value", ["3", "0", "two", "-1"])
def test_malformed_setting_is_refused_before_any_work(monkeypatch, tmp_path: Path, value) -> None:
    monkeypatch.setenv(evaluate.EVAL_JOBS_ENV, value)
    with pytest.raises(InputError, match=evaluate.EVAL_JOBS_ENV):
        evaluate.evaluate(tmp_path / "missing", tmp_path / "task", tmp_path / "out")


def test_a_failing_scoring_is_raised(monkeypatch, tmp_path: Path) -> None:
    _fake_scorings(monkeypatch)
    def broken(tree, task, sc, out, progress=None, shared=None):
        raise InputError(f"{sc}: broken")
    monkeypatch.setattr(evaluate, "score_tree", broken)
    monkeypatch.setenv(evaluate.EVAL_JOBS_ENV, "2")
    with pytest.raises(InputError, match="hidden: broken"):
        evaluate._score_both(None, None, None, EvalPaths(tmp_path))
