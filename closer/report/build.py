"""`closer report RUNS --out DIR`: tables, curves and the invalid-run manifest from saved run
records (nothing is recomputed from tools; every number comes from a record.json).

    <out>/
      results.csv                  one row per trial (the records, flattened)
      table.csv / table.md         per design x kind x budget x agent: trials, mean reward with a
                                   bootstrap 95% CI over trials, success rate, AUC (both axes)
      a_plus_b_vs_c.csv            A and B at one tier against C at the tier of closest aggregate budget
      invalid_runs.json            every trial that did not end in success, with its state and reason
      curves/<task>.png            best-so-far public estimate against wall clock, one line per trial
      report.md, index.html        the same, for people
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pandas as pd

from closer.budget import BudgetOverride, resolve_budget
from closer.errors import InputError
from closer.tasks.runner import RunRecord, load_records

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20261130
INVALID_STATES = ("infrastructure_failure", "verifier_failure")


def bootstrap_ci(values: list[float], samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap 95% CI of the mean; a single trial gives a zero-width interval."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = rng.choice(arr, size=(samples, arr.size), replace=True).mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def records_frame(records: list[RunRecord]) -> pd.DataFrame:
    rows = []
    for r in records:
        rows.append({
            "task": r.task_id, "design": r.design, "kind": r.kind, "budget": r.budget_tier,
            "agent": r.agent + (" (machinery)" if r.machinery_baseline else ""), "trial": r.trial,
            "run_state": r.run_state, "reward": r.reward, "scored": r.scored,
            "failing_gates": ",".join(r.failing_gates), "auc_wall": r.auc_wall, "auc_cost": r.auc_cost,
            "time_to_first_feasible_s": r.time_to_first_feasible_s, "public_private_gap": r.public_private_gap,
            "func_pass_gap": r.func_pass_gap, "calls": json.dumps(r.calls_by_tool, sort_keys=True),
            "suite_version": r.suite_version, "agent_wall_s": r.agent_wall_s,
        })
    return pd.DataFrame(rows)


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (design, kind, budget, agent), group in df.groupby(["design", "kind", "budget", "agent"], sort=True):
        scored = group["reward"].dropna().astype(float).tolist()
        low, high = bootstrap_ci(scored) if scored else (float("nan"), float("nan"))
        rows.append({
            "design": design, "kind": kind, "budget": budget, "agent": agent, "trials": len(group),
            "scored": len(scored), "reward_mean": float(np.mean(scored)) if scored else float("nan"),
            "reward_ci_low": low, "reward_ci_high": high,
            "success_rate": float((group["run_state"] == "success").mean()),
            "auc_wall_mean": float(group["auc_wall"].astype(float).mean()),
            "auc_cost_mean": float(group["auc_cost"].astype(float).mean()),
        })
    return pd.DataFrame(rows)


def a_plus_b_vs_c(table: pd.DataFrame) -> pd.DataFrame:
    """A and B at one tier (aggregate budget = the sum of their cost units) against C at the tier
    whose cost units are closest to that aggregate."""
    costs = {tier: resolve_budget(BudgetOverride(tier=tier)).cost_units for tier in table["budget"].unique()}
    rows = []
    for (design, agent), group in table.groupby(["design", "agent"]):
        by = {(r.kind, r.budget): r.reward_mean for r in group.itertuples()}
        c_tiers = [b for (k, b) in by if k == "C"]
        for tier in sorted({b for (k, b) in by if k == "A"} & {b for (k, b) in by if k == "B"}):
            aggregate = costs[tier] * 2
            c_tier = min(c_tiers, key=lambda t: abs(costs[t] - aggregate)) if c_tiers else None
            rows.append({"design": design, "agent": agent, "ab_tier": tier, "ab_cost_units": aggregate,
                         "A_reward": by[("A", tier)], "B_reward": by[("B", tier)],
                         "C_tier": c_tier, "C_cost_units": costs[c_tier] if c_tier else None,
                         "C_reward": by.get(("C", c_tier)) if c_tier else None})
    return pd.DataFrame(rows)


def plot_curves(records: list[RunRecord], out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written = []
    tasks = sorted({r.task_id for r in records})
    for task in tasks:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for r in (r for r in records if r.task_id == task):
            xs = [0.0] + [p["elapsed_s"] for p in r.curve] + [max([p["elapsed_s"] for p in r.curve] + [r.agent_wall_s])]
            ys = [0.0] + [p["best"] for p in r.curve] + [r.curve[-1]["best"] if r.curve else 0.0]
            ax.step(xs, ys, where="post", label=f"{r.agent} #{r.trial}")
        ax.set_xlabel("wall clock since run start (s)")
        ax.set_ylabel("best public estimate so far")
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(task)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = out / f"{task}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def invalid_manifest(records: list[RunRecord]) -> list[dict]:
    return [{"task": r.task_id, "agent": r.agent, "trial": r.trial, "run_state": r.run_state,
             "invalid": r.run_state in INVALID_STATES, "reason": r.run_state_reason,
             "verifier_error": r.verifier_error, "record": r.paths.get("trial")}
            for r in records if r.run_state != "success"]


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "-" if np.isnan(value) else f"{value:.4g}"
    return "-" if value is None else str(value)


def markdown_table(df: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def build_report(runs: Path, out: Path) -> Path:
    records = load_records(runs)
    if not records:
        raise InputError(f"{runs}: no record.json under it (run `closer task run` first)")
    out.mkdir(parents=True, exist_ok=True)
    df = records_frame(records)
    df.to_csv(out / "results.csv", index=False)
    table = summary_table(df)
    table.to_csv(out / "table.csv", index=False)
    versus = a_plus_b_vs_c(table)
    versus.to_csv(out / "a_plus_b_vs_c.csv", index=False)
    invalid = invalid_manifest(records)
    (out / "invalid_runs.json").write_text(json.dumps(invalid, indent=2) + "\n")
    curves = plot_curves(records, out / "curves")
    versions = sorted({r.suite_version for r in records})
    md = ["# Closer report", "", f"Runs: `{runs}`; {len(records)} trials; suite version(s) {', '.join(versions)}.",
          "Rewards are from the pristine evaluator on hidden conditions; machinery baselines are labeled.", "",
          "## Per design x kind x budget x agent", "", markdown_table(table), "",
          "## A + B versus C at equal aggregate budget", "",
          markdown_table(versus) if not versus.empty else "(needs A, B and C runs)", "",
          "## Runs that did not end in success", ""]
    md += [f"- {i['task']} {i['agent']} #{i['trial']}: {i['run_state']}: {i['reason']}"
           + (f" ({i['verifier_error']})" if i["verifier_error"] and i["verifier_error"] != i["reason"] else "") for i in invalid] or ["(none)"]
    md += ["", "## Best-so-far curves", ""] + [f"![{p.stem}](curves/{p.name})" for p in curves]
    (out / "report.md").write_text("\n".join(md) + "\n")
    page = ["<!doctype html><html><head><meta charset='utf-8'><title>Closer report</title></head><body>",
            "<h1>Closer report</h1>", f"<p>{html.escape(str(runs))}: {len(records)} trials</p>",
            "<h2>Per design x kind x budget x agent</h2>", table.to_html(index=False, float_format="%.4g"),
            "<h2>A + B versus C</h2>", versus.to_html(index=False, float_format="%.4g"),
            "<h2>Runs that did not end in success</h2><ul>",
            *[f"<li>{html.escape(i['task'])} {html.escape(i['agent'])} #{i['trial']}: {html.escape(i['run_state'])}: "
              f"{html.escape(i['reason'])}</li>" for i in invalid], "</ul>", "<h2>Best-so-far curves</h2>",
            *[f"<img src='curves/{p.name}' alt='{p.stem}'>" for p in curves], "</body></html>"]
    (out / "index.html").write_text("\n".join(page) + "\n")
    return out / "report.md"
