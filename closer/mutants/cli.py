"""`closer mutants ...`: generate mutant sets and score testbenches by kills."""

from __future__ import annotations

import json
from pathlib import Path

import click

from closer.errors import InputError
from closer.mutants.design_input import load_design
from closer.mutants.models import MutantManifest, MutantSetName, ScoreReport
from closer.mutants.paths import MutantStorePaths
from closer.paths import schema_path
from closer.toolchain import use_venv_tools

SIMULATORS = click.Choice(["icarus", "verilator"])
SETS = click.Choice([s.value for s in MutantSetName])


def _env_pairs(pairs: tuple[str, ...]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"--env {pair!r}: expected KEY=VALUE")
        env[key] = value
    return env


def _testbench_options(f):
    f = click.option("--env", "env", multiple=True, help="KEY=VALUE for the test's environment (repeatable).")(f)
    f = click.option("--testcase", help="Run only this cocotb test of the module.")(f)
    return f


def _store(design_name: str, config: str, set_name: str, store: Path | None) -> MutantStorePaths:
    return MutantStorePaths(store.resolve()) if store else MutantStorePaths.default(design_name, config, set_name)


@click.group("mutants")
def mutants_group() -> None:
    """Mutation-based verification scoring: generate mutants, score testbenches by kills."""
    use_venv_tools()


@mutants_group.command("generate")
@click.argument("design")
@click.option("--n", "n", type=int, required=True, help="Mutants to keep (each killed by the reference oracle).")
@click.option("--seed", type=int, required=True, help="Seed for Yosys `mutate -list` and the sampling order.")
@click.option("--set", "set_name", type=SETS, default="hidden", show_default=True)
@click.option("--config", default="default", show_default=True, help="Named configuration in design.toml.")
@click.option("--oracle", type=click.Path(path_type=Path), help="Reference cocotb test module (default: design.toml [oracle] testbench, else oracles/<name>/test_<name>.py).")
@click.option("--simulator", type=SIMULATORS, default="icarus", show_default=True)
@click.option("--jobs", type=int, default=2, show_default=True, help="Parallel simulations.")
@click.option("--timeout-s", type=float, help="Per-candidate limit (default: max(30 s, 10 x the golden run)).")
@click.option("--store", type=click.Path(path_type=Path), help="Set folder (default: oracles/<design>/mutants/<config>/<set>).")
@click.option("--force", is_flag=True, help="Replace an existing set (its scoring runs are deleted).")
@click.option("--max-candidates", type=int, help="Stop after the oracle has judged this many candidates.")
@_testbench_options
def generate_command(design, n, seed, set_name, config, oracle, simulator, jobs, timeout_s, store, force,
                     max_candidates, testcase, env):
    """Generate a public or hidden mutant set for DESIGN (a name under designs/ or a folder)."""
    from closer.mutants.generate import GenerateOptions, generate
    from closer.mutants.testbench import Testbench

    dut = load_design(design, config)
    oracle_path = oracle or dut.oracle
    if oracle_path is None:
        raise InputError(f"design {dut.name} names no reference oracle: add [oracle] testbench to "
                         f"{dut.root / 'design.toml'} or pass --oracle")
    paths = _store(dut.name, config, set_name, store)
    manifest = generate(dut, Testbench.from_path(oracle_path, testcase, _env_pairs(env)), paths,
                        GenerateOptions(n=n, seed=seed, set_name=MutantSetName(set_name),
                                        simulator=simulator, jobs=jobs, timeout_s=timeout_s,
                                        force=force, max_candidates=max_candidates))
    by_reason: dict[str, int] = {}
    for item in manifest.excluded:
        by_reason[item.reason] = by_reason.get(item.reason, 0) + 1
    click.echo(f"{manifest.set.value} set of {dut.name}/{config}: {manifest.n} mutants kept of "
               f"{manifest.candidates_tried} tried; excluded {by_reason or 'none'}; -> {paths.manifest}")
    for note in manifest.notes:
        click.echo(f"note: {note}")


