"""`closer report RUNS --out DIR`: tables, curves and the invalid-run manifest from saved run
records (nothing is recomputed from tools; every number comes from a record.json, or from the
rescore.json that `closer trajectory rescore` wrote beside it).

    <out>/
      results.csv                  one row per trial (the records, flattened)
      table.csv / table.md         per design x kind x budget x agent: trials, invalid trials, mean
                                   reward with a bootstrap 95% CI over the valid trials, run-state
                                   success and feasible rates, AUC public and hidden (both axes);
                                   an invalid run (INVALID_STATES) never enters a mean
      a_plus_b_vs_c.csv            A and B at one tier beside C at the tier of closest aggregate budget
                                   (independent means; the composition is closer matrix's RQ1)
      invalid_runs.json            every trial that did not end in success, with its state and reason
      curves/<task>.png            best-so-far against wall clock and cost, public and hidden, per trial
      report.md, index.html        the same, for people (measure definitions: docs/trajectory.md)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from closer.budget import BudgetOverride, resolve_budget
from closer.errors import InputError
from closer.paths import repo_paths
from closer.tasks.rescore import RescoreFile, Trial, find_trials, load_rescore
from closer.tasks.runner import RunRecord, feasible_label

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20261130
INVALID_STATES = ("infrastructure_failure", "verifier_failure")
MEASURES_DOC = "docs/trajectory.md#definitions"


@dataclass(frozen=True)
class TrialView:
    """One trial as the report shows it: its record, its rescore (if any) and its files."""

    dir: Path
    record: RunRecord
    rescore: RescoreFile | None

    @property
    def label(self) -> str:
        return self.record.agent + (" (machinery)" if self.record.machinery_baseline else "")

    def public(self, field: str):
        """A public anytime number: from rescore.json when there is one (recomputed with the
        current measure definitions beside the hidden one), else from the record."""
        if self.rescore is not None:
            return getattr(self.rescore, field)
        return getattr(self.record, field)

    def files(self) -> dict[str, Path]:
        paths = self.record.paths
        found = {"record": self.dir / "record.json",
                 "evaluation": Path(paths.get("evaluation", self.dir / "evaluation" / "evaluation.json")),
                 "trajectory": Path(paths["trajectory"]) if "trajectory" in paths else None,
                 "rescore": self.dir / "rescore.json"}
        return {name: path for name, path in found.items() if path is not None and path.is_file()}


def load_trials(runs: Path) -> list[TrialView]:
    return [TrialView(t.dir, t.record, load_rescore(t.dir)) for t in find_trials(runs)]


def bootstrap_ci(values: list[float], samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap 95% CI of the mean; a single trial gives a zero-width interval."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = rng.choice(arr, size=(samples, arr.size), replace=True).mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def _hidden(t: TrialView, field: str) -> float | None:
    return getattr(t.rescore, field) if t.rescore is not None else None


def records_frame(trials: list[TrialView]) -> pd.DataFrame:
    rows = []
    for t in trials:
        r = t.record
        rows.append({
            "task": r.task_id, "design": r.design, "kind": r.kind, "budget": r.budget_tier,
            "agent": t.label, "trial": r.trial, "run_state": r.run_state, "feasible": r.is_feasible,
            "reward": r.reward, "scored": r.scored, "failing_gates": ",".join(r.failing_gates),
            "best_public_reward": t.public("best_public_reward"), "best_hidden_reward": _hidden(t, "best_hidden_reward"),
            "public_private_gap": r.public_private_gap, "evaluator_public_gap": r.evaluator_public_gap,
            "auc_wall_public": t.public("auc_wall_public"), "auc_cost_public": t.public("auc_cost_public"),
            "auc_wall_hidden": _hidden(t, "auc_wall_hidden"), "auc_cost_hidden": _hidden(t, "auc_cost_hidden"),
            "time_to_first_feasible_s": r.time_to_first_feasible_s, "func_pass_gap": r.func_pass_gap,
            "calls": json.dumps(r.calls_by_tool, sort_keys=True), "suite_version": r.suite_version,
            "agent_wall_s": r.agent_wall_s,
        })
    return pd.DataFrame(rows)


def _mean(series: pd.Series) -> float:
    values = series.dropna().astype(float)
    return float(values.mean()) if len(values) else float("nan")


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (design, kind, budget, agent), group in df.groupby(["design", "kind", "budget", "agent"], sort=True):
        invalid = group["run_state"].isin(INVALID_STATES)
        valid = group[~invalid]  # an invalid run's reward measures the harness, not the agent
        scored = valid["reward"].dropna().astype(float).tolist()
        low, high = bootstrap_ci(scored) if scored else (float("nan"), float("nan"))
        rows.append({
            "design": design, "kind": kind, "budget": budget, "agent": agent, "trials": len(group),
            "invalid": int(invalid.sum()), "scored": len(scored), "reward_mean": float(np.mean(scored)) if scored else float("nan"),
            "reward_ci_low": low, "reward_ci_high": high,
            "state_success_rate": float((group["run_state"] == "success").mean()),
            "feasible_rate": float(group["feasible"].astype(bool).mean()),
            "auc_wall_public_mean": _mean(valid["auc_wall_public"]),
            "auc_wall_hidden_mean": _mean(valid["auc_wall_hidden"]),
            "auc_cost_public_mean": _mean(valid["auc_cost_public"]),
            "auc_cost_hidden_mean": _mean(valid["auc_cost_hidden"]),
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


def invalid_manifest(trials: list[TrialView]) -> list[dict]:
    return [{"task": t.record.task_id, "agent": t.record.agent, "trial": t.record.trial,
             "run_state": t.record.run_state, "invalid": t.record.run_state in INVALID_STATES,
             "reason": t.record.run_state_reason, "verifier_error": t.record.verifier_error, "record": str(t.dir)}
            for t in trials if t.record.run_state != "success"]


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "-" if np.isnan(value) else f"{value:.4g}"
    return "-" if value is None else str(value)


def markdown_table(df: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def _trial_rows(trials: list[TrialView]) -> pd.DataFrame:
    return pd.DataFrame([{
        "task": t.record.task_id, "agent": t.label, "trial": t.record.trial, "run_state": t.record.run_state,
        "feasible": feasible_label(t.record), "reward": t.record.reward,
        "failing_gates": ", ".join(t.record.failing_gates) or "-",
        "best_public": t.public("best_public_reward"), "best_hidden": _hidden(t, "best_hidden_reward"),
        "gap": t.record.public_private_gap,
        "auc_wall_public": t.public("auc_wall_public"), "auc_wall_hidden": _hidden(t, "auc_wall_hidden"),
    } for t in trials])


def task_revisions(trials: list[TrialView]) -> dict[str, list[str]]:
    """task id -> the task checksums its trials ran on ('unrecorded' for older records), for the
    tasks whose trials ran on more than one revision."""
    seen: dict[str, set[str]] = {}
    for t in trials:
        seen.setdefault(t.record.task_id, set()).add(t.record.task_checksum or "unrecorded")
    return {tid: sorted(sums) for tid, sums in sorted(seen.items()) if len(sums) > 1}


def build_report(runs: Path, out: Path, mix_revisions: bool = False) -> Path:
    from closer.report.curves import plot_curves
    from closer.report.page import render_page

    trials = load_trials(runs)
    mixed = task_revisions(trials)
    if mixed and not mix_revisions:
        tid, sums = next(iter(mixed.items()))
        raise InputError(f"{runs}: trials of task {tid} ran on {len(sums)} revisions of it (task checksums "
                         f"{', '.join(s[:12] for s in sums)}; {len(mixed)} task(s) mixed): report each "
                         "suite's runs separately, or pass --mix-revisions")
    out.mkdir(parents=True, exist_ok=True)
    df = records_frame(trials)
    df.to_csv(out / "results.csv", index=False)
    table = summary_table(df)
    table.to_csv(out / "table.csv", index=False)
    versus = a_plus_b_vs_c(table)
    versus.to_csv(out / "a_plus_b_vs_c.csv", index=False)
    invalid = invalid_manifest(trials)
    (out / "invalid_runs.json").write_text(json.dumps(invalid, indent=2) + "\n")
    curves = plot_curves(trials, out / "curves")
    versions = sorted({t.record.suite_version for t in trials})
    if mixed:
        versions.append(f"MIXED task revisions of {', '.join(mixed)} (--mix-revisions)")
    feasible = int(df["feasible"].astype(bool).sum())
    measures = repo_paths().root / MEASURES_DOC.split("#")[0]
    md = ["# Closer report", "",
          f"Runs: `{runs}`; {len(trials)} trials; suite version(s) {', '.join(versions)}; "
          f"**feasible {feasible} of {len(trials)}** (every gate passed on the hidden conditions).",
          "Rewards are from the pristine evaluator on hidden conditions; machinery baselines are labeled. "
          "A run state of `success` means the run completed and was scored, not that it passed. "
          f"Measure definitions: `{MEASURES_DOC}`.", "",
          "## Per design x kind x budget x agent", "", markdown_table(table), "",
          "## Trials", "", markdown_table(_trial_rows(trials)), "",
          "## A, B and C side by side (independent means, not the protocol's composition)", "",
          "A and B here are independent trials; the protocol's A+B composition (B started from A's final RTL "
          "with the rest of the aggregate budget) is `closer matrix run` (docs/matrix.md, RQ1).", "",
          markdown_table(versus) if not versus.empty else "(needs A, B and C runs)", "",
          "## Runs that did not end in success", ""]
    md += [f"- {i['task']} {i['agent']} #{i['trial']}: {i['run_state']}: {i['reason']}"
           + (f" ({i['verifier_error']})" if i["verifier_error"] and i["verifier_error"] != i["reason"] else "") for i in invalid] or ["(none)"]
    md += ["", "## Best-so-far curves (public wide band, hidden dashed)", ""] + [f"![{p.stem}](curves/{p.name})" for p in curves]
    (out / "report.md").write_text("\n".join(md) + "\n")
    page = render_page(runs=runs, out=out, trials=trials, table=table, versus=versus, invalid=invalid,
                       curves=curves, versions=versions, feasible=feasible, measures=measures)
    (out / "index.html").write_text(page)
    return out / "report.md"


def relative_link(target: Path, start: Path) -> str:
    return os.path.relpath(target.resolve(), start.resolve())
