"""Reuse of unchanged flow runs (closer.flow.reuse): the key covers every input, only finished runs
are stored, a damaged entry is a miss, and a second unchanged metered `synth` is served from the
workspace's cache, recorded and charged."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from closer.flow import reuse
from closer.flow.paths import ATTEMPTS_ASIDE
from closer.tasks.generate import generate_suite
from closer.tasks.models import TaskKind
from closer.tasks.paths import SuitePaths
from closer.toolchain import search_path

TAIL = ["--config", "default", "--to", "sta", "--backend", "classic"]


def _design(tmp: Path) -> Path:
    folder = tmp / "design" / "d"
    (folder / "rtl").mkdir(parents=True)
    (folder / "rtl" / "top.v").write_text("module top(input a, output y); assign y = a; endmodule\n")
    (folder / "design.toml").write_text('[design]\nname = "d"\n')
    return folder


def _key(folder: Path, tail: list[str] = TAIL) -> str:
    return reuse.flow_key(folder, tail, search_path())


def test_the_key_changes_with_every_input(tmp_path: Path) -> None:
    folder = _design(tmp_path)
    first = _key(folder)
    assert _key(folder) == first  # stable
    assert _key(folder, ["--config", "default", "--to", "pnr", "--backend", "classic"]) != first
    (folder / "rtl" / "top.v").write_text("module top(input a, output y); assign y = ~a; endmodule\n")
    assert _key(folder) != first
    (folder / "rtl" / "top.v").write_text("module top(input a, output y); assign y = a; endmodule\n")
    assert _key(folder) == first
    (folder / "rtl" / "extra.vh").write_text("// a new header\n")
    assert _key(folder) != first


def test_the_key_covers_the_pdk_and_the_tools(tmp_path: Path, monkeypatch) -> None:
    folder = _design(tmp_path)
    first = _key(folder)
    pdk = _fake_pdk(tmp_path / "pdk")
    monkeypatch.setenv("PDK_ROOT", str(pdk))
    assert _key(folder) != first
    with_pdk = _key(folder)
    (pdk / "sky130A" / "lib" / "cells.lib").write_text("library(y) {}\n")
    assert _key(folder) != with_pdk
    assert reuse.flow_key(folder, TAIL, str(tmp_path / "empty-path")) != _key(folder)  # other tool programs


def _fake_pdk(root: Path) -> Path:
    (root / "sky130A" / "lib").mkdir(parents=True)
    (root / "sky130A" / "lib" / "cells.lib").write_text("library(x) {}\n")
    (root / "sky130A" / "cells.gds").write_bytes(b"\0\x06\x00\x02GDS")
    (root / "README.md").write_text("a PDK subset\n")
    return root


def test_the_pdk_key_follows_the_content_not_the_place(tmp_path: Path, monkeypatch) -> None:
    """A copy of the PDK elsewhere (a Harbor container's /opt/pdk), with other modification
    times, is the same PDK; a file of other content (same size), another name or one more file is
    another PDK. Files beside the tree the flow reads (README, checksums) are not part of it."""
    import os

    folder = _design(tmp_path)
    pdk = _fake_pdk(tmp_path / "pdk")
    moved = tmp_path / "elsewhere" / "pdk"
    shutil.copytree(pdk, moved, copy_function=shutil.copyfile)  # new modification times
    os.utime(moved / "sky130A" / "lib" / "cells.lib", ns=(0, 0))
    monkeypatch.setenv("PDK_ROOT", str(pdk))
    original = _key(folder)
    monkeypatch.setenv("PDK_ROOT", str(moved))
    assert _key(folder) == original and reuse.pdk_digest(moved) == reuse.pdk_digest(pdk)
    (moved / "README.md").write_text("another note\n")
    assert _key(folder) == original
    cells = moved / "sky130A" / "lib" / "cells.lib"
    cells.write_text("library(z) {}\n")  # the same size
    assert _key(folder) != original
    cells.write_text("library(x) {}\n")
    assert _key(folder) == original
    cells.rename(cells.with_name("other.lib"))
    assert _key(folder) != original
    cells.with_name("other.lib").rename(cells)
    (moved / "sky130A" / "lib" / "extra.lib").write_text("library(x) {}\n")
    assert _key(folder) != original


def test_the_pdk_is_hashed_once_until_a_file_is_replaced(tmp_path: Path, monkeypatch) -> None:
    """The PDK's digest is kept in closer's cache under its files' stat keys (a full open_pdks tree
    is gigabytes): a fresh process reads it back without hashing; a replaced file is hashed again."""
    import os

    from closer.paths import CACHE_ENV as USER_CACHE_ENV

    monkeypatch.setenv(USER_CACHE_ENV, str(tmp_path / "user-cache"))
    pdk = _fake_pdk(tmp_path / "pdk")
    first = reuse.pdk_digest(pdk)
    reuse._tree_digest.cache_clear()  # as in a new process

    def no_hashing(path):
        raise AssertionError(f"{path} hashed again")

    monkeypatch.setattr(reuse, "file_sha256", no_hashing)
    assert reuse.pdk_digest(pdk) == first
    cells = pdk / "sky130A" / "lib" / "cells.lib"
    cells.write_text("library(z) {}\n")
    os.utime(cells, ns=(1, 1))
    with pytest.raises(AssertionError, match="hashed again"):
        reuse.pdk_digest(pdk)


def test_the_key_covers_the_qrouter_build_the_environment_selects(tmp_path: Path, monkeypatch) -> None:
    folder = _design(tmp_path)
    monkeypatch.delenv("CLOSER_QROUTER_PREFIX", raising=False)
    shared = _key(folder)
    build = tmp_path / "qr" / "share" / "qrouter"
    build.mkdir(parents=True)
    (build / "qrouter.so").write_bytes(b"one build")
    monkeypatch.setenv("CLOSER_QROUTER_PREFIX", str(tmp_path / "qr"))
    private = _key(folder)
    assert private != shared
    time.sleep(0.01)
    (build / "qrouter.so").write_bytes(b"another build, rebuilt")
    assert _key(folder) != private


def _stored_run(tmp_path: Path, cache: reuse.FlowCache, key: str) -> Path:
    out = tmp_path / "run" / "flow"
    (out / "sc").mkdir(parents=True)
    (out / "metadata.json").write_text(json.dumps({"synth__design__instance__area": 12.5}))
    (out / "sc" / "top.vg").write_text("module top(); endmodule\n")
    log = tmp_path / "run" / "flow.log"
    log.write_text("flow log\n")
    cache.store(key, out, log, {"answer": 42})
    return out


def test_store_then_restore_gives_the_same_folder(tmp_path: Path) -> None:
    cache = reuse.FlowCache(tmp_path / "cache")
    key = "ab" * 32
    assert cache.lookup(key) is None
    _stored_run(tmp_path, cache, key)
    entry = cache.lookup(key)
    assert entry is not None and entry.result == {"answer": 42}
    again = tmp_path / "again" / "flow"
    cache.restore(entry, again, tmp_path / "again" / "flow.log")
    assert json.loads((again / "metadata.json").read_text()) == {"synth__design__instance__area": 12.5}
    assert (again / "sc" / "top.vg").read_text() == "module top(); endmodule\n"
    assert "reused run" in (tmp_path / "again" / "flow.log").read_text()
    assert not list((tmp_path / "cache").glob("*/.staging-*"))


def test_the_synthesis_attempts_set_aside_are_not_stored(tmp_path: Path) -> None:
    """sc/attempts/ serves reruns in its own folder only (closer.flow.runner._bring_attempt): an
    entry holds the run without it, and everything else of sc/."""
    cache = reuse.FlowCache(tmp_path / "cache")
    out = tmp_path / "run" / "flow"
    aside = out / ATTEMPTS_ASIDE / "balanced" / "synth"
    aside.mkdir(parents=True)
    (aside / "netlist.json").write_text("{}")
    (out / "sc" / "top" / "attempts").mkdir(parents=True)  # a design's folder of that name stays
    (out / "sc" / "top.vg").write_text("module top(); endmodule\n")
    cache.store("cd" * 32, out)
    stored = cache.entry_dir("cd" * 32) / reuse.OUTPUT_DIR
    assert (stored / "sc" / "top.vg").is_file() and (stored / "sc" / "top" / "attempts").is_dir()
    assert not (stored / ATTEMPTS_ASIDE).exists()


def test_a_restore_elsewhere_names_the_new_folders(tmp_path: Path) -> None:
    """An entry stored from one run's folders and restored into another's: every text file names
    the restoring run's output, design folder and PDK instead of the stored run's (as a fresh run
    there would); a binary file, a path that only starts like a moved one and the files'
    modification times are left as they were. Restored in place, nothing changes."""
    cache = reuse.FlowCache(tmp_path / "cache")
    key = "9a" * 32
    old = {"out": tmp_path / "a" / "flow", "design": tmp_path / "a" / "design" / "gcd", "pdk": tmp_path / "pdk"}
    new = {"out": tmp_path / "b" / "flow", "design": tmp_path / "b" / "design" / "gcd", "pdk": tmp_path / "opt" / "pdk"}
    out = old["out"]
    (out / "sc").mkdir(parents=True)
    text = (f'{{"run__flow__pdk_root": "{old["pdk"]}", "def": "{out}/sc/top.def"}}\n'
            f"read_verilog {old['design']}/rtl/gcd.v\nnot moved: {out}2/x {tmp_path / 'a'}/flow.log\n")
    (out / "metadata.json").write_text(text)
    binary = b"\0\x10" + str(out).encode() + b"\0"
    (out / "sc" / "top.gds").write_bytes(binary)
    log = tmp_path / "a" / "flow.log"
    log.write_text(f"flow run in {out}\n")
    cache.store(key, out, log, locations=old)
    entry = cache.lookup(key)
    assert entry is not None and entry.locations["out"][0] == str(out)
    stored_mtime = (cache.entry_dir(key) / reuse.OUTPUT_DIR / "metadata.json").stat().st_mtime_ns

    cache.restore(entry, new["out"], tmp_path / "b" / "flow.log", locations=new)
    moved = (new["out"] / "metadata.json").read_text()
    assert moved == (f'{{"run__flow__pdk_root": "{new["pdk"]}", "def": "{new["out"]}/sc/top.def"}}\n'
                     f"read_verilog {new['design']}/rtl/gcd.v\nnot moved: {out}2/x {tmp_path / 'a'}/flow.log\n")
    assert (new["out"] / "sc" / "top.gds").read_bytes() == binary
    assert (new["out"] / "metadata.json").stat().st_mtime_ns == stored_mtime
    header, body = (tmp_path / "b" / "flow.log").read_text().split("\n", 1)
    assert header.endswith(f" in {out}); its log follows") and body == f"flow run in {new['out']}\n"

    again = tmp_path / "a" / "again"
    cache.restore(entry, again, locations=dict(old, out=again))
    assert (again / "metadata.json").read_text() == text.replace(str(out) + "/", f"{again}/")
    cache.restore(entry, out, locations=old)
    assert (out / "metadata.json").read_text() == text


@pytest.mark.parametrize("damage", ["garbage", "other key", "missing"])
def test_a_damaged_entry_is_a_miss(tmp_path: Path, damage: str) -> None:
    cache = reuse.FlowCache(tmp_path / "cache")
    key = "cd" * 32
    _stored_run(tmp_path, cache, key)
    entry_file = cache.entry_dir(key) / reuse.ENTRY_FILE
    if damage == "garbage":
        entry_file.write_text("{not json")
    elif damage == "other key":
        entry_file.write_text(entry_file.read_text().replace(key, "ef" * 32))
    else:
        entry_file.unlink()
    assert cache.lookup(key) is None


def test_a_second_writer_of_a_key_leaves_the_first_entry(tmp_path: Path) -> None:
    cache = reuse.FlowCache(tmp_path / "cache")
    key = "12" * 32
    _stored_run(tmp_path, cache, key)
    first = cache.lookup(key)
    other = tmp_path / "other" / "flow"
    other.mkdir(parents=True)
    (other / "metadata.json").write_text("{}")
    (tmp_path / "other" / "flow.log").write_text("")
    cache.store(key, other, tmp_path / "other" / "flow.log", {"answer": 0})
    assert cache.lookup(key) == first


def test_a_second_asker_of_a_key_in_progress_waits_for_its_entry(tmp_path: Path) -> None:
    """Two processes after the same flow: the second waits while the first holds the key, then
    finds the first one's entry (it never runs the flow beside it)."""
    import threading
    import time

    cache = reuse.FlowCache(tmp_path / "cache")
    key = "34" * 32
    said: list[str] = []
    holding, release = threading.Event(), threading.Event()

    def first() -> None:
        with cache.first_run(key, wait_s=60):
            holding.set()
            release.wait(30)
            _stored_run(tmp_path, cache, key)

    thread = threading.Thread(target=first)
    thread.start()
    assert holding.wait(30)
    threading.Timer(1.0, release.set).start()
    started = time.monotonic()
    with cache.first_run(key, wait_s=60, say=said.append):
        waited = time.monotonic() - started
        found = cache.lookup(key)
    thread.join(30)
    assert waited >= 0.9 and found is not None and found.key == key
    assert len(said) == 1 and "in progress" in said[0] and key[:12] in said[0]


