"""`closer matrix run SPEC.toml --out DIR` and `closer matrix report DIR`."""

from __future__ import annotations

from pathlib import Path

import click


@click.group("matrix")
def matrix_group() -> None:
    """The protocol's experiment: designs x kinds x budgets x agents x trials on Dask."""


@matrix_group.command("run")
@click.argument("spec_file", metavar="SPEC.toml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The matrix folder: suites, runs, store.jsonl, report/. Run again to resume.")
@click.option("--no-report", is_flag=True, help="Do not write OUT/report after the trials.")
def run_command(spec_file: Path, out: Path, no_report: bool) -> None:
    """Run every trial of SPEC.toml not yet in OUT/store.jsonl (docs/matrix.md)."""
    from rich.console import Console

    from closer.matrix.engine import run_matrix
    from closer.matrix.spec import load_spec

    spec = load_spec(spec_file)
    console = Console(stderr=True)
    entries = run_matrix(spec, out, console)
    click.echo(f"{len(entries)} trials in {out / 'store.jsonl'}")
    if not no_report:
        from closer.matrix.report import build_matrix_report

        click.echo(f"report {build_matrix_report(out)}")


@matrix_group.command("report")
@click.argument("out", type=click.Path(exists=True, file_okay=False, path_type=Path))
def report_command(out: Path) -> None:
    """Write OUT/report/ (RQ1, RQ2, RQ3, invalid runs, variance) from OUT/store.jsonl."""
    from closer.matrix.report import build_matrix_report

    click.echo(f"report {build_matrix_report(out)}")
