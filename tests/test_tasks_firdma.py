"""closer task generate on firdma (config small): nine tasks, starting points, the hidden part kept
out of every workspace, and the per-design oracle environment (closer.tasks.checks.oracle_env)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from closer.errors import InputError
from closer.tasks.checks import oracle_env
from closer.tasks.generate import generate_suite
from closer.tasks.models import (BUDGET_TIERS, Conditions, DesignTasks, HiddenConfig, TaskConfig, TaskKind,
                                 load_design_tasks)
from closer.tasks.paths import SuitePaths, sha256_file, tree_checksum, workspace_files

RTL = ["firdma_mem.sv", "firdma_buffer.sv", "firdma_regs.sv", "firdma_rd_dma.sv", "firdma_fir.sv",
       "firdma_wr_dma.sv", "firdma_ctrl.sv", "firdma.sv"]


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> SuitePaths:
    out = tmp_path_factory.mktemp("firdma-suite")
    generate_suite("firdma", out)
    return SuitePaths(out)


@pytest.fixture(scope="module")
def design_tasks(repo) -> DesignTasks:
    return load_design_tasks(repo.designs / "firdma" / "tasks.toml")


def test_nine_tasks_generate(suite: SuitePaths) -> None:
    manifest = json.loads(suite.manifest.read_text())
    ids = sorted(t["task_id"] for t in manifest["tasks"])
    assert ids == sorted(f"firdma-{k.value}-{b}" for k in TaskKind for b in BUDGET_TIERS)
    for entry in manifest["tasks"]:
        task = suite.task(entry["task_id"])
        assert task.is_valid() and task.instruction.is_file()
        assert tree_checksum(task.root) == entry["checksum"]
        assert tree_checksum(suite.hidden(entry["task_id"]).root) == entry["hidden_checksum"]
        config = TaskConfig.model_validate_json(task.config.read_text())
        assert config.config == "small" and config.top == "firdma"
        assert config.rtl == [f"rtl/{name}" for name in RTL]
        assert config.parameters["small"] == {"DATA_W": 32, "NTAPS": 4, "FIFO_DEPTH": 8}


def test_starting_points(suite: SuitePaths, repo) -> None:
    golden = repo.designs / "firdma" / "rtl"
    for kind in ("A", "C"):
        rtl = suite.task(f"firdma-{kind}-low").workspace / "rtl"
        assert sorted(p.name for p in rtl.iterdir()) == sorted(RTL)
        top = (rtl / "firdma.sv").read_text()
        assert "module firdma" in top and "m_axi_wdata" in top and "TODO" in top and "always" not in top
        for name in RTL[:-1]:  # placeholders: compiled, no module yet
            assert not re.search(r"^\s*module\b", (rtl / name).read_text(), re.MULTILINE)
    b_rtl = suite.task("firdma-B-low").workspace / "rtl"
    weak = repo.designs / "firdma" / "weak" / "rtl" / "firdma_fir.sv"
    assert (b_rtl / "firdma_fir.sv").read_text() == weak.read_text()
    for name in RTL:
        if name != "firdma_fir.sv":
            assert (b_rtl / name).read_text() == (golden / name).read_text()
    solution = suite.hidden("firdma-C-low").solution / "rtl"
    assert all((solution / n).read_text() == (golden / n).read_text() for n in RTL)
    for kind in ("B", "C"):
        ws = suite.task(f"firdma-{kind}-low").workspace
        assert (ws / "floorplan" / "floorplan.toml").is_file() and (ws / "flow" / "settings.toml").is_file()


def test_locked_manifest_covers_the_oracle_and_scripts(suite: SuitePaths) -> None:
    task = suite.task("firdma-A-medium")
    locked = {f["path"]: f for f in json.loads(task.locked.read_text())["files"]}
    assert {"tests/test_firdma.py", "tests/firdma_model.py", "tests/firdma_monitor.py", "tests/firdma_jobs.py",
            "tests/seeds.toml", "spec.md", "constraints/firdma.sdc", "task.json"} <= set(locked)
    assert not any(p.startswith("rtl/") for p in locked)
    for rel, entry in locked.items():
        assert sha256_file(task.workspace / rel) == entry["sha256"]
    b_locked = {f["path"] for f in json.loads(suite.task("firdma-B-medium").locked.read_text())["files"]}
    assert "constraints/firdma.sdc" not in b_locked and "tests/test_firdma.py" in b_locked


def _hidden_markers(repo) -> list[str]:
    """Strings that identify the hidden set: its seeds and the file itself."""
    hidden = tomllib.loads((repo.oracles / "firdma" / "hidden" / "hidden.toml").read_text())
    return [str(s) for run in hidden["run"] for s in run["seeds"]] + ["7305", "7306", "hidden.toml", "HIDDEN"]


def test_hidden_part_never_reaches_a_task_folder(suite: SuitePaths, repo) -> None:
    markers = _hidden_markers(repo)
    for kind in TaskKind:
        for tier in BUDGET_TIERS:
            tid = f"firdma-{kind.value}-{tier}"
            task = suite.task(tid)
            assert not str(suite.hidden(tid).root).startswith(str(task.root))
            files = [p for p in task.root.rglob("*") if p.is_file()]
            assert not any("hidden" in p.relative_to(task.root).parts for p in files)
            assert not any(p.parent.name == "faults" for p in files)
            for path in files:
                text = path.read_text(errors="replace")
                if path == task.locked:  # hex digests may hold a seed's digits by chance: check the paths
                    text = " ".join(f["path"] for f in json.loads(text)["files"])
                leaked = [m for m in markers if m in text]
                assert not leaked, f"{path} holds hidden marker(s) {leaked}"
            public = TaskConfig.model_validate_json(task.config.read_text()).public
            assert public.configs == ["small"] and not public.by_config
            assert "wide" not in task.config.read_text()  # the hidden width config


def test_hidden_part_holds_the_hidden_conditions(suite: SuitePaths, repo) -> None:
    hidden = suite.hidden("firdma-A-low")
    cfg = HiddenConfig.model_validate_json(hidden.config.read_text())
    assert cfg.hidden.configs == ["small", "wide"] and cfg.gates == ["func", "gls"]
    assert cfg.parameters["wide"] == {"DATA_W": 64, "NTAPS": 8, "FIFO_DEPTH": 16}
    assert (hidden.oracle / "hidden" / "hidden.toml").is_file()
    targets = tomllib.loads(hidden.targets.read_text())
    assert {t["metric"] for t in targets["targets"]} == {"synth__design__instance__area__stdcell",
                                                         "closer__sim__cycles"}
    b_targets = tomllib.loads(suite.hidden("firdma-B-low").targets.read_text())
    assert set(b_targets["gates"]["required"]) == {"func", "lec", "gls", "sta", "route", "drc", "lvs", "antenna"}


def test_tasks_toml_conditions_match_the_oracle_files(design_tasks: DesignTasks, repo) -> None:
    """[public] is oracles/firdma/seeds.toml; [hidden] is hidden/hidden.toml's small and wide runs,
    except `max_len`: test_max_len's 65535-sample job (over 500 000 cycles) runs in the harness's
    hidden regression only, never inside an evaluation's time-limited simulation."""
    oracle = repo.oracles / "firdma"
    seeds = tomllib.loads((oracle / "seeds.toml").read_text())
    assert design_tasks.public.seeds == seeds["seeds"] and design_tasks.public.workload == seeds["conditions"]
    runs = {r["config"]: r for r in tomllib.loads((oracle / "hidden" / "hidden.toml").read_text())["run"]}
    for config in design_tasks.hidden.configs:
        cond = design_tasks.hidden.for_config(config)
        oracle_conditions = {k: v for k, v in runs[config]["conditions"].items() if k != "max_len"}
        assert cond.seeds == runs[config]["seeds"] and cond.workload == oracle_conditions, config
        assert "max_len" not in cond.workload, config
    assert not set(design_tasks.hidden.gls_seeds) & set(design_tasks.public.seeds)