def test_a_holder_that_outlasts_the_wait_is_not_waited_for(tmp_path: Path) -> None:
    import threading
    import time

    cache = reuse.FlowCache(tmp_path / "cache")
    key = "56" * 32
    holding, release = threading.Event(), threading.Event()

    def holder() -> None:
        with cache.first_run(key, wait_s=1):
            holding.set()
            release.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    assert holding.wait(30)
    started = time.monotonic()
    with cache.first_run(key, wait_s=0.6):
        assert 0.5 <= time.monotonic() - started < 10 and cache.lookup(key) is None
    release.set()
    thread.join(30)


@pytest.mark.parametrize("flag", reuse.TIME_CUT_FLAGS)
def test_a_run_cut_by_its_time_budget_counts_as_time_cut(flag: str) -> None:
    assert reuse.time_cut({flag: True}) and not reuse.time_cut({flag: False}) and not reuse.time_cut({})


def test_cache_dir_follows_the_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(reuse.CACHE_ENV, raising=False)
    assert reuse.cache_dir(tmp_path / "run") == tmp_path / "run" / reuse.RUN_CACHE
    assert reuse.cache_dir(None) is None
    assert reuse.active() is None
    monkeypatch.setenv(reuse.CACHE_ENV, reuse.DISABLED)
    assert reuse.cache_dir(tmp_path / "run") is None and reuse.active() is None
    assert reuse.cache_dir(tmp_path / "run", shared_ok=False) is None
    monkeypatch.setenv(reuse.CACHE_ENV, str(tmp_path / "shared"))
    assert reuse.cache_dir(tmp_path / "run") == (tmp_path / "shared").resolve()
    assert reuse.active() is not None
    # an agent under test's trial keeps its own cache beside a shared one
    assert reuse.cache_dir(tmp_path / "run", shared_ok=False) == tmp_path / "run" / reuse.RUN_CACHE
    assert reuse.cache_dir(None, shared_ok=False) is None