@mutants_group.command("list")
@click.argument("design")
@click.option("--set", "set_name", type=SETS, default="hidden", show_default=True)
@click.option("--config", default="default", show_default=True)
@click.option("--store", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the manifest.")
def list_command(design, set_name, config, store, as_json):
    """List the mutants (and the excluded candidates) of a stored set."""
    from closer.mutants.generate import load_manifest

    dut = load_design(design, config)
    manifest = load_manifest(_store(dut.name, config, set_name, store))
    if as_json:
        click.echo(manifest.model_dump_json(indent=1))
        return
    for m in manifest.mutants:
        click.echo(f"{m.id}  {m.operator.value:<16} {str(m.location):<22} {m.description}")
    for x in manifest.excluded:
        click.echo(f"{x.id}  {x.operator.value:<16} {str(x.location):<22} EXCLUDED ({x.reason})")


@mutants_group.command("score")
@click.argument("design")
@click.option("--testbench", type=click.Path(path_type=Path, exists=True), required=True,
              help="cocotb test module (test_*.py) or a folder holding exactly one.")
@click.option("--set", "set_name", type=SETS, default="hidden", show_default=True)
@click.option("--config", default="default", show_default=True)
@click.option("--simulator", type=SIMULATORS, default="icarus", show_default=True)
@click.option("--jobs", type=int, default=2, show_default=True)
@click.option("--timeout-s", type=float, help="Per-mutant limit (default: max(30 s, 10 x the golden run)).")
@click.option("--store", type=click.Path(path_type=Path))
@click.option("--work", type=click.Path(path_type=Path), help="Run folder (default: <store>/runs/<testbench>-<hash>-<sim>); an interrupted run resumes from it.")
@click.option("--fresh", is_flag=True, help="Discard earlier results in the run folder.")
@click.option("--json", "as_json", is_flag=True, help="Print the score report as JSON.")
@_testbench_options
def score_command(design, testbench, set_name, config, simulator, jobs, timeout_s, store, work, fresh, as_json,
                  testcase, env):
    """Score a testbench by the fraction of the set's mutants it kills (0 on a golden alarm)."""
    from closer.mutants.score import ScoreOptions, default_run_dir, score
    from closer.mutants.testbench import Testbench

    dut = load_design(design, config)
    paths = _store(dut.name, config, set_name, store)
    tb = Testbench.from_path(testbench, testcase, _env_pairs(env))
    run_dir = work.resolve() if work else default_run_dir(paths, tb, simulator)
    progress = None if as_json else (lambda r: click.echo(
        f"  {r.id}  {r.operator.value:<16} {r.location:<22} {r.outcome.value:<11} {r.wall_s:6.1f} s", err=True))
    report = score(dut, paths, tb, run_dir,
                   ScoreOptions(simulator=simulator, jobs=jobs, timeout_s=timeout_s, fresh=fresh), progress)
    if as_json:
        click.echo(report.model_dump_json(indent=1))
    else:
        _print_report(report, run_dir)


def _print_report(report: ScoreReport, run_dir: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{report.design}/{report.config} {report.set.value} set, {report.simulator}")
    for column in ("id", "operator", "location", "outcome", "time (s)"):
        table.add_column(column)
    for r in report.mutants:
        table.add_row(r.id, r.operator.value, r.location, r.outcome.value, f"{r.wall_s:.1f}")
    console = Console()
    console.print(table)
    if report.golden_alarm:
        console.print(f"GOLDEN ALARM: the testbench fails on the golden design (log: {report.golden.log}); score 0")
    console.print(f"score {report.score:.3f} = {report.killed} killed / {report.n} "
                  f"(survived {report.survived}, build errors {report.build_errors}, timeouts {report.timeouts}, "
                  f"resumed {report.resumed}); report: {run_dir / 'score.json'}")


@mutants_group.command("schema")
@click.option("--check", is_flag=True, help="Fail if the shipped schemas differ from the models.")
def schema_command(check):
    """Write (or check) closer/schemas/mutants-{manifest,score}.schema.json from the models."""
    for name, model in (("mutants-manifest", MutantManifest), ("mutants-score", ScoreReport)):
        text = json.dumps(model.model_json_schema(), indent=1) + "\n"
        path = schema_path(name)
        if check:
            if not path.is_file() or path.read_text() != text:
                raise InputError(f"{path} is out of date: run `closer mutants schema`")
        else:
            path.write_text(text)
            click.echo(f"wrote {path}")
