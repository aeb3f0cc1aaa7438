"""`closer reward`'s text output: a result's gates and terms, a Pareto set, as rich tables.

Apart from the command module so that `closer reward batch` (JSON lines only) does not import rich.
"""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from closer.reward.models import RewardResult
from closer.reward.pareto import ParetoSet


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.6g}"


def _render(*tables: Table) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=140, no_color=True, highlight=False)
    for table in tables:
        console.print(table)
    return buffer.getvalue()


def render_result(result: RewardResult) -> str:
    gates = Table(title="gates", title_justify="left")
    for column in ("gate", "status", "observed", "reason"):
        gates.add_column(column)
    for name, status in result.gates.items():
        detail = result.gate_details[name]
        gates.add_row(name, status.value, detail.observed, detail.reason)
    terms = Table(title="terms", title_justify="left")
    for column in ("name", "metric", "value", "target", "weight", "penalty", "met"):
        terms.add_column(column, justify="right" if column in ("value", "target", "weight", "penalty") else "left")
    for name, term in result.terms.items():
        met = "—" if term.met is None else ("yes" if term.met else "no")
        terms.add_row(name, term.metric, _num(term.value), _num(term.target), _num(term.weight),
                      _num(term.penalty), met)
    text = _render(gates, terms)
    for name, derived in result.derived.items():
        text += f"derived {name} = {derived.value:.6g} {derived.unit} ({derived.formula}"
        text += f"; {derived.note})\n" if derived.note else ")\n"
    run = result.provenance.run
    platform = run.get("run__flow__platform", "?")
    revision = run.get("run__closer__design_revision", "?")
    corner = run.get("run__closer__pdk_corner", "?")
    text += (f"provenance: platform {platform}, design revision {revision}, corner {corner}, "
             f"closer {result.provenance.closer_version}\n")
    text += f"gate G = {result.gate}   reward R = {result.reward:.6g}\n"
    return text


def render_pareto(front: ParetoSet) -> str:
    table = Table(title="results (lower is better in every objective)", title_justify="left")
    table.add_column("result")
    table.add_column("set")
    table.add_column("reward", justify="right")
    for name, metric in front.objectives.items():
        table.add_column(f"{name}\n{metric}", justify="right")
    groups = (("pareto", front.front), ("dominated", front.dominated),
              ("infeasible", front.infeasible))
    for label, rows in groups:
        for row in rows:
            table.add_row(row.label, label, _num(row.reward),
                          *(_num(row.values[n]) for n in front.objectives))
    return _render(table) + f"Pareto set: {len(front.front)} of {len(front.rows)} results\n"
