"""The best-so-far curve: a step plot over both cost axes, readable at a glance."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from closer.trajectory.measures import TrajectorySummary  # noqa: E402


def _steps(xs: list[float], ys: list[float], budget: float) -> tuple[list[float], list[float]]:
    """Points of r*(x) from 0 to B: 0 before the first improvement, then each new best."""
    px, py = [0.0], [0.0]
    for x, y in zip(xs, ys):
        px.append(min(x, budget))
        py.append(y)
    px.append(budget)
    py.append(py[-1])
    return px, py


def plot_summary(summary: TrajectorySummary, out: Path) -> Path:
    p = summary.params
    wall_h = p.wall_s / 3600.0
    fig, (ax_wall, ax_cost) = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    curve = summary.curve
    panels = (
        (ax_wall, [pt.elapsed_s / 3600.0 for pt in curve], wall_h, "h", "wall clock since run start (h)",
         summary.auc_wall, summary.first_feasible.elapsed_s / 3600.0 if summary.first_feasible else None),
        (ax_cost, [pt.cost_units for pt in curve], p.cost_units, "units", "weighted tool cost (units)",
         summary.auc_cost, summary.first_feasible.cost_units if summary.first_feasible else None),
    )
    best = [pt.best for pt in curve]
    for ax, xs, budget, unit, label, auc, feasible_x in panels:
        sx, sy = _steps(xs, best, budget)
        ax.step(sx, sy, where="post", color="tab:blue", linewidth=2, label="best so far r*")
        ax.fill_between(sx, sy, step="post", alpha=0.15, color="tab:blue")
        ax.plot([min(x, budget) for x in xs], best, "o", color="tab:blue", markersize=4)
        for t in p.thresholds:
            ax.axhline(t, color="grey", linestyle=":", linewidth=1)
        if feasible_x is not None:
            ax.axvline(min(feasible_x, budget), color="tab:green", linestyle="--", linewidth=1,
                       label="first feasible")
        ax.set_xlim(0, budget)
        ax.set_xlabel(label)
        ax.set_title(f"AUC_B = {auc:.4f}  (B = {budget:g} {unit})")
        ax.grid(alpha=0.3)
    ax_wall.set_ylabel("public reward")
    ax_wall.legend(loc="lower right", fontsize=8)
    final = "none" if summary.final_reward is None else f"{summary.final_reward:.4g}"
    top = "none" if summary.best_reward is None else f"{summary.best_reward:.4g}"
    fig.suptitle(f"run {summary.run_id or '?'}: best {top}, final {final}, {summary.records} records, "
                 f"{summary.pnr_calls} pnr calls")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
