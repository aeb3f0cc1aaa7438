"""index.html of the report, rendered from templates/index.html.j2 (jinja2, autoescaped)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from jinja2 import Environment, FileSystemLoader, select_autoescape

from closer.errors import InputError
from closer.inputs import load_json
from closer.report.build import TrialView, relative_link
from closer.tasks.runner import feasible_label

TEMPLATES = Path(__file__).resolve().parent / "templates"


def _num(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _gates(t: TrialView) -> list[dict]:
    """Every required gate that did not pass, with the evaluator's reason."""
    return [{"gate": gate, "status": status, "reason": t.record.gate_reasons.get(gate, "")}
            for gate, status in t.record.gates.items() if status not in ("pass", "not_required")]


def _targets(t: TrialView) -> list[dict]:
    """Metrics against the hidden targets; a schema-1 record has them only in its evaluation.json."""
    terms = t.record.target_terms
    evaluation = t.files().get("evaluation")
    if not terms and evaluation is not None:
        try:
            data = load_json(evaluation, "evaluation record")
        except InputError:
            data = {}
        result = data.get("reward_result") if isinstance(data, dict) else None
        terms = result.get("terms") if isinstance(result, dict) else None
        terms = terms if isinstance(terms, dict) and all(isinstance(v, dict) for v in terms.values()) else {}
    return [{"name": name, **term} for name, term in terms.items()]


def display_table(table: pd.DataFrame) -> list[dict]:
    """The summary table with paired numbers in one cell, narrow enough to read."""
    rows = []
    for r in table.to_dict("records"):
        rows.append({
            "design": r["design"], "kind": r["kind"], "budget": r["budget"], "agent": r["agent"],
            "trials (scored)": f"{r['trials']} ({r['scored']})",
            "reward mean [95% CI]": f"{_num(r['reward_mean'])} [{_num(r['reward_ci_low'])}, {_num(r['reward_ci_high'])}]",
            "run state success": _num(r["state_success_rate"]), "feasible rate": _num(r["feasible_rate"]),
            "AUC wall public / hidden": f"{_num(r['auc_wall_public_mean'])} / {_num(r['auc_wall_hidden_mean'])}",
            "AUC cost public / hidden": f"{_num(r['auc_cost_public_mean'])} / {_num(r['auc_cost_hidden_mean'])}",
        })
    return rows


def trial_context(t: TrialView, out: Path) -> dict:
    r = t.record
    return {
        "id": f"{r.task_id}-{r.agent}-{r.trial}", "task": r.task_id, "agent": r.agent,
        "machinery": r.machinery_baseline, "trial": r.trial, "state": r.run_state,
        "state_reason": r.run_state_reason, "feasible": feasible_label(r), "is_feasible": r.is_feasible,
        "reward": _num(r.reward), "best_public": _num(t.public("best_public_reward")),
        "best_hidden": _num(t.rescore.best_hidden_reward) if t.rescore else "not rescored",
        "gap": _num(r.public_private_gap),
        "auc_wall_public": _num(t.public("auc_wall_public")), "auc_cost_public": _num(t.public("auc_cost_public")),
        "auc_wall_hidden": _num(t.rescore.auc_wall_hidden) if t.rescore else "-",
        "auc_cost_hidden": _num(t.rescore.auc_cost_hidden) if t.rescore else "-",
        "calls": ", ".join(f"{k} {v}" for k, v in r.calls_by_tool.items() if v) or "none",
        "failing_gates": ", ".join(r.failing_gates) or "-", "failing": _gates(t), "reasons": r.reasons,
        "targets": _targets(t),
        "verifier_error": r.verifier_error,
        "links": {name: relative_link(path, out) for name, path in t.files().items()},
    }


def render_page(runs: Path, out: Path, trials: list[TrialView], table: pd.DataFrame, versus: pd.DataFrame,
                invalid: list[dict], curves: list[Path], versions: list[str], feasible: int,
                measures: Path) -> str:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]))
    env.filters["num"] = _num
    return env.get_template("index.html.j2").render(
        runs=str(runs), trials=[trial_context(t, out) for t in trials], n=len(trials), feasible=feasible,
        versions=versions, table=display_table(table),
        versus=versus.to_dict("records"), versus_columns=list(versus.columns), invalid=invalid,
        curves=[p.name for p in curves], measures=relative_link(measures, out) if measures.is_file() else None,
        baselines=sorted({t.record.agent for t in trials if t.record.machinery_baseline}))
