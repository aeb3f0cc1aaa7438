"""`closer mutants generate`: sample candidates, keep those the reference oracle kills.

Procedure (documented in docs/mutants.md):
1. Candidates: every source-level edit of the design's RTL plus a `mutate -list` sample from Yosys.
2. Split: a candidate belongs to the public or the hidden set by a hash of its stable id, so the
   two sets are disjoint whatever seeds and sizes are asked for.
3. Order: seeded shuffle, then round-robin over operators and alternating Yosys/source candidates,
   so the set spreads over bug classes and source lines.
4. Filter: the reference oracle runs on each candidate in order; the first N it kills are kept.
   Candidates it cannot kill (likely equivalent) and candidates that do not build are listed as
   excluded, so the denominator N counts only faults a complete testbench can find.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from closer.inputs import load_json_model
from closer.errors import InputError, ToolError
from closer.mutants import source_ops, yosys_ops
from closer.mutants.design_input import DesignUnderTest
from closer.mutants.models import (ExcludedMutant, Family, Mutant, MutantManifest, MutantSetName,
                                   Outcome)
from closer.mutants.paths import MutantStorePaths
from closer.mutants.provenance import provenance
from closer.mutants.testbench import Testbench, Trial, run_testbench


@dataclass(frozen=True)
class GenerateOptions:
    n: int
    seed: int
    set_name: MutantSetName
    simulator: str = "icarus"
    jobs: int = 2
    timeout_s: float | None = None  # per candidate; default from the golden run
    yosys_pool: int | None = None  # how many `mutate -list` lines to sample
    force: bool = False  # replace an existing set
    max_candidates: int | None = None  # stop trying after this many (bounds the oracle runs)


def set_of(mutant_id: str) -> MutantSetName:
    """Public or hidden, by a hash of the id alone: disjoint by construction."""
    bucket = int(hashlib.sha256(f"closer-set|{mutant_id}".encode()).hexdigest(), 16) % 2
    return MutantSetName.PUBLIC if bucket == 0 else MutantSetName.HIDDEN


def generate(design: DesignUnderTest, oracle: Testbench, store: MutantStorePaths,
             options: GenerateOptions) -> MutantManifest:
    if options.n < 1:
        raise InputError("--n must be at least 1")
    if store.manifest.is_file():
        if not options.force:
            raise InputError(f"{store.manifest} already exists (and its scoring runs would go stale); "
                             "pass --force to regenerate the set")
    if store.root.exists() and any(store.root.iterdir()):
        if not (store.work.is_dir() or store.manifest.is_file()):
            raise InputError(f"--store {store.root} is a non-empty folder that is not a mutant set; "
                             "refusing to replace it")
        shutil.rmtree(store.root)  # an unfinished generation, or a forced regeneration
    store.work.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []

    golden = run_testbench(oracle, design, design.source_paths(), store.work / "golden-oracle",
                           options.simulator, options.timeout_s or 3600)
    if not golden.passed:
        raise InputError(f"the reference oracle {oracle.module_file} does not pass on the golden design "
                         f"{design.name} ({golden.outcome.value}); log: {golden.log}")
    timeout_s = options.timeout_s or max(30.0, 10 * golden.wall_s)

    candidates = _candidates(design, oracle, options, store, notes, timeout_s)
    kept, excluded, tried = _filter_by_oracle(design, oracle, store, options, candidates, timeout_s)
    if len(kept) < options.n:
        notes.append(f"only {len(kept)} of {options.n} requested mutants were killed by the oracle "
                     f"({tried} candidates tried): the candidate pool or --max-candidates ran out")

    store.mutants.mkdir(parents=True, exist_ok=True)
    for mutant in kept:
        shutil.copytree(store.candidate_dir(mutant.id) / "files", store.mutant_dir(mutant.id))
    manifest = MutantManifest(
        design=design.name, config=design.config, top=design.top, parameters=design.parameters,
        set=options.set_name, seed=options.seed, n=len(kept), oracle=str(oracle.module_file),
        oracle_testcase=oracle.testcase, oracle_env=dict(oracle.env),
        simulator=options.simulator, mutants=kept, excluded=excluded, candidates_tried=tried,
        notes=notes, provenance=provenance(design, options.simulator, store.work),
    )
    write_json_atomic(store.manifest, manifest.model_dump_json(indent=1))
    return manifest


def write_json_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def load_manifest(store: MutantStorePaths) -> MutantManifest:
    if not store.manifest.is_file():
        raise InputError(f"no mutant set at {store.root} (missing {store.manifest}); run `closer mutants generate`")
    return load_json_model(store.manifest, MutantManifest, "mutant manifest")


# ---------------------------------------------------------------- candidates

@dataclass
class _Candidate:
    mutant: Mutant
    source_edit: source_ops.SourceEdit | None = None
    yosys: yosys_ops.YosysMutation | None = None


def _candidates(design: DesignUnderTest, oracle: Testbench, options: GenerateOptions,
                store: MutantStorePaths, notes: list[str], timeout_s: float) -> list[_Candidate]:
    rng = random.Random(options.seed)
    source = [c for c in _source_candidates(design) if set_of(c.mutant.id) == options.set_name]
    dead = _dead_source_candidates(design, source, store)
    if dead:
        notes.append(f"{len(dead)} source candidates of this set edit modules this configuration "
                     "does not instantiate: left out as equivalent without simulation")
        source = [c for c in source if c.mutant.id not in dead]
    pool = options.yosys_pool or max(40 * options.n, 400)
    listed = yosys_ops.list_mutations(design, pool, options.seed, store.work / "yosys")
    yosys = [c for c in map(_yosys_candidate, listed) if set_of(c.mutant.id) == options.set_name]
    if yosys and not _yosys_baseline_passes(design, oracle, options, store, timeout_s):
        notes.append("the unmutated Yosys netlist fails the oracle: Yosys mutants left out")
        yosys = []
    return _interleave(_spread(source, rng), _spread(yosys, rng))


def _dead_source_candidates(design: DesignUnderTest, source: list[_Candidate],
                            store: MutantStorePaths) -> set[str]:
    live = yosys_ops.live_source_lines(design, store.work / "yosys")
    spans = {rel: source_ops.regions(design.source_root, rel) for rel in design.sources}
    return {c.mutant.id for c in source
            if source_ops.is_dead(c.mutant.location.line, spans[c.mutant.location.file],
                                  live.get(c.mutant.location.file, set()))}


def _source_candidates(design: DesignUnderTest) -> list[_Candidate]:
    found = []
    for rel in design.sources:
        text = (design.source_root / rel).read_text()
        for edit in source_ops.enumerate_edits(design.source_root, rel):
            mutant = Mutant(id=edit.id, family=Family.SOURCE, operator=edit.operator,
                            location=edit.location(text), description=edit.description,
                            sources=list(design.sources))
            found.append(_Candidate(mutant, source_edit=edit))
    return found


def _yosys_candidate(mutation: yosys_ops.YosysMutation) -> _Candidate:
    mutant = Mutant(id=mutation.id, family=Family.YOSYS, operator=mutation.operator,
                    location=mutation.location(), description=mutation.description(),
                    sources=["mutant.v"], yosys_command=mutation.command)
    return _Candidate(mutant, yosys=mutation)


def _spread(candidates: list[_Candidate], rng: random.Random) -> list[_Candidate]:
    """Seeded shuffle, then round-robin over operators so no bug class crowds out the rest."""
    by_operator: dict[str, list[_Candidate]] = defaultdict(list)
    for candidate in candidates:
        by_operator[candidate.mutant.operator.value].append(candidate)
    queues = []
    for operator in sorted(by_operator):
        queue = list(by_operator[operator])
        rng.shuffle(queue)
        queues.append(queue)
    ordered = []
    while any(queues):
        for queue in queues:
            if queue:
                ordered.append(queue.pop(0))
    return ordered


def _interleave(a: list[_Candidate], b: list[_Candidate]) -> list[_Candidate]:
    ordered = []
    for i in range(max(len(a), len(b))):
        ordered += [x[i] for x in (a, b) if i < len(x)]
    return ordered


def _yosys_baseline_passes(design: DesignUnderTest, oracle: Testbench, options: GenerateOptions,
                           store: MutantStorePaths, timeout_s: float) -> bool:
    """The unmutated `prep` netlist must pass the oracle, else every Yosys mutant dies for free."""
    baseline = store.work / "yosys-baseline" / "files" / "mutant.v"
    yosys_ops.write_mutants(design, [], baseline, store.work / "yosys")
    trial = run_testbench(oracle, design, [baseline], store.work / "yosys-baseline" / "sim",
                          options.simulator, timeout_s, parameters_baked_in=True)
    return trial.passed


# ---------------------------------------------------------------- oracle filter

def _materialize(design: DesignUnderTest, store: MutantStorePaths, batch: list[_Candidate]) -> None:
    yosys_jobs = []
    for candidate in batch:
        files = store.candidate_dir(candidate.mutant.id) / "files"
        if candidate.source_edit is not None:
            for rel in design.sources:
                target = files / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                text = (design.source_root / rel).read_text()
                if rel == candidate.source_edit.file:
                    text = candidate.source_edit.apply(text)
                target.write_text(text)
        else:
            yosys_jobs.append((candidate.yosys, files / "mutant.v"))
    if yosys_jobs:
        yosys_ops.write_mutants(design, yosys_jobs, None, store.work / "yosys")


def _filter_by_oracle(design: DesignUnderTest, oracle: Testbench, store: MutantStorePaths,
                      options: GenerateOptions, candidates: list[_Candidate], timeout_s: float):
    kept: list[Mutant] = []
    excluded: list[ExcludedMutant] = []
    tried = 0
    position = 0
    limit = min(len(candidates), options.max_candidates or len(candidates))
    while len(kept) < options.n and position < limit:
        need = options.n - len(kept)
        batch = candidates[position: min(limit, position + need + options.jobs)]
        position += len(batch)
        _materialize(design, store, batch)
        identical = _netlist_identical(design, store, batch, options.jobs)
        to_run = [c for c in batch if c.mutant.id not in identical]
        trials = dict(zip([c.mutant.id for c in to_run], _run_batch(design, oracle, store, options, to_run, timeout_s)))
        for candidate in batch:  # in candidate order: deterministic selection
            if len(kept) == options.n:
                break
            tried += 1
            trial = trials.get(candidate.mutant.id)
            if trial is not None and trial.outcome in (Outcome.KILLED, Outcome.TIMEOUT):
                kept.append(candidate.mutant)
                continue
            if trial is None:
                reason = "netlist_identical"
            elif trial.outcome == Outcome.BUILD_ERROR:
                reason = "does_not_build"
            else:
                reason = "survives_reference_oracle"
            excluded.append(ExcludedMutant(**candidate.mutant.model_dump(
                include={"id", "family", "operator", "location", "description"}), reason=reason))
        _write_progress(store, kept, excluded, tried)
    return kept, excluded, tried


def _netlist_identical(design: DesignUnderTest, store: MutantStorePaths, batch: list[_Candidate],
                       jobs: int) -> set[str]:
    """Source candidates whose optimised, renumbered netlist equals the golden one: equivalent by
    construction, so they need no oracle run (seconds of Yosys instead of a simulation). A
    differing netlist proves nothing; the oracle run then decides."""
    source = [c for c in batch if c.source_edit is not None]
    if not source:
        return set()
    work = store.work / "canonical"
    golden = work / "golden" / "netlist.v"
    if not golden.is_file():
        yosys_ops.canonical_netlist(design, design.source_root, golden, work)
    reference = yosys_ops.netlist_body(golden)

    def identical(candidate: _Candidate) -> bool:
        folder = store.candidate_dir(candidate.mutant.id)
        try:
            yosys_ops.canonical_netlist(design, folder / "files", folder / "canonical" / "netlist.v", work)
        except ToolError:
            return False  # Yosys cannot read it: the oracle run will report it
        return yosys_ops.netlist_body(folder / "canonical" / "netlist.v") == reference

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        verdicts = list(pool.map(identical, source))
    return {c.mutant.id for c, same in zip(source, verdicts) if same}


def _run_batch(design: DesignUnderTest, oracle: Testbench, store: MutantStorePaths,
               options: GenerateOptions, batch: list[_Candidate], timeout_s: float) -> list[Trial]:
    def one(candidate: _Candidate) -> Trial:
        folder = store.candidate_dir(candidate.mutant.id)
        sources = [folder / "files" / rel for rel in candidate.mutant.sources]
        return run_testbench(oracle, design, sources, folder / "sim", options.simulator, timeout_s,
                             parameters_baked_in=candidate.mutant.family == Family.YOSYS)

    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        return list(pool.map(one, batch))


def _write_progress(store: MutantStorePaths, kept, excluded, tried) -> None:
    write_json_atomic(store.work / "progress.json", json.dumps(
        {"kept": len(kept), "excluded": len(excluded), "tried": tried}))