def test_a_tasks_differ_only_in_budget(suite: SuitePaths) -> None:
    """The three A budgets share one evaluation: same workspace except the budget tier."""
    def content(tier: str) -> dict[str, str]:
        ws = suite.task(f"firdma-A-{tier}").workspace
        out = {}
        for rel in workspace_files(ws):
            text = (ws / rel).read_text()
            out[rel] = text.replace(f"firdma-A-{tier}", "ID").replace(f'"{tier}"', '"TIER"')
        return out

    low = content("low")
    assert content("medium") == low and content("high") == low


def test_oracle_env_firdma(design_tasks: DesignTasks, tmp_path: Path) -> None:
    params = {"DATA_W": 64, "NTAPS": 8, "FIFO_DEPTH": 16}
    env = oracle_env(design_tasks.hidden, params, tmp_path, config="wide")
    assert env["FIRDMA_SEEDS"] == "8101,8102,8103"
    assert json.loads(env["FIRDMA_CONDITIONS"])["len_max"] == 200
    assert env["FIRDMA_NTAPS"] == "8" and env["FIRDMA_DATA_W"] == "64"
    assert env["FIRDMA_REPORT_DIR"] == str(tmp_path)
    # every test but test_max_len (harness regression only: too long for an evaluation's simulation)
    assert env["COCOTB_TEST_FILTER"] == "test_directed|test_random|test_cycles|test_spec"
    small = oracle_env(design_tasks.hidden, {"DATA_W": 32, "NTAPS": 4, "FIFO_DEPTH": 8}, tmp_path, config="small")
    assert small["FIRDMA_SEEDS"] == "7301,7302,7303,7304"
    gls = oracle_env(design_tasks.hidden, {"DATA_W": 32, "NTAPS": 4, "FIFO_DEPTH": 8}, tmp_path, gls=True)
    assert gls["FIRDMA_SEEDS"] == "7305,7306" and gls["COCOTB_TEST_FILTER"] == "test_directed|test_random"
    workload = json.loads(gls["FIRDMA_CONDITIONS"])
    assert workload["jobs_per_seed"] == 4 and workload["len_max"] == 48 and workload["profiles"] == ["heavy", "bursty"]


