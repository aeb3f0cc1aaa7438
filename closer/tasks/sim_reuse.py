"""Reuse of scoring simulations: a cocotb run of the evaluator (functional tests, gate-level
simulation) whose inputs are unchanged is served from the run's flow cache instead of being run
again. The machinery baselines' repeated trials, and a C oracle beside a B oracle, score the same
RTL under the same conditions: without reuse, simulation is most of a warm trial's time.

The key (closer.flow.reuse's `_key`: Closer's code, the PDK, the tool programs and every Python
distribution, cocotb included) covers each source's name and content, the include folders' and the
testbench folder's files, the top level, test module, simulator, parameters, defines, build
arguments, seed, test case, time limit, and the environment with the run's own folders written as
placeholders (`normalized_env`: the build folder and its random report folder). What is kept:
results.xml, the log and the oracle's report folder (all a scoring reads), with the result's
counts; a restore renames the stored run's folders to this run's in them.

Only a run that completed (results.xml written) is kept: a timeout, crash or build failure may
depend on the machine. A job whose inputs are not all regular files (`plain_inputs`) is always
run, never looked up. The entries live in `<flow cache>/sim` (closer.flow.cachedir), so they
follow the flow cache's trust rule (docs/security.md): shared only between the machinery baselines'
trials, else the trial's own.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
from pathlib import Path

from closer.flow import cachedir
from closer.sim import CocotbJob, SimResult, run_cocotb

SIM_DIR = "sim"  # under the flow cache
KEPT_FILES = ("results.xml", "sim.log")
REPORTS = "@REPORTS@"
BUILD = "@BUILD@"
_REPORT_NAME = r"reports-[0-9a-f]{16}"  # closer.tasks.oracle_reports.report_dir
FORMAT = "1"
PYCACHE = "__pycache__"  # bytecode the testbench's import writes: not an input
LOCK_WAIT_S = 1800.0  # a same-key run elsewhere: wait for it rather than run it beside it


def active() -> Path | None:
    """The simulation cache of this run: `sim/` in its flow cache, None when reuse is off."""
    root = cachedir.cache_dir(None)
    return None if root is None else root / SIM_DIR


def run(job: CocotbJob, cache: Path | None) -> tuple[SimResult, bool]:
    """`run_cocotb(job, check_build=False)`, served from `cache` when an equal job completed
    before; (result, reused). A ToolTimeout propagates as from run_cocotb."""
    if cache is None or not plain_inputs(job):
        return run_cocotb(job, check_build=False), False
    from closer.flow.reuse import FlowCache

    store, key = FlowCache(cache), job_key(job)
    with store.first_run(key, LOCK_WAIT_S):
        if (entry := store.lookup(key)) is not None:
            return _restore(store, entry, job), True
        result = run_cocotb(job, check_build=False)
        if result.completed:
            _store(store, key, job, result)
        return result, False


def job_key(job: CocotbJob) -> str:
    """closer.flow.reuse's key of a step over the sources (by content, in order) with the job's
    fields, the sources' names (a suffix decides how cocotb compiles a file) and the include and
    testbench folders' digests."""
    from closer.flow.reuse import files_key, folder_digest

    fields = {
        "format": FORMAT, "simulator": job.simulator, "toplevel": job.toplevel, "test_module": job.test_module,
        "testcase": job.testcase, "seed": job.seed, "timeout_s": job.timeout_s, "build_args": job.build_args,
        "parameters": job.parameters, "defines": job.defines, "env": normalized_env(job),
        "source_names": [path.name for path in job.sources],
        "includes": [folder_digest(path, skip_dirs=(PYCACHE,)) for path in job.includes],
        "tests": folder_digest(job.test_dir, skip_dirs=(PYCACHE,)),
    }
    return files_key("sim", job.sources, fields, os.environ.get("PATH", ""))


def plain_inputs(job: CocotbJob) -> bool:
    """Every file the key would read is a regular file in a tree of plain folders. A workspace's
    tree is the agent's: a link, FIFO or device there is simulated as it is but never hashed
    (hashing would follow the link out of the tree, or block on the FIFO)."""
    if not all(_is(path, stat.S_ISREG) for path in job.sources):
        return False
    for folder in (job.test_dir, *job.includes):
        if not _is(folder, stat.S_ISDIR):
            return False
        for top, dirs, files in os.walk(folder):
            dirs[:] = [name for name in dirs if name != PYCACHE]
            if not all(_is(Path(top, name), stat.S_ISDIR) for name in dirs) or \
                    not all(_is(Path(top, name), stat.S_ISREG) for name in files):
                return False
    return True


def _is(path: Path, kind) -> bool:
    try:
        return kind(os.lstat(path).st_mode)
    except OSError:
        return False


def normalized_env(job: CocotbJob) -> dict[str, str]:
    """The job's environment with its report folder and build folder as placeholders."""
    build = re.escape(str(job.build_dir))
    report = re.compile(build + "/" + _REPORT_NAME)
    return {var: re.sub(build, BUILD, report.sub(REPORTS, value)) for var, value in sorted(job.env.items())}


def report_folder(job: CocotbJob) -> Path | None:
    """The report folder the job's environment names (the testbench creates it), if any."""
    pattern = re.compile(re.escape(str(job.build_dir)) + "/(" + _REPORT_NAME + ")")
    names = {m.group(1) for value in job.env.values() for m in pattern.finditer(value)}
    return job.build_dir / names.pop() if len(names) == 1 else None


def _store(store, key: str, job: CocotbJob, result: SimResult) -> None:
    staging = job.build_dir / ".closer-sim-entry"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        for name in KEPT_FILES:
            if (job.build_dir / name).is_file():
                shutil.copyfile(job.build_dir / name, staging / name)
        reports = report_folder(job)
        if reports is not None and reports.is_dir():
            shutil.copytree(reports, staging / REPORTS, symlinks=True)
        counts = {"build_ok": result.build_ok, "completed": result.completed, "tests": result.tests,
                  "failed": result.failed, "returncode": result.returncode, "wall_s": result.wall_s}
        store.store(key, staging, result=counts, locations=_locations(job))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _restore(store, entry, job: CocotbJob) -> SimResult:
    start = time.monotonic()
    job.build_dir.mkdir(parents=True, exist_ok=True)
    staging = job.build_dir / ".closer-sim-entry"
    store.restore(entry, staging, locations=_locations(job))
    for name in KEPT_FILES:
        if (staging / name).is_file():
            os.replace(staging / name, job.build_dir / name)
    reports = report_folder(job)
    if reports is not None and (staging / REPORTS).is_dir():
        shutil.rmtree(reports, ignore_errors=True)
        os.replace(staging / REPORTS, reports)
    shutil.rmtree(staging, ignore_errors=True)
    first = entry.result
    return SimResult(bool(first["build_ok"]), bool(first["completed"]), int(first["tests"]), int(first["failed"]),
                     job.results_xml, job.build_dir / "sim.log", round(time.monotonic() - start, 3),
                     int(first["returncode"]))


def _locations(job: CocotbJob) -> dict[str, Path]:
    """The folders the kept files name that differ between two runs of one key (the report folder
    before the build folder that holds it: the longer path is renamed first)."""
    reports = report_folder(job)
    return {"build": job.build_dir, "tests": job.test_dir} | ({"reports": reports} if reports else {})
