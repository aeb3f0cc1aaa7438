"""`closer reward`: score a metrics file against a targets file; `closer reward pareto`.

The command builds everything before printing anything, so an error leaves no partial output.
Exit 0 whenever a reward was computed (also when it is 0); 2 on invalid input.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from closer.reward.compute import compute_reward
from closer.reward.metrics_file import load_metrics
from closer.reward.models import result_json
from closer.reward.targets import load_targets


@click.group(invoke_without_command=True)
@click.option("--metrics", "metrics_paths", multiple=True, type=click.Path(path_type=Path),
              help="ORFS metadata.json, ORFS per-stage log directory or Closer metrics file "
                   "(repeat to merge several).")
@click.option("--targets", "targets_path", type=click.Path(path_type=Path),
              help="Targets TOML ([gates] required = [...], [[targets]] ...).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.pass_context
def reward_group(ctx: click.Context, metrics_paths: tuple[Path, ...], targets_path: Path | None,
                 as_json: bool) -> None:
    """Gated log-penalty reward R = G · exp(−Σ w·max(0, log(m/m*))) from ORFS metrics."""
    if ctx.invoked_subcommand is not None:
        if metrics_paths or targets_path or as_json:
            raise click.UsageError("put --metrics/--targets/--json after the subcommand name")
        return
    if not metrics_paths or targets_path is None:
        raise click.UsageError("closer reward needs --metrics PATH and --targets PATH")
    result = compute_reward(load_metrics(metrics_paths), load_targets(targets_path))
    if as_json:
        click.echo(result_json(result))
    else:
        from closer.reward.render import render_result

        click.echo(render_result(result))


@reward_group.command("batch")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--targets", "targets_path", type=click.Path(path_type=Path), required=True,
              help="Targets TOML to score every input against.")
@click.option("--keep-going", is_flag=True,
              help="Write a bad input as a line {input, error} in its place instead of stopping.")
def batch_command(path: Path, targets_path: Path, keep_going: bool) -> None:
    """Score a directory of metrics files (*.json) or a JSONL of metric records in one call.

    Prints one JSON line per input, in input order: `input` (the file or file:line) and the
    `reward`, `gate`, `penalty_total` and `terms` of `closer reward --json`.
    """
    from closer.reward.batch import score_inputs

    _write_utf8(score_inputs(path, load_targets(targets_path), keep_going))


def _write_utf8(blocks: list[bytes]) -> None:
    """Bytes to stdout as they are (orjson wrote UTF-8) without decoding or joining them first; a
    stdout without a binary buffer (a caller that redirected it to text) gets the decoded text."""
    binary = getattr(sys.stdout, "buffer", None)
    if binary is None:
        sys.stdout.write(b"".join(blocks).decode())
        return
    sys.stdout.flush()
    binary.writelines(blocks)
    binary.flush()


@reward_group.command("pareto")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--targets", "targets_path", type=click.Path(path_type=Path),
              help="Score FILES (metrics paths) against these targets first; without it FILES "
                   "are `closer reward --json` outputs.")
@click.option("--json", "as_json", is_flag=True, help="Print the Pareto set as JSON.")
def pareto_command(files: tuple[Path, ...], targets_path: Path | None, as_json: bool) -> None:
    """Print the Pareto set of several results over their target metrics, with raw values."""
    from closer.reward.pareto import load_result, pareto_set
    from closer.reward.render import render_pareto

    if targets_path is not None:
        targets = load_targets(targets_path)
        results = [(str(f), compute_reward(load_metrics(f), targets)) for f in files]
    else:
        results = [(str(f), load_result(f)) for f in files]
    front = pareto_set(results)
    click.echo(json.dumps(front.as_dict(), indent=2) if as_json else render_pareto(front))