def test_oracle_env_gcd_is_unchanged(repo, tmp_path: Path) -> None:
    tasks = load_design_tasks(repo.designs / "gcd" / "tasks.toml")
    assert oracle_env(tasks.hidden, {"WIDTH": 8}, tmp_path, config="w8") == {
        "GCD_WIDTH": "8", "GCD_SEEDS": "101,202,303", "GCD_COUNT": "30", "GCD_BACKPRESSURE": "1",
        "GCD_EDGE_CASES": "1", "GCD_REPORT_DIR": str(tmp_path)}
    assert oracle_env(tasks.hidden, {"WIDTH": 16}, tmp_path, gls=True)["GCD_SEEDS"] == "404"
    assert oracle_env(tasks.hidden, {"WIDTH": 16}, tmp_path, gls=True)["GCD_EDGE_CASES"] == "0"


def _tasks_toml(repo, tmp_path: Path, edit) -> Path:
    text = edit((repo.designs / "firdma" / "tasks.toml").read_text())
    path = tmp_path / "tasks.toml"
    path.write_text(text)
    return path


def test_bad_oracle_env_names_file_and_key(repo, tmp_path: Path) -> None:
    path = _tasks_toml(repo, tmp_path, lambda t: t.replace('FIRDMA_SEEDS = "{seeds}"', 'FIRDMA_SEEDS = "{sedes}"'))
    with pytest.raises(InputError, match=r"tasks\.toml: key oracle_env.*FIRDMA_SEEDS.*sedes"):
        load_design_tasks(path)
    path = _tasks_toml(repo, tmp_path, lambda t: t.replace("[oracle_env]\n", "[oracle_envx]\n"))
    with pytest.raises(InputError, match="oracle_env"):
        load_design_tasks(path)
    path = _tasks_toml(repo, tmp_path, lambda t: t.replace("[hidden.by_config.wide]", "[hidden.by_config.full]"))
    with pytest.raises(InputError, match=r"key hidden.*full"):
        load_design_tasks(path)


def test_oracle_env_render_errors(design_tasks: DesignTasks, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"FIRDMA_NTAPS.*NTAPS"):
        oracle_env(design_tasks.public, {"DATA_W": 32}, tmp_path, config="small")
    no_count = design_tasks.public.model_copy(update={"oracle_env": design_tasks.public.oracle_env.model_copy(
        update={"env": {"N": "{count}"}})})
    with pytest.raises(InputError, match=r"N.*count"):
        oracle_env(no_count, {}, tmp_path)
    bare = Conditions(configs=["small"], seeds=[1])
    with pytest.raises(InputError, match="generate it again"):
        oracle_env(bare, {}, tmp_path)
