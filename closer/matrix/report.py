"""`closer matrix report OUT`: the protocol's research-question tables from the matrix's store and
the records it points to (nothing is recomputed from tools).

    <out>/report/
      trials.csv        one row per store entry (plain trials and A+B compositions)
      rq1.csv           A+B composed versus C at the same aggregate budget: reward, AUC, PnR calls,
                        bootstrap 95% CIs over trials and of the difference
      rq2.csv           after a failed expensive call (pnr, not feasible): the layer edited first
                        and whether the next full-gate call improved on it (counts: layer x outcome)
      rq3.csv           final reward and AUC per kind x budget x agent, mean with CI and the
                        run-to-run standard deviation
      invalid_runs.json every trial that did not end in success (invalid ones never enter a mean)
      curves/           best-so-far curves per task (closer.report.curves)
      report.md
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from closer.budget import ToolClass
from closer.inputs import load_json_model
from closer.matrix.paths import MatrixPaths
from closer.matrix.store import ResultStore, StoreEntry
from closer.report.build import (BOOTSTRAP_SAMPLES, BOOTSTRAP_SEED, INVALID_STATES, bootstrap_ci, markdown_table)
from closer.tasks.runner import RunRecord
from closer.trajectory.reader import TrajectoryReader
from closer.trajectory.record import EditLayer, TrajectoryRecord

NO_EDIT = "none"
OUTCOMES = ("improved", "not improved", "no later full-gate call")


def entry_rows(entries: list[StoreEntry]) -> pd.DataFrame:
    """One row per entry with the record's anytime measures (a failed composition has no record)."""
    rows = []
    for e in entries:
        record = load_json_model(Path(e.record), RunRecord, "run record") if e.record else None
        pnr = record.calls_by_tool.get(ToolClass.PNR.value, 0) if record else 0
        if e.role == "ab" and e.composed_from:
            pnr += _a_pnr_calls(entries, e.composed_from)
        rows.append({
            "key": e.key, "design": e.design, "kind": e.kind, "budget": e.budget_tier, "agent": e.agent,
            "machinery": e.machinery_baseline, "trial": e.trial, "run_state": e.run_state,
            "invalid": e.run_state in INVALID_STATES, "reward": e.reward, "feasible": e.feasible,
            "auc_cost_public": record.auc_cost_public if record else 0.0,
            "auc_wall_public": record.auc_wall_public if record else 0.0,
            "pnr_calls": pnr, "suite_version": e.suite_version, "note": e.note,
            "cost_to_first_feasible": record.cost_to_first_feasible if record else None,
            "checkpoint_a_reward": _checkpoint_reward(e), "checkpoint_cost": e.a_checkpoint.cost_units
            if e.a_checkpoint else None,
            **_layout_columns(e),
            "trajectory": record.paths.get("trajectory") if record else None,
        })
    return pd.DataFrame(rows, columns=["key", "design", "kind", "budget", "agent", "machinery", "trial", "run_state",
                                       "invalid", "reward", "feasible", "auc_cost_public", "auc_wall_public",
                                       "pnr_calls", "suite_version", "note", "cost_to_first_feasible",
                                       "checkpoint_a_reward", "checkpoint_cost", *LAYOUT_COLUMNS, "trajectory"])


LAYOUT_COLUMNS = ("start_reward", "gain_after_start", "first_feasible_reward", "gain_after_first_feasible",
                  "cost_after_first_feasible")


def _layout_columns(entry: StoreEntry) -> dict:
    """What a trial made of its budget from its starting RTL (B, A+B) and from its first feasible
    layout (B, C, A+B): the hidden reward there and the final reward's gain over it (0 when none
    of its calls was feasible: no gain is claimed for a layout never reached)."""
    row = dict.fromkeys(LAYOUT_COLUMNS)
    if not entry.layout_searched or entry.reward is None:
        return row
    if entry.start is not None and entry.start.reward is not None:
        row |= {"start_reward": entry.start.reward, "gain_after_start": entry.reward - entry.start.reward}
    point = entry.first_feasible
    if point is None:
        return row | {"first_feasible_reward": 0.0, "gain_after_first_feasible": 0.0}
    if point.reward is not None:
        row |= {"first_feasible_reward": point.reward, "gain_after_first_feasible": entry.reward - point.reward,
                "cost_after_first_feasible": point.cost_after_units}
    return row