def _closer_tool(workspace: Path, tool: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "closer.metered", "--workspace", str(workspace), tool],
                          capture_output=True, text=True, env=env)


@pytest.mark.slow
def test_an_unchanged_synth_call_is_reused_recorded_and_charged(tmp_path: Path, monkeypatch) -> None:
    """Real Yosys + OpenSTA: the second unchanged `closer-tool synth` comes from the workspace's
    flow cache in under 2 s with the same metrics; an RTL edit runs the flow again."""
    import os

    monkeypatch.delenv(reuse.CACHE_ENV, raising=False)  # the workspace's own cache, not the tests' shared one
    env = {k: v for k, v in os.environ.items() if k != reuse.CACHE_ENV}
    suite = SuitePaths(tmp_path / "suite")
    generate_suite("gcd", suite.root, budgets=["low"], kinds=[TaskKind.A])
    ws = tmp_path / "ws"
    shutil.copytree(suite.task("gcd-A-low").workspace, ws)
    runs = []
    for _ in range(2):
        t0 = time.monotonic()
        done = _closer_tool(ws, "synth", env)
        runs.append(time.monotonic() - t0)
        assert done.returncode == 0, done.stdout + done.stderr
    rtl = next((ws / "rtl").glob("*.v"))
    rtl.write_text(rtl.read_text() + "\n// an edit\n")
    assert _closer_tool(ws, "synth", env).returncode == 0
    records = [json.loads(line) for line in (ws / ".closer" / "trajectory.jsonl").read_text().splitlines()]
    assert [r["cost"]["reused"] for r in records] == [False, True, False]
    assert all(r["cost"]["counted"] and r["cost"]["units"] > 0 for r in records)  # reuse is charged
    drop = {"closer__flow__reused"}
    first, second = ({k: v for k, v in r["metrics"].items() if k not in drop} for r in records[:2])
    assert first == second
    # the absolute figure (<= 2 s) is bench/flow_reuse.py's on a quiet machine; here: far below a run
    assert runs[1] < runs[0] / 2, f"reused synth call took {runs[1]:.2f} s, the first {runs[0]:.2f} s"


