"""An evaluation's simulation limit scales with the design's own golden run: `closer task generate`
measures the golden RTL's hidden functional run and stores it in hidden.json; a submission that
hangs (`initial forever #0;`) is stopped at SIM_TIMEOUT_MULTIPLE times that, not at the 900 s cap."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from closer.designs.model import load_design
from closer.tasks import checks
from closer.tasks.generate import TASKS_TOML, generate_suite, golden_func_time
from closer.tasks.models import HiddenConfig, TaskKind, load_design_tasks
from closer.tasks.paths import SuitePaths


def test_limit_is_a_multiple_of_the_golden_time_within_bounds():
    assert checks.sim_timeout_s(None) == checks.SIM_TIMEOUT_S
    assert checks.sim_timeout_s(15.0) == 15.0 * checks.SIM_TIMEOUT_MULTIPLE
    assert checks.sim_timeout_s(0.5) == checks.SIM_TIMEOUT_MIN_S
    assert checks.sim_timeout_s(1e6) == checks.SIM_TIMEOUT_S


def test_generate_stores_the_golden_time_and_a_hang_is_stopped_at_the_scaled_limit(tmp_path: Path):
    generate_suite("gcd", tmp_path / "suite", kinds=[TaskKind.A], budgets=["low"])
    hidden = HiddenConfig.model_validate_json(
        SuitePaths(tmp_path / "suite").hidden("gcd-A-low").config.read_text())
    assert hidden.golden_func_s is not None and 0 < hidden.golden_func_s < 300

    design, dpaths = load_design("gcd")
    tasks = load_design_tasks(dpaths.root / TASKS_TOML)
    assert golden_func_time(design, dpaths, tasks, tmp_path) == hidden.golden_func_s  # measured once
    rtl = tmp_path / "gcd.v"
    shutil.copyfile(dpaths.root / next(iter(tasks.reference.values())), rtl)
    rtl.write_text(rtl.read_text().replace("endmodule", "initial forever #0;\nendmodule", 1))
    limit = 5.0  # what sim_timeout_s gives a design whose golden run takes 0.5 s (floor aside)
    params = {c: dict(design.config(c).parameters) for c in {tasks.config, *tasks.hidden.configs}}
    start = time.monotonic()
    func = checks.run_functional([rtl], design.top, dpaths.root / tasks.oracle, tasks.test_module,
                                 tasks.hidden.model_copy(update={"configs": [tasks.config]}), params,
                                 tasks.config, tmp_path / "build", timeout_s=limit)
    took = time.monotonic() - start
    assert func.failed >= 1 and took < limit + 60, (func, took)
    assert any("limit" in e or "timed out" in e or "stopped" in e for e in func.errors), func.errors
    json.dumps(func.errors)
