"""`closer drc ...`: Rule -> DRC script tasks (the Rule2DRC family)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from closer.clitypes import POSITIVE
from closer.errors import InputError
from closer.inputs import load_json_model

BASELINE_TESTGEN = f"{shlex.quote(sys.executable)} -m closer.drc.baselines testgen"
BASELINE_JUDGE = f"{shlex.quote(sys.executable)} -m closer.drc.baselines judge"
PATH = click.Path(path_type=Path)
EXISTING = click.Path(path_type=Path, exists=True)


def _settings(timeout_s: float, workers: int, masked: tuple[Path, ...], workdir: Path):
    from closer.drc.runner import RunSettings

    work = workdir.resolve()
    for path in masked:
        if work == path or path in work.parents:
            raise InputError(f"{workdir}: the output folder must lie outside the problems folder {path}")
    return RunSettings(timeout_s=timeout_s, workers=workers, masked=masked)


def _suite(path: Path):
    from closer.drc.suite import load_suite, suite_root

    manifest, problems = load_suite(path)
    root = suite_root(path if path.is_dir() else path.parent, manifest)
    return manifest, problems, root


def _fresh(out: Path) -> None:
    if out.exists() and any(out.iterdir()):
        raise InputError(f"{out}: not empty; records are never overwritten, choose a new folder")


@click.group("drc")
def drc_group() -> None:
    """Rule -> KLayout DRC script tasks: generate, import, run, select, report."""


@drc_group.command("generate")
@click.option("--out", type=PATH, required=True, help="New folder for the suite (problems/, manifest.json).")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many problems, spread over the kinds.")
@click.option("--kind", "kinds", multiple=True, help="Only these rule kinds (repeatable).")
@click.option("--workers", type=click.IntRange(1, 8), default=1, show_default=True, help="Parallel KLayout processes.")
def generate_command(out: Path, limit: int | None, kinds: tuple[str, ...], workers: int) -> None:
    """SKY130 problems in the Rule2DRC layout, every label verified with KLayout."""
    from closer.drc.generate import GenerateOptions, generate
    from closer.drc.rules import RuleKind

    try:
        chosen = tuple(RuleKind(k) for k in kinds) or tuple(RuleKind)
    except ValueError as exc:
        raise InputError(f"--kind: {exc}; choose from {', '.join(RuleKind)}") from exc
    manifest = generate(GenerateOptions(out=out, limit=limit, kinds=chosen, workers=workers))
    layouts = sum(p.layouts_pass + p.layouts_fail for p in manifest.problems)
    click.echo(f"{len(manifest.problems)} problems, {layouts} labeled layouts, all verified by the gold script "
               f"({manifest.verify_wall_s:.0f} s); manifest: {out / 'manifest.json'}")


@drc_group.command("import")
@click.argument("source", type=EXISTING)
@click.option("--out", type=PATH, required=True, help="New folder for the suite manifest (the data stays in place).")
@click.option("--verify", is_flag=True, help="Run the gold script and its perturbations on every layout.")
@click.option("--timeout-s", type=POSITIVE, default=120.0, show_default=True)
@click.option("--workers", type=click.IntRange(1, 8), default=1, show_default=True)
def import_command(source: Path, out: Path, verify: bool, timeout_s: float, workers: int) -> None:
    """Read Rule2DRC-format folders (problems/<id>/spec.yaml, gold, data/gds) in place."""
    from closer.drc.importer import import_folders

    _fresh(out)
    settings = _settings(timeout_s, workers, (source.resolve(),), out)
    manifest = import_folders(source, out, verify, settings)
    verified = sum(p.gold_verified for p in manifest.problems)
    click.echo(f"{len(manifest.problems)} problems imported" + (f", gold verified on {verified}" if verify else "")
               + f"; manifest: {out / 'manifest.json'}")


@drc_group.command("pool")
@click.argument("suite", type=EXISTING)
@click.option("--baseline", type=click.Choice(["gold", "null", "perturbed"]), required=True)
@click.option("--n", "n", type=click.IntRange(1, 100), required=True, help="Candidates per problem.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--limit", type=click.IntRange(min=1), help="Only the first LIMIT problems.")
@click.option("--out", type=PATH, required=True)
def pool_command(suite: Path, baseline: str, n: int, seed: int, limit: int | None, out: Path) -> None:
    """Machinery candidate pools (gold, null, perturbed gold): not models."""
    from closer.drc.pools import write_pool

    _fresh(out)
    _, problems, _ = _suite(suite)
    manifest = write_pool(problems[:limit], baseline, n, seed, out)
    click.echo(f"{len(manifest.entries)} candidates ({baseline}, machinery baseline) in {out}")


@drc_group.command("run")
@click.argument("suite", type=EXISTING)
@click.option("--candidates", type=EXISTING, required=True, help="Folder of <problem id>/<name>.drc.")
@click.option("--out", type=PATH, required=True)
@click.option("--timeout-s", type=POSITIVE, default=120.0, show_default=True, help="Per script, all its layouts.")
@click.option("--workers", type=click.IntRange(1, 8), default=1, show_default=True)
def run_command(suite: Path, candidates: Path, out: Path, timeout_s: float, workers: int) -> None:
    """Score candidate scripts on the private layouts: success / wrong / error / timeout, pass@k."""
    from closer.drc.evaluate import Outcome
    from closer.drc.pools import PoolManifest
    from closer.drc.runs import run_candidates

    _fresh(out)
    manifest, problems, root = _suite(suite)
    pool_file = candidates / "pool.json"
    baseline = load_json_model(pool_file, PoolManifest, "pool manifest").baseline if pool_file.is_file() else ""
    run = run_candidates(manifest.suite, problems, candidates, out, _settings(timeout_s, workers, (root,), out),
                         baseline)
    click.echo(f"{len(run.results)} candidates on {len(run.problems)} problems: "
               + ", ".join(f"{o} {run.rate(o):.3f}" for o in Outcome) + f"; {out / 'results.json'}")


@drc_group.command("select")
@click.argument("suite", type=EXISTING)
@click.option("--candidates", type=EXISTING, required=True)
@click.option("--results", type=EXISTING, required=True, help="results.json of `closer drc run` on the same pool.")
@click.option("--out", type=PATH, required=True)
@click.option("--selector", "selectors", multiple=True, help="judge, generated_tests, s_star, codemonkey, split_tester (default: all).")
@click.option("--testgen", default=BASELINE_TESTGEN, show_default="the scripted threshold prober (machinery baseline)",
              help="Test-generator command: called with REQUEST.json RESPONSE.json.")
@click.option("--judge", default=BASELINE_JUDGE, show_default="the scripted judge (machinery baseline)",
              help="Judge command: called with REQUEST.json RESPONSE.json.")
@click.option("--timeout-s", type=POSITIVE, default=120.0, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def select_command(suite: Path, candidates: Path, results: Path, out: Path, selectors: tuple[str, ...],
                   testgen: str, judge: str, timeout_s: float, seed: int) -> None:
    """Best-of-N selection with execution feedback; accuracy against Oracle@N."""
    from closer.drc.runs import RunResults
    from closer.drc.select import select_all
    from closer.drc.selectors import SELECTORS, SelectorSettings

    _fresh(out)
    unknown = [s for s in selectors if s not in SELECTORS]
    if unknown:
        raise InputError(f"--selector: {unknown[0]!r}; choose from {', '.join(SELECTORS)}")
    _, problems, root = _suite(suite)
    scored = load_json_model(results / "results.json" if results.is_dir() else results, RunResults, "run results")
    run = select_all(problems, candidates, scored, list(selectors or SELECTORS), testgen, judge, out,
                     _settings(timeout_s, 1, (root,), out), SelectorSettings(), seed)
    oracle = sum(r.oracle_success for r in run.records if r.selector == run.records[0].selector)
    count = len({r.problem for r in run.records})
    click.echo(f"Oracle@{run.n} {oracle / max(1, count):.3f}; " +
               ", ".join(f"{s} {run.accuracy(s):.3f}" for s in dict.fromkeys(r.selector for r in run.records)))


@drc_group.command("report")
@click.option("--run", "runs", type=EXISTING, multiple=True, required=True, help="A `closer drc run` folder (repeatable).")
@click.option("--selection", "selections", type=EXISTING, multiple=True, help="A `closer drc select` folder (repeatable).")
@click.option("--out", type=PATH, required=True)
def report_command(runs: tuple[Path, ...], selections: tuple[Path, ...], out: Path) -> None:
    """Success and error rates, pass@N curves, selection accuracy against Oracle@N, runtime."""
    from closer.drc.report import write_report

    _fresh(out)
    page = write_report(list(runs), list(selections), out)
    click.echo(f"report: {page}")