class _LecTask:  # the fields closer.tasks.score.run_lec reads
    top, config = "gcd", "default"

    def __init__(self, parameters: dict) -> None:
        self.parameters = {"default": parameters}


def _swap_first_inverter(netlist: Path, out: Path) -> Path:
    text = netlist.read_text()
    assert "sky130_fd_sc_hd__inv_1 " in text or "sky130_fd_sc_hd__xor2_1 " in text
    if "sky130_fd_sc_hd__inv_1 " in text:
        text = text.replace("sky130_fd_sc_hd__inv_1 ", "sky130_fd_sc_hd__buf_1 ", 1)
    else:
        text = text.replace("sky130_fd_sc_hd__xor2_1 ", "sky130_fd_sc_hd__xnor2_1 ", 1)
    out.write_text(text)
    return out


@pytest.mark.slow
def test_lec_of_the_same_rtl_and_netlist_is_reused_and_a_changed_netlist_is_not(tmp_path: Path, monkeypatch) -> None:
    """Real Yosys: the proof is stored and served again (the prover is not run); a perturbed
    netlist has another key and is refuted by a real run."""
    from closer.designs.model import load_design
    from closer.flow.runner import run_flow
    from closer.tasks import lec, score

    monkeypatch.setenv(reuse.CACHE_ENV, str(tmp_path / "cache"))
    loaded, paths = load_design("gcd")
    run_flow("gcd", to="synth", backend="classic", out=tmp_path / "flow")
    netlist = tmp_path / "flow" / "sc" / "gcd" / "job" / "synth" / "0" / "outputs" / "gcd.vg"
    sources = paths.rtl(loaded)
    task = _LecTask(loaded.config("default").parameters)
    first = score.run_lec(sources, task, netlist, tmp_path / "lec1")
    assert first.result == lec.EQUIVALENT

    def no_prover(job):
        raise AssertionError("the prover ran although the result was stored")

    monkeypatch.setattr(lec, "run_lec", no_prover)
    again = score.run_lec(sources, task, netlist, tmp_path / "lec2")
    assert (again.result, again.proven) == (first.result, first.proven)
    assert str(tmp_path / "lec2") in again.reason and all(log.is_file() for log in again.logs)
    monkeypatch.undo()
    monkeypatch.setenv(reuse.CACHE_ENV, str(tmp_path / "cache"))
    mutant = _swap_first_inverter(netlist, tmp_path / "mutant.vg")
    refuted = score.run_lec(sources, task, mutant, tmp_path / "lec3")
    assert refuted.result == lec.NOT_EQUIVALENT


