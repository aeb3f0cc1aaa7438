"""`closer report RUNS --out DIR`."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("report")
@click.argument("runs", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--mix-revisions", is_flag=True,
              help="Report trials of one task that ran on different task checksums together (else refused).")
def report_command(runs: Path, out: Path, mix_revisions: bool) -> None:
    """Tables, best-so-far curves, A+B vs C, bootstrap CIs and the invalid-run manifest of RUNS."""
    from closer.report.build import build_report

    report = build_report(runs, out, mix_revisions)
    click.echo(f"report {report} (HTML {out / 'index.html'})")
