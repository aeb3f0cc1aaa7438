"""Best-so-far curves of the report: one figure per task, wall clock and cost side by side, the
public estimate as a wide translucent band and the hidden reward (from rescore.json) as a thin
dashed line on top, one color and marker per
trial. Trials are drawn with a small vertical offset each so that equal curves stay visible
(the caption says so; the tables hold the exact numbers)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from closer.report.build import TrialView  # noqa: E402
from closer.tasks.runner import feasible_label  # noqa: E402

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
OFFSET = 0.015  # reward units between neighbouring trials


def _steps(points: list[dict], x_key: str, end: float) -> tuple[list[float], list[float]]:
    xs, ys = [0.0], [0.0]
    for p in points:
        xs.append(p[x_key])
        ys.append(p["best"])
    xs.append(max(end, xs[-1]))
    ys.append(ys[-1])
    return xs, ys


def _public(t: TrialView) -> list[dict]:
    curve = t.public("curve_public")
    return [p if isinstance(p, dict) else p.model_dump() for p in curve]


def _extent(trials: list[TrialView], x_key: str) -> float:
    xs = [p[x_key] for t in trials for p in _public(t)]
    if x_key == "elapsed_s":
        xs += [t.record.agent_wall_s for t in trials]
    for t in trials:
        if t.rescore is not None:
            xs += [getattr(c, x_key) for c in t.rescore.calls]
    return max(xs + [1.0])


def _draw(ax, t: TrialView, index: int, offset: float, x_key: str, end: float) -> None:
    color = plt.get_cmap("tab10")(index % 10)
    marker = MARKERS[index % len(MARKERS)]
    # public: a wide translucent band underneath; hidden: a thin dashed line on top, so a hidden
    # curve equal to the public one still shows as a dashed line inside the band
    xs, ys = _steps(_public(t), x_key, end)
    ax.step(xs, [y + offset for y in ys], where="post", color=color, linewidth=5, alpha=0.35,
            label=f"{t.label} #{t.record.trial} public")
    ax.plot(xs[1:-1], [y + offset for y in ys[1:-1]], marker, color=color, markersize=9, alpha=0.5)
    if t.rescore is None:
        return
    hidden = [p.model_dump() for p in t.rescore.curve_hidden]
    hx, hy = _steps(hidden, x_key, end)
    ax.step(hx, [y + offset for y in hy], where="post", color=color, linewidth=1.4, linestyle=(0, (4, 2)),
            label=f"{t.label} #{t.record.trial} hidden")
    ax.plot(hx[1:-1], [y + offset for y in hy[1:-1]], marker, color="black", markersize=5, fillstyle="none")


def plot_task(task: str, trials: list[TrialView], path: Path) -> Path:
    fig, (ax_wall, ax_cost) = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    n = len(trials)
    for ax, x_key, label in ((ax_wall, "elapsed_s", "wall clock since run start (s)"),
                             (ax_cost, "cost_units", "weighted tool cost (units)")):
        end = _extent(trials, x_key) * 1.04
        for i, t in enumerate(trials):
            _draw(ax, t, i, (i - (n - 1) / 2) * OFFSET, x_key, end)
        ax.set_xlim(0, end)
        ax.set_xlabel(label)
        ax.set_ylim(-0.08, 1.08)
        ax.grid(alpha=0.3)
    ax_wall.set_ylabel("best so far")
    outcome = "; ".join(f"#{t.record.trial} {t.record.agent}: reward {t.record.reward}, "
                        f"feasible {feasible_label(t.record)}" for t in trials)
    fig.suptitle(f"{task}: public estimate (wide band) and hidden reward (dashed)\n{outcome}", fontsize=10)
    handles, labels = ax_wall.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8, frameon=False)
    fig.text(0.99, 0.01, f"trials offset by {OFFSET:g} each for visibility", ha="right", fontsize=7,
             color="grey")
    fig.tight_layout(rect=(0, 0.1 + 0.04 * (len(labels) // 5), 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_curves(trials: list[TrialView], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for task in sorted({t.record.task_id for t in trials}):
        group = [t for t in trials if t.record.task_id == task]
        written.append(plot_task(task, group, out / f"{task}.png"))
    return written