def test_an_entry_holding_a_link_is_a_miss(tmp_path: Path) -> None:
    cache = reuse.FlowCache(tmp_path / "cache")
    key = "56" * 32
    _stored_run(tmp_path, cache, key)
    assert cache.lookup(key) is not None
    (cache.entry_dir(key) / reuse.OUTPUT_DIR / "planted").symlink_to("/etc/passwd")
    assert cache.lookup(key) is None


@pytest.mark.parametrize("damage", [{"result": "inconclusive"}, {"proven": -1}, {"logs": ["../../outside.log"]},
                                    {"extra": 1}])
def test_a_damaged_lec_record_is_not_a_result(tmp_path: Path, damage: dict) -> None:
    from closer.tasks import lec

    work = tmp_path / "lec"
    (work).mkdir()
    (work / "lec_equiv.log").write_text("log\n")
    good = lec.LecResult(lec.EQUIVALENT, f"proved; log {work / 'lec_equiv.log'}", 5, 0,
                         logs=[work / "lec_equiv.log"]).record(work)
    again = lec.LecResult.from_record(good, old_work=work, work=tmp_path / "lec2")
    assert again is not None and again.result == lec.EQUIVALENT and str(tmp_path / "lec2") in again.reason
    assert lec.LecResult.from_record(good | damage, old_work=work, work=tmp_path / "lec2") is None


