"""Measures over a trajectory, computed in one streaming pass (a 1,000,000-record file fits).

Conventions (docs/trajectory.md):
- r*(c), the best-so-far reward, is 0 until the first record that carries a reward; it steps up
  at the end of the call that improved it (x = that record's elapsed_s on the wall axis, or the
  cumulative weighted cost including that call on the cost axis).
- AUC_B = (1/B) * integral_0^B r*(c) dc, computed exactly on the step function (rational
  arithmetic on the recorded floats; one rounding at the end).
- Refused calls cost nothing and do not advance stagnation windows, but their edits count for
  layer tracking (the snapshot is taken on every call).
- Only calls that evaluated the stage's full gate set (`SummaryParams.full_gate_tools`) are
  feasible or move r*; the estimates of the other calls are informational (`best_partial_reward`).
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from closer.budget import ToolClass
from closer.trajectory.fastrecord import RecordView
from closer.trajectory.record import LAYER_STAGE, TOOL_STAGE, EditLayer, Outcome, TrajectoryRecord

_REFUSED = frozenset(o for o in Outcome if o.refused)
_FEEDBACK = frozenset((Outcome.OK, Outcome.TOOL_ERROR, Outcome.TIMEOUT))  # outcomes that are feedback


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SummaryParams(_Model):
    wall_s: float = Field(gt=0, description="B of the wall-clock axis")
    cost_units: float = Field(gt=0, description="B of the weighted-cost axis")
    window_calls: int = Field(gt=0)
    window_cost_units: float = Field(gt=0)
    thresholds: list[Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=list)
    source: str = Field("", description="where B and the windows came from")
    full_gate_tools: dict[ToolClass, list[str]] | None = Field(None, description=(
        "tool classes whose result evaluates the stage's full gate set, each with the metric keys "
        "its record must hold; only these calls are feasible and move r*. None: every call's reward counts"))

    def evaluates_full_gates(self, rec: TrajectoryRecord | RecordView) -> bool:
        if rec.partial_reward is not None:  # the estimator already said it is not full-gate
            return False
        if self.full_gate_tools is None:
            return True
        keys = self.full_gate_tools.get(rec.tool)
        return keys is not None and all(k in rec.metrics for k in keys)


class Milestone(_Model):
    seq: int
    elapsed_s: float
    cost_units: float


class ThresholdHit(_Model):
    threshold: float
    reached: Milestone | None


class StagnationEpisode(_Model):
    start_seq: int = Field(description="first call after the last improvement")
    detected_seq: int = Field(description="call at which the window (calls or cost) was exceeded")
    end_seq: int | None = Field(description="call that improved the best again (None: never)")
    calls: int = Field(description="calls without improvement in the episode")
    cost_units: float
    best_before: float | None
    recovered: bool
    gain: float | None = Field(description="improvement of the best when the episode ended")
    first_layers_after: list[EditLayer] | None = Field(
        description="layers of the first edit after the episode was detected")
    breaking_layers: list[EditLayer] | None = Field(description="layers edited by the improving call")


class Rollback(_Model):
    seq: int
    layers: list[EditLayer] = Field(description="layers edited before this call")
    after_feedback_from: ToolClass = Field(description="tool of the feedback the edit followed")
    best_before: float | None
    best_after: float | None = Field(description="best-so-far before the next rollback (or the end)")
    gain: float = Field(description="best_after - best_before (0 when nothing improved)")


class CurvePoint(_Model):
    seq: int
    elapsed_s: float
    cost_units: float
    best: float


class TrajectorySummary(_Model):
    path: str
    run_id: str | None
    records: int
    bad_lines: list[str]
    params: SummaryParams
    final_reward: float | None = Field(description="reward of the last full-gate record that has one")
    best_reward: float | None = Field(description="best public reward of the calls that evaluated the full gate set")
    best_partial_reward: float | None = Field(
        None, description="best estimate of the other calls (informational: never feasible, not in r* or AUC)")
    full_gate_calls: int = Field(0, description="calls that ran and evaluated the stage's full gate set")
    auc_wall: float
    auc_cost: float
    elapsed_s: float
    cost_units: float
    calls_by_tool: dict[str, int] = Field(description="calls that ran (not refused), per class")
    outcomes: dict[str, int]
    pnr_calls: int
    pnr_fraction: float | None = Field(description="pnr calls / calls that ran")
    first_feasible: Milestone | None
    thresholds: list[ThresholdHit]
    stagnation: list[StagnationEpisode]
    rollbacks: list[Rollback]
    curve: list[CurvePoint] = Field(description="best-so-far steps (one per improvement)")


def auc_step(steps: list[tuple[float, float]], budget: float) -> float:
    """(1/B) * integral_0^B of the step function that is 0 before steps[0] and steps[i][1] from
    steps[i][0] on, with x clipped to [0, B]. Exact: rational arithmetic, rounded once."""
    total = Fraction(0)
    b = Fraction(budget)
    xs = [min(max(Fraction(x), Fraction(0)), b) for x, _ in steps] + [b]
    for i, (_, value) in enumerate(steps):
        width = xs[i + 1] - xs[i]
        if width > 0:
            total += Fraction(value) * width
    return float(total / b)


class Summarizer:
    """The measures of one trajectory, records added in call order (`add_all`, `add`), then `result`.

    `add_all` is the hot loop of a million-record summary: one function whose state lives in
    locals over the loop (a method call and an attribute load or store per quantity per record
    cost more than the arithmetic) and is stored back when the loop ends; `add` is `add_all` of
    one record. A rollback is kept as a dict of the `Rollback` fields and becomes a model when the
    summary is built (`_rollbacks`)."""

    def __init__(self, params: SummaryParams):
        self.p = params
        self.records = 0
        self.run_id: str | None = None
        self.cost = 0.0
        self.elapsed = 0.0
        self.best: float | None = None
        self.best_partial: float | None = None
        self.full_gate_calls = 0
        self.final: float | None = None
        self.by_tool: dict[ToolClass, int] = {}  # plain dicts: a Counter's += costs twice as much
        self.outcomes: dict[Outcome, int] = {}
        self.curve: list[CurvePoint] = []
        self.first_feasible: Milestone | None = None
        self.hits: dict[float, Milestone | None] = {t: None for t in params.thresholds}
        self.episodes: list[StagnationEpisode] = []
        self.open_episode: StagnationEpisode | None = None
        self.since_calls = 0
        self.since_cost = 0.0
        self.since_start_seq: int | None = None
        self.rollback_rows: list[dict] = []  # in call order
        self.last_feedback: ToolClass | None = None

    def add(self, rec: TrajectoryRecord | RecordView) -> None:
        self.add_all((rec,))

    def add_all(self, records: Iterable[TrajectoryRecord | RecordView]) -> None:
        p = self.p
        full_gate_tools, window_calls, window_cost = p.full_gate_tools, p.window_calls, p.window_cost_units
        outcomes, by_tool, hits = self.outcomes, self.by_tool, self.hits
        curve, episodes, rows = self.curve, self.episodes, self.rollback_rows
        count, run_id, cost, elapsed = self.records, self.run_id, self.cost, self.elapsed
        best, best_partial, final = self.best, self.best_partial, self.final
        full_gate_calls, first_feasible, ep = self.full_gate_calls, self.first_feasible, self.open_episode
        since_calls, since_cost, since_start_seq = self.since_calls, self.since_cost, self.since_start_seq
        last_feedback = self.last_feedback
        feedback_stage = None if last_feedback is None else TOOL_STAGE[last_feedback]
        try:
            for rec in records:
                # enum members are str: the counters keyed by them read back by value
                count += 1
                if not run_id:
                    run_id = rec.run_id
                outcome = rec.outcome
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
                units = rec.cost.units
                cost += units
                if rec.elapsed_s > elapsed:
                    elapsed = rec.elapsed_s
                seq = rec.seq
                best_before = best
                layers = rec.layers
                if layers and feedback_stage is not None:
                    for layer in layers:
                        if LAYER_STAGE[layer] < feedback_stage:  # an edit upstream of the last feedback
                            rows.append({"seq": seq, "layers": list(layers), "after_feedback_from": last_feedback,
                                         "best_before": best_before, "best_after": best_before, "gain": 0.0})
                            break
                if outcome in _REFUSED:
                    continue
                tool = rec.tool
                by_tool[tool] = by_tool.get(tool, 0) + 1
                reward = None
                if rec.partial_reward is None and (full_gate_tools is None or p.evaluates_full_gates(rec)):
                    full_gate_calls += 1
                    reward = rec.reward
                    if rec.feasible and first_feasible is None:
                        first_feasible = Milestone(seq=seq, elapsed_s=elapsed, cost_units=cost)
                else:
                    partial = rec.partial_reward if rec.partial_reward is not None else rec.reward
                    if partial is not None and (best_partial is None or partial > best_partial):
                        best_partial = partial
                if ep is not None and ep.first_layers_after is None and layers and seq > ep.detected_seq:
                    ep.first_layers_after = list(layers)
                if reward is not None:
                    final = reward
                if reward is not None and (best_before is None or reward > best_before):
                    if ep is not None:  # the stagnation episode ends
                        ep.calls, ep.cost_units = since_calls, since_cost
                        ep.end_seq, ep.recovered, ep.gain = seq, True, reward - (best_before or 0.0)
                        ep.breaking_layers = list(layers)
                        ep = None
                    since_calls, since_cost, since_start_seq = 0, 0.0, None
                    best = reward
                    curve.append(CurvePoint(seq=seq, elapsed_s=elapsed, cost_units=cost, best=reward))
                    for t, hit in hits.items():
                        if hit is None and reward >= t:
                            hits[t] = Milestone(seq=seq, elapsed_s=elapsed, cost_units=cost)
                    if rows:
                        row = rows[-1]
                        row["best_after"] = best
                        row["gain"] = max((best or 0.0) - (row["best_before"] or 0.0), 0.0)
                else:  # one more call without improvement
                    if since_start_seq is None:
                        since_start_seq = seq
                    since_calls += 1
                    since_cost += units
                    if ep is None and (since_calls >= window_calls or since_cost >= window_cost):
                        ep = StagnationEpisode(
                            start_seq=since_start_seq, detected_seq=seq, end_seq=None, calls=since_calls,
                            cost_units=since_cost, best_before=best_before, recovered=False, gain=None,
                            first_layers_after=None, breaking_layers=None)
                        episodes.append(ep)
                if outcome in _FEEDBACK:
                    last_feedback, feedback_stage = tool, TOOL_STAGE[tool]
        finally:  # also when the records raise (a damaged line): the state is what was added
            self.records, self.run_id, self.cost, self.elapsed = count, run_id, cost, elapsed
            self.best, self.best_partial, self.final = best, best_partial, final
            self.full_gate_calls, self.first_feasible, self.open_episode = full_gate_calls, first_feasible, ep
            self.since_calls, self.since_cost, self.since_start_seq = since_calls, since_cost, since_start_seq
            self.last_feedback = last_feedback

    def _rollbacks(self) -> list[Rollback]:
        # model_construct from checked values, every field set: one fields set shared by all of them
        # (set.add of a field name already in it changes nothing) instead of a 728-byte set each
        every_field = set(Rollback.model_fields)
        return [Rollback.model_construct(every_field, **row) for row in self.rollback_rows]

    def result(self, path: str, bad_lines: list[str]) -> TrajectorySummary:
        if self.open_episode is not None:
            self.open_episode.calls, self.open_episode.cost_units = self.since_calls, self.since_cost
        ran = sum(self.by_tool.values())
        steps_wall = [(pt.elapsed_s, pt.best) for pt in self.curve]
        steps_cost = [(pt.cost_units, pt.best) for pt in self.curve]
        return TrajectorySummary(
            path=path, run_id=self.run_id, records=self.records, bad_lines=bad_lines, params=self.p,
            final_reward=self.final, best_reward=self.best, best_partial_reward=self.best_partial,
            full_gate_calls=self.full_gate_calls,
            auc_wall=auc_step(steps_wall, self.p.wall_s), auc_cost=auc_step(steps_cost, self.p.cost_units),
            elapsed_s=self.elapsed, cost_units=self.cost,
            calls_by_tool={t.value: self.by_tool.get(t.value, 0) for t in ToolClass},
            outcomes={o.value: self.outcomes.get(o.value, 0) for o in Outcome},
            pnr_calls=self.by_tool.get(ToolClass.PNR.value, 0),
            pnr_fraction=(self.by_tool.get(ToolClass.PNR.value, 0) / ran) if ran else None,
            first_feasible=self.first_feasible,
            thresholds=[ThresholdHit(threshold=t, reached=m) for t, m in self.hits.items()],
            stagnation=self.episodes, rollbacks=self._rollbacks(), curve=self.curve,
        )


def summarize_records(records: Iterable[TrajectoryRecord], params: SummaryParams, path: str = "",
                      bad_lines: list[str] | None = None) -> TrajectorySummary:
    acc = Summarizer(params)
    acc.add_all(records)
    return acc.result(path, bad_lines or [])