def _checkpoint_reward(entry: StoreEntry) -> float | None:
    """A C trial's reward at its verified-RTL checkpoint: A's reward of the first snapshot that
    passes A's oracle, 0 if none did; None for other entries (or a matrix that did not compose)."""
    if not entry.checkpoint_searched:
        return None
    return entry.a_checkpoint.a_reward if entry.a_checkpoint else 0.0


def _a_pnr_calls(entries: list[StoreEntry], a_key: str) -> int:
    for e in entries:
        if e.key == a_key and e.record:
            return load_json_model(Path(e.record), RunRecord, "run record").calls_by_tool.get(ToolClass.PNR.value, 0)
    return 0


def bootstrap_diff_ci(left: list[float], right: list[float], samples: int = BOOTSTRAP_SAMPLES,
                      seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap 95% CI of mean(left) - mean(right), the two resampled independently
    (the trials of two arms are not paired)."""
    if not left or not right:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    a, b = np.asarray(left, dtype=float), np.asarray(right, dtype=float)
    diffs = (rng.choice(a, size=(samples, a.size)).mean(axis=1) - rng.choice(b, size=(samples, b.size)).mean(axis=1))
    return float(np.percentile(diffs, 2.5)), float(np.percentile(diffs, 97.5))


def _valid(values: pd.Series) -> list[float]:
    return values.dropna().astype(float).tolist()


def _mean_ci(values: list[float]) -> tuple[float, float, float]:
    if not values:
        return (float("nan"),) * 3
    low, high = bootstrap_ci(values)
    return float(np.mean(values)), low, high


def rq1_table(df: pd.DataFrame) -> pd.DataFrame:
    """A+B composed (kind AB) against C, per design x budget x agent, valid trials only."""
    rows = []
    valid = df[~df["invalid"]]
    for (design, budget, agent), group in valid.groupby(["design", "budget", "agent"], sort=True):
        ab, c = group[group["kind"] == "AB"], group[group["kind"] == "C"]
        if ab.empty or c.empty:
            continue
        row = {"design": design, "budget": budget, "agent": agent, "AB_trials": len(ab), "C_trials": len(c)}
        for measure in ("reward", "auc_cost_public", "pnr_calls"):
            for arm, part in (("AB", ab), ("C", c)):
                mean, low, high = _mean_ci(_valid(part[measure]))
                row |= {f"{arm}_{measure}": mean, f"{arm}_{measure}_ci_low": low, f"{arm}_{measure}_ci_high": high}
        low, high = bootstrap_diff_ci(_valid(ab["reward"]), _valid(c["reward"]))
        row |= {"reward_diff": row["AB_reward"] - row["C_reward"], "reward_diff_ci_low": low,
                "reward_diff_ci_high": high}
        rows.append(row | _checkpoints(group[group["kind"] == "A"], group[group["kind"] == "B"], c))
    return pd.DataFrame(rows)


def _checkpoints(a: pd.DataFrame, b: pd.DataFrame, c: pd.DataFrame) -> dict:
    """A versus C at C's verified-RTL checkpoint (reward of A's oracle; cost to get there), and B
    versus C from C's first feasible layout: the cost to the first feasible full-gate call, C's
    hidden reward there and its gain over it by the end (with the cost it had left), against B's
    gain over its starting RTL (weak but correct: already a feasible layout)."""
    row = {}
    for name, values in (("A_reward", a["reward"]), ("C_checkpoint_A_reward", c["checkpoint_a_reward"]),
                         ("A_cost_to_first_feasible", a["cost_to_first_feasible"]),
                         ("C_checkpoint_cost", c["checkpoint_cost"]), ("B_reward", b["reward"]),
                         ("B_cost_to_first_feasible", b["cost_to_first_feasible"]),
                         ("C_cost_to_first_feasible", c["cost_to_first_feasible"]),
                         ("B_start_reward", b["start_reward"]), ("B_gain_after_start", b["gain_after_start"]),
                         ("C_first_feasible_reward", c["first_feasible_reward"]),
                         ("C_gain_after_first_feasible", c["gain_after_first_feasible"]),
                         ("C_cost_after_first_feasible", c["cost_after_first_feasible"])):
        mean, low, high = _mean_ci(_valid(values))
        row |= {name: mean, f"{name}_ci_low": low, f"{name}_ci_high": high}
    return row


RQ1_SECTIONS = (
    ("A+B composed versus C", ("AB_reward", "C_reward", "reward_diff", "AB_auc_cost_public", "C_auc_cost_public",
                               "AB_pnr_calls", "C_pnr_calls")),
    ("A versus C at C's verified-RTL checkpoint (A's hidden reward of C's first snapshot that passes A's oracle, "
     "and the cost to reach it)", ("A_reward", "C_checkpoint_A_reward", "A_cost_to_first_feasible",
                                   "C_checkpoint_cost")),
    ("B versus C after C's first feasible layout (C's own hidden reward at its first publicly feasible full-gate "
     "call, its gain over it by the end and the cost it spent after it; B starts from weak but correct RTL, a "
     "feasible layout: its gain over that start)", ("B_start_reward", "B_reward", "B_gain_after_start",
                                                   "C_first_feasible_reward", "C_reward",
                                                   "C_gain_after_first_feasible", "C_cost_after_first_feasible",
                                                   "B_cost_to_first_feasible", "C_cost_to_first_feasible")),
)


def _rq1_sections(rq1: pd.DataFrame) -> list[str]:
    """RQ1's three comparisons as Markdown tables: each measure's mean with its 95% CI."""
    if rq1.empty:
        return ["(needs A, B and C trials)", ""]
    lines = []
    for title, measures in RQ1_SECTIONS:
        table = rq1[["design", "budget", "agent"]].copy()
        for name in measures:
            table[name] = [_with_ci(row, name) for _, row in rq1.iterrows()]
        lines += [f"**{title}**", "", markdown_table(table), ""]
    return lines


def _with_ci(row: pd.Series, name: str) -> str:
    mean, low, high = row.get(name), row.get(f"{name}_ci_low"), row.get(f"{name}_ci_high")
    if mean is None or pd.isna(mean):
        return "-"
    if low is None or pd.isna(low) or (low == high == mean):
        return f"{mean:.4g}"
    return f"{mean:.4g} [{low:.4g}, {high:.4g}]"


def edits_after_failures(calls: list[TrajectoryRecord]) -> list[tuple[str, str]]:
    """For each failed expensive call (pnr, not feasible): (the layer edited first after it, in
    stage order when one call edits several; `none` if no later call edits anything) and whether
    the next full-gate call after that edit has a higher public reward."""
    events = []
    for i, failed in enumerate(calls):
        if failed.tool is not ToolClass.PNR or failed.feasible or failed.outcome.refused:  # a refused call ran nothing
            continue
        later = calls[i + 1:]
        edit = next((n for n, c in enumerate(later) if c.layers), None)
        if edit is None:
            events.append((NO_EDIT, OUTCOMES[2]))
            continue
        layer = min(later[edit].layers, key=list(EditLayer).index).value
        scored = next((c for c in later[edit:] if c.reward is not None and c.tool in (ToolClass.PNR, ToolClass.VERIFY)),
                      None)
        if scored is None:
            events.append((layer, OUTCOMES[2]))
        else:
            events.append((layer, OUTCOMES[0] if scored.reward > (failed.reward or 0.0) else OUTCOMES[1]))
    return events


def rq2_table(events: list[tuple[str, str, str]]) -> pd.DataFrame:
    """(agent, layer, outcome) events -> counts per agent x layer edited first x outcome."""
    layers = [layer.value for layer in EditLayer] + [NO_EDIT]
    rows = []
    agents = sorted({agent for agent, _, _ in events})
    for agent in agents:
        for layer in layers:
            counts = {o: sum(1 for a, l, out in events if a == agent and l == layer and out == o) for o in OUTCOMES}
            rows.append({"agent": agent, "layer_edited_first": layer, **counts,
                         "improved_rate": counts[OUTCOMES[0]] / max(1, counts[OUTCOMES[0]] + counts[OUTCOMES[1]])
                         if counts[OUTCOMES[0]] + counts[OUTCOMES[1]] else float("nan")})
    return pd.DataFrame(rows, columns=["agent", "layer_edited_first", *OUTCOMES, "improved_rate"])


def rq2_events(df: pd.DataFrame) -> list[tuple[str, str, str]]:
    events = []
    for row in df[~df["invalid"] & df["trajectory"].notna()].itertuples():
        path = Path(row.trajectory)
        if path.is_file():
            events += [(row.agent, layer, outcome) for layer, outcome in edits_after_failures(list(TrajectoryReader(path)))]
    return events


def rq3_table(df: pd.DataFrame) -> pd.DataFrame:
    """Final reward and AUC per design x kind x budget x agent: mean, CI and the run-to-run std."""
    rows = []
    for (design, kind, budget, agent), group in df.groupby(["design", "kind", "budget", "agent"], sort=True):
        valid = group[~group["invalid"]]
        rewards = _valid(valid["reward"])
        mean, low, high = _mean_ci(rewards)
        auc, auc_low, auc_high = _mean_ci(_valid(valid["auc_cost_public"]))
        rows.append({"design": design, "kind": kind, "budget": budget, "agent": agent, "trials": len(group),
                     "invalid": int(group["invalid"].sum()), "reward_mean": mean, "reward_ci_low": low,
                     "reward_ci_high": high, "reward_std": float(np.std(rewards, ddof=1)) if len(rewards) > 1 else float("nan"),
                     "feasible_rate": float(valid["feasible"].astype(bool).mean()) if len(valid) else float("nan"),
                     "auc_cost_public_mean": auc, "auc_ci_low": auc_low, "auc_ci_high": auc_high})
    return pd.DataFrame(rows)


def invalid_entries(df: pd.DataFrame) -> list[dict]:
    bad = df[df["run_state"] != "success"]
    return [{"key": r.key, "run_state": r.run_state, "invalid": bool(r.invalid), "note": r.note} for r in bad.itertuples()]


def build_matrix_report(out: Path) -> Path:
    from closer.report.build import load_trials
    from closer.report.curves import plot_curves

    paths = MatrixPaths(out)
    entries = ResultStore(paths.store).entries()
    report = paths.report
    report.mkdir(parents=True, exist_ok=True)
    df = entry_rows(entries)
    df.drop(columns=["trajectory"]).to_csv(report / "trials.csv", index=False)
    rq1, rq2, rq3 = rq1_table(df), rq2_table(rq2_events(df)), rq3_table(df)
    for name, table in (("rq1", rq1), ("rq2", rq2), ("rq3", rq3)):
        table.to_csv(report / f"{name}.csv", index=False)
    invalid = invalid_entries(df)
    (report / "invalid_runs.json").write_text(json.dumps(invalid, indent=2) + "\n")
    curves = []
    for runs in (paths.runs, paths.runs_ab):
        if runs.is_dir():
            curves += plot_curves(load_trials(runs), report / "curves" / runs.name)
    versions = sorted(set(df["suite_version"])) if not df.empty else []
    md = ["# Closer matrix report", "",
          f"Store `{paths.store}`: {len(entries)} entries; suite version(s) {', '.join(versions) or '-'}. "
          "Rewards are the pristine evaluator's on hidden conditions; invalid runs "
          f"({', '.join(INVALID_STATES)}) never enter a mean; CIs are percentile bootstrap 95% over trials.", "",
          "## RQ1: A+B composed versus C at the same aggregate budget", "",
          "AB: the A trial's final RTL, when it passes A's gates, starts a B trial with what is left of C's budget "
          "(calls per class, wall clock, cost units); an A that fails its gates makes the composition's reward 0. "
          "AUC: the composed B trial's public AUC over cost; PnR calls: A's plus B's.", "",
          *_rq1_sections(rq1),
          "## RQ2: after a failed expensive call, the layer edited first and whether reward then improves", "",
          markdown_table(rq2) if not rq2.empty else "(no failed pnr call in any trajectory)", "",
          "## RQ3: final reward and AUC per budget (run-to-run std over trials)", "",
          markdown_table(rq3) if not rq3.empty else "(no trials)", "",
          "## Runs that did not end in success", ""]
    md += [f"- {i['key']}: {i['run_state']}{' (invalid)' if i['invalid'] else ''} {i['note']}" for i in invalid] or ["(none)"]
    md += ["", "## Best-so-far curves", ""] + [f"![{p.stem}]({p.relative_to(report)})" for p in curves]
    (report / "report.md").write_text("\n".join(md) + "\n")
    return report / "report.md"