def test_the_b_and_c_scoring_trees_of_one_rtl_are_one_flow_key(tmp_path: Path) -> None:
    """B's and C's oracle submit the same RTL under the same conditions: their scoring design
    folders are byte-identical (no task name in them), so the flow cache runs that flow once."""
    import shutil

    from closer.tasks import checks
    from closer.tasks.generate import generate_suite
    from closer.tasks.models import TaskConfig
    from closer.tasks.paths import SuitePaths

    generate_suite("gcd", tmp_path / "suite", budgets=["low"])
    suite = SuitePaths(tmp_path / "suite")
    digests = {}
    for kind in ("B", "C"):
        task_paths = suite.task(f"gcd-{kind}-low")
        tree = tmp_path / kind / "tree"
        shutil.copytree(task_paths.workspace, tree)
        shutil.copytree(task_paths.hidden.solution, tree, dirs_exist_ok=True)
        task = TaskConfig.model_validate_json(task_paths.config.read_text())
        folder = checks.write_design_folder(tree, task, {task.config: task.parameters[task.config]},
                                            tmp_path / kind / "design" / task.design, {"place_seed": 7})
        digests[kind] = reuse.folder_digest(folder)
    assert digests["B"] == digests["C"]


def test_the_environment_fingerprint_is_the_venv_not_the_path_it_is_reached_through(tmp_path: Path) -> None:
    """The venv started through a symlinked folder (the Harbor layout's /opt/closer/.venv) is the
    same environment, so the same fingerprint (and flow key); another venv is another."""
    import os

    from closer.paths import repo_paths

    code = "from closer.flow.cache import environment_fingerprint as f; print(f())"
    env = {**os.environ, "PYTHONPATH": str(repo_paths().root)}

    def fingerprint(prefix: Path) -> str:
        done = subprocess.run([str(prefix / "bin" / "python"), "-P", "-c", code], capture_output=True, text=True,
                              check=True, env=env, cwd=tmp_path)
        return done.stdout.strip()

    venv = Path(sys.prefix)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".venv").symlink_to(venv.resolve())
    assert fingerprint(tmp_path / "home" / ".venv") == fingerprint(venv)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(tmp_path / "other")],
                   check=True, timeout=120)
    assert fingerprint(tmp_path / "other") != fingerprint(venv)


def test_the_environment_fingerprint_does_not_follow_the_working_directory(tmp_path: Path) -> None:
    """A process started in a checkout (its closer.egg-info) or with it on $PYTHONPATH runs in
    the same environment as one started elsewhere: the same fingerprint, so the same flow key."""
    import os
    import subprocess
    import sys

    (tmp_path / "closer.egg-info").mkdir()
    code = "from closer.flow.cache import environment_fingerprint as f; print(f())"
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           cwd=Path(__file__).parent).stdout
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    moved = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           cwd=tmp_path, env=env).stdout
    assert plain == moved and len(plain.strip()) == 16
