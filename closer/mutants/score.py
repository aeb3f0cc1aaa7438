"""`closer mutants score`: the golden gate, then every mutant, in parallel and resumably.

Score = killed / N, N = the manifest's mutant count, fixed before anything runs. A mutant that does
not build stays in N and is reported as `build_error`; a timeout counts as a kill. Each finished
mutant's result is written atomically to `results/<id>.json`, so a run that is interrupted picks
up where it stopped; `run.json` records what the results belong to, and a different manifest,
testbench or simulator is refused rather than mixed in.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from closer.inputs import load_json, load_json_model
from closer.errors import InputError
from closer.mutants.design_input import DesignUnderTest
from closer.mutants.generate import load_manifest, write_json_atomic
from closer.mutants.models import (Family, GoldenResult, Mutant, MutantManifest, MutantResult, Outcome,
                                   ScoreReport)
from closer.mutants.paths import MutantStorePaths, ScoreRunPaths
from closer.mutants.provenance import provenance
from closer.mutants.testbench import Testbench, run_testbench

GOLDEN_TIMEOUT_S = 3600.0  # the per-mutant limit derives from the golden run, so not the reverse


@dataclass(frozen=True)
class ScoreOptions:
    simulator: str = "icarus"
    jobs: int = 2
    timeout_s: float | None = None  # per mutant; default max(30 s, 10 x the golden run)
    fresh: bool = False  # drop results of an earlier run instead of resuming


def default_run_dir(store: MutantStorePaths, testbench: Testbench, simulator: str) -> Path:
    return store.runs / f"{testbench.module}-{testbench.sha256()[:10]}-{simulator}"


def score(design: DesignUnderTest, store: MutantStorePaths, testbench: Testbench, run_dir: Path,
          options: ScoreOptions, on_result: Callable[[MutantResult], None] | None = None) -> ScoreReport:
    manifest = load_manifest(store)
    _check_matches(design, manifest, store)
    paths = ScoreRunPaths(run_dir)
    tb_sha = testbench.sha256()
    _claim_run_dir(paths, store, tb_sha, options)

    golden = _golden(design, testbench, paths, options)
    label = provenance(design, options.simulator, paths.root)
    timeout_s = options.timeout_s or max(30.0, 10 * golden.wall_s)
    if not golden.passed:
        report = _report(manifest, testbench, tb_sha, options, timeout_s, golden, [], 0, label)
        write_json_atomic(paths.score, report.model_dump_json(indent=1))
        return report

    done: dict[str, MutantResult] = {}
    for mutant in manifest.mutants:
        if paths.result(mutant.id).is_file():
            done[mutant.id] = load_json_model(paths.result(mutant.id), MutantResult, "mutant result (--fresh starts over)")
    resumed = len(done)
    pending = [m for m in manifest.mutants if m.id not in done]
    pool = ThreadPoolExecutor(max_workers=max(1, options.jobs))
    try:
        futures = [pool.submit(_score_one, design, store, testbench, paths, m, options.simulator,
                               timeout_s) for m in pending]
        for future in as_completed(futures):
            result = future.result()
            done[result.id] = result
            if on_result:
                on_result(result)
    finally:
        # on an interrupt, queued mutants are dropped; running ones still record their result
        pool.shutdown(wait=True, cancel_futures=True)
    results = [done[m.id] for m in manifest.mutants]
    report = _report(manifest, testbench, tb_sha, options, timeout_s, golden, results, resumed, label)
    write_json_atomic(paths.score, report.model_dump_json(indent=1))
    return report


def _check_matches(design: DesignUnderTest, manifest: MutantManifest, store: MutantStorePaths) -> None:
    if manifest.design != design.name or manifest.config != design.config:
        raise InputError(f"{store.manifest}: mutants of {manifest.design}/{manifest.config}, "
                         f"not {design.name}/{design.config}")
    if manifest.provenance.design_revision != design.revision():
        raise InputError(f"{store.manifest}: the design's sources changed since these mutants were "
                         f"generated (design_revision differs); regenerate the set")


def _claim_run_dir(paths: ScoreRunPaths, store: MutantStorePaths, tb_sha: str, options: ScoreOptions) -> None:
    key = {"manifest_sha256": hashlib.sha256(store.manifest.read_bytes()).hexdigest(),
           "testbench_sha256": tb_sha, "simulator": options.simulator}
    if paths.root.exists() and options.fresh:
        shutil.rmtree(paths.root)
    if paths.run_key.is_file():
        previous = load_json(paths.run_key, "run key (--fresh starts over)")
        if not isinstance(previous, dict):
            raise InputError(f"{paths.run_key}: not a run key object; pass --fresh to start over")
        if previous != key:
            changed = sorted(k for k in key if previous.get(k) != key[k])
            raise InputError(f"{paths.run_key}: this run directory holds results for a different "
                             f"{', '.join(changed)}; pass --fresh to discard them or choose another --work")
    write_json_atomic(paths.run_key, json.dumps(key, indent=1))


def _golden(design: DesignUnderTest, testbench: Testbench, paths: ScoreRunPaths,
            options: ScoreOptions) -> GoldenResult:
    if paths.golden.is_file():
        return load_json_model(paths.golden, GoldenResult, "golden result (--fresh starts over)")
    trial = run_testbench(testbench, design, design.source_paths(), paths.sim_dir("golden"),
                          options.simulator, GOLDEN_TIMEOUT_S)
    golden = GoldenResult(passed=trial.passed, tests=trial.tests, failed=trial.failed,
                          build_ok=trial.build_ok, wall_s=round(trial.wall_s, 3), log=str(trial.log))
    write_json_atomic(paths.golden, golden.model_dump_json(indent=1))
    return golden


def _score_one(design: DesignUnderTest, store: MutantStorePaths, testbench: Testbench,
               paths: ScoreRunPaths, mutant: Mutant, simulator: str, timeout_s: float) -> MutantResult:
    folder = store.mutant_dir(mutant.id)
    sources = [folder / rel for rel in mutant.sources]
    trial = run_testbench(testbench, design, sources, paths.sim_dir(mutant.id), simulator, timeout_s,
                          parameters_baked_in=mutant.family == Family.YOSYS)
    result = MutantResult(id=mutant.id, operator=mutant.operator, location=str(mutant.location),
                          outcome=trial.outcome, killed=trial.outcome in (Outcome.KILLED, Outcome.TIMEOUT),
                          tests=trial.tests, failed=trial.failed, wall_s=round(trial.wall_s, 3),
                          log=str(trial.log))
    write_json_atomic(paths.result(mutant.id), result.model_dump_json(indent=1))
    return result


def _report(manifest: MutantManifest, testbench: Testbench, tb_sha: str, options: ScoreOptions,
            timeout_s: float, golden: GoldenResult, results: list[MutantResult], resumed: int,
            label) -> ScoreReport:
    alarm = not golden.passed
    if alarm:  # the gate closes: nothing else runs, every mutant is listed as not run
        results = [MutantResult(id=m.id, operator=m.operator, location=str(m.location),
                                outcome=Outcome.NOT_RUN, killed=False, tests=0, failed=0, wall_s=0.0,
                                log="") for m in manifest.mutants]
    count = lambda outcome: sum(r.outcome == outcome for r in results)  # noqa: E731
    killed = sum(r.killed for r in results)
    return ScoreReport(
        design=manifest.design, config=manifest.config, set=manifest.set,
        testbench=str(testbench.module_file), testbench_sha256=tb_sha, simulator=options.simulator,
        timeout_s=timeout_s, golden=golden, golden_alarm=alarm, n=manifest.n, killed=killed,
        survived=count(Outcome.SURVIVED), build_errors=count(Outcome.BUILD_ERROR),
        timeouts=count(Outcome.TIMEOUT), resumed=resumed,
        score=0.0 if alarm or manifest.n == 0 else killed / manifest.n,
        mutants=results, provenance=label,
    )
