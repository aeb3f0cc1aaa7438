"""The matrix store and resume, without a real flow: entries are appended whole and never
rewritten, a line cut off by a kill is ignored, and a re-run plans only what has no entry (with
each composition from its stored A trial: B from A's RTL under the rest of C's budget, or reward 0
when A failed its gates)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from rich.console import Console

from closer.errors import InputError
from closer.matrix.engine import MatrixRun
from closer.matrix.execute import task_run_argv
from closer.matrix.plan import composed_key
from closer.matrix.spec import load_spec
from closer.matrix.store import ResultStore, StoreEntry
from closer.tasks.runner import RunRecord


def entry(key: str, kind: str = "A", agent: str = "null", trial: int = 1, feasible: bool = False,
          record: str | None = None, reward: float | None = 0.0) -> StoreEntry:
    return StoreEntry(key=key, role="trial", design="gcd", kind=kind, budget_tier="low", agent=agent,
                      machinery_baseline=True, trial=trial, suite_version="0.1.0+x", run_state="success",
                      reward=reward, feasible=feasible, record=record, finished_at="2026-12-01T00:00:00+00:00")


def test_entries_are_appended_whole_and_a_cut_off_line_is_ignored(tmp_path: Path):
    store = ResultStore(tmp_path / "store.jsonl")
    store.append(entry("a/null/trial-1"))
    first = store.path.read_bytes()
    with open(store.path, "a") as handle:
        handle.write('{"schema_version": "1", "key": "a/null/tr')  # a kill mid-write
    assert [e.key for e in store.entries()] == ["a/null/trial-1"]
    store.append(entry("a/null/trial-2"))
    assert store.path.read_bytes().startswith(first)  # append-only: earlier lines kept byte for byte
    assert [e.key for e in store.entries()] == ["a/null/trial-1", "a/null/trial-2"]
    assert set(store.done()) == {"a/null/trial-1", "a/null/trial-2"}


def test_a_line_of_the_wrong_shape_is_refused_naming_file_and_line(tmp_path: Path):
    store = ResultStore(tmp_path / "store.jsonl")
    store.append(entry("a/null/trial-1"))
    with open(store.path, "a") as handle:
        handle.write(json.dumps({"key": "x", "reward": "high"}) + "\n")
    with pytest.raises(InputError, match=r"store.jsonl: line 2: not a store entry"):
        store.entries()


def _record(task_id: str, kind: str, workspace: Path, feasible: bool) -> RunRecord:
    return RunRecord(
        task_id=task_id, kind=kind, design="gcd", budget_tier="low", trial=1, agent="oracle",
        machinery_baseline=True, agent_backend="machinery", agent_model=None, agent_quantization=None, run_id="r",
        started_at="2026-12-01T00:00:00+00:00", agent_exit="finished", agent_returncode=0, agent_wall_s=100.0,
        run_state="success", run_state_rule=1, run_state_reason="scored", reward=1.0 if feasible else 0.0,
        scored=True, accepted=True, gates={}, failing_gates=[], verifier_error=None, raw_metrics={},
        auc_wall_public=None, auc_cost_public=None, best_public_reward=None, time_to_first_feasible_s=None,
        cost_to_first_feasible=None, calls_by_tool={}, outcomes={}, public_reward=None, public_private_gap=None,
        func_pass_gap=None, feasible=feasible, locked_violations=[], suite_version="0.1.0+x",
        tool_versions={}, closer_version="0.1.0", paths={"workspace": str(workspace)})


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, repo) -> tuple[MatrixRun, list]:
    from closer.matrix.plan import plain_jobs

    out = tmp_path_factory.mktemp("matrix")
    run = MatrixRun(load_spec(repo.root / "examples" / "matrix" / "gcd-smoke.toml"), out, Console(stderr=True))
    return run, plain_jobs(run.spec, run.tasks, run.versions, run.paths)


def test_a_rerun_plans_only_the_trials_without_an_entry(smoke, tmp_path: Path):
    run, jobs = smoke
    assert len(jobs) == 3 * 3 * 2  # kinds x agents x trials
    assert len({j.key for j in jobs}) == len(jobs)
    workspace = tmp_path / "a-ws"
    (workspace / "rtl").mkdir(parents=True)
    (workspace / "rtl" / "gcd.v").write_text("module gcd; endmodule\n")
    record = tmp_path / "record.json"
    record.write_text(_record("gcd-A-low", "A", workspace, feasible=True).model_dump_json())
    run.done = {
        "gcd-A-low/oracle/trial-1": entry("gcd-A-low/oracle/trial-1", agent="oracle", feasible=True,
                                          record=str(record), reward=1.0),
        "gcd-A-low/null/trial-1": entry("gcd-A-low/null/trial-1"),
        "gcd-C-low/null/trial-2": entry("gcd-C-low/null/trial-2", kind="C", trial=2),
    }
    todo = run.pending(jobs)
    plain = [j for j in todo if j.role == "trial"]
    assert {j.key for j in plain} == {j.key for j in jobs} - set(run.done)  # only the missing ones
    assert len(plain) == len(jobs) - 3
    [ab] = [j for j in todo if j.role == "ab"]
    assert ab.key == composed_key("gcd", "low", "oracle", 1) and ab.composed_from == "gcd-A-low/oracle/trial-1"
    assert ab.task_dir.name == "gcd-B-low" and ab.start_rtl == workspace / "rtl"
    argv = task_run_argv(ab)
    assert argv[argv.index("--start-rtl") + 1] == str(workspace / "rtl") and "--resume" in argv
    assert argv[argv.index("--trial") + 1] == "1"
    budget = tomllib.loads(Path(argv[argv.index("--budget") + 1]).read_text())["budget"]
    assert budget["pnr"] == 3 and budget["sim"] == 40  # C low's caps; the A record made no metered call
    assert budget["wall_s"] == 14400.0 - 100.0  # C's wall clock minus the A trial's
    # the failed A's composition is stored at once with reward 0 and is not planned again
    failed = run.done[composed_key("gcd", "low", "null", 1)]
    assert failed.reward == 0.0 and failed.record is None and failed.composed_from == "gcd-A-low/null/trial-1"
    assert composed_key("gcd", "low", "null", 1) in run.store.done()
    assert composed_key("gcd", "low", "oracle", 1) not in {j.key for j in run.pending(jobs) if j.role == "trial"}


def test_store_lines_validate_against_the_exported_schema(tmp_path: Path):
    import jsonschema

    from closer.paths import repo_paths

    schema = json.loads((repo_paths().root / "closer" / "schemas" / "matrix-store.schema.json").read_text())
    store = ResultStore(tmp_path / "store.jsonl")
    store.append(entry("a/null/trial-1"))
    jsonschema.validate(json.loads(store.path.read_text().splitlines()[0]), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**json.loads(store.path.read_text().splitlines()[0]), "trial": 0}, schema)


def test_the_checkpoint_cache_key_is_the_rtl_a_takes():
    from closer.matrix.checkpoint import projected_digest

    golden = {"rtl/gcd.v": "aa", "constraints/gcd.sdc": "c1", "flow/settings.toml": "f1"}
    other_settings = {**golden, "constraints/gcd.sdc": "c2", "flow/settings.toml": "f2"}
    other_rtl = {**golden, "rtl/gcd.v": "bb"}
    assert projected_digest(golden, ["rtl/*"]) == projected_digest(other_settings, ["rtl/*"])
    assert projected_digest(golden, ["rtl/*"]) != projected_digest(other_rtl, ["rtl/*"])
    assert projected_digest(golden, ["rtl/*"]) != projected_digest({**golden, "rtl/extra.v": "cc"}, ["rtl/*"])


def test_every_cell_runs_its_first_trial_before_any_repeat(smoke):
    """A repeat of a deterministic baseline is handed out after every first trial, so it finds their
    flows stored rather than waiting beside the same flow; a composition queued later goes with
    its trial."""
    from closer.matrix.plan import JobQueue

    _, jobs = smoke
    assert [j.trial for j in jobs] == sorted(j.trial for j in jobs)
    queue = JobQueue(list(reversed(jobs)))
    first = [queue.pop() for _ in range(len(jobs) // 2)]
    assert {j.trial for j in first} == {1} and first[0].key == jobs[-1 - len(jobs) // 2].key  # ties: in order added
    queue.push(jobs[0].model_copy(update={"key": "AB:x", "role": "ab"}))
    assert queue.pop().key == "AB:x" and len(queue) == len(jobs) // 2
    assert {queue.pop().trial for _ in range(len(queue))} == {2} and not queue
