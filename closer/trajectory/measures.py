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
    """The measures of one trajectory, one record at a time (`add`), then `result`.

    `add` is the hot loop of a million-record summary: it is one function over locals (method
    calls and attribute lookups cost more than the arithmetic), and a rollback is kept as a row
    [seq, layers, after_feedback_from, best_before, best_after, gain] that becomes a `Rollback`
    model when the summary is built."""

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
        self.rollback_rows: list[list] = []  # in call order
        self.last_feedback: ToolClass | None = None

    def add(self, rec: TrajectoryRecord | RecordView) -> None:
        # enum members are str: the counters keyed by them read back by value
        self.records += 1
        if not self.run_id:
            self.run_id = rec.run_id
        outcome = rec.outcome
        outcomes = self.outcomes
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        units = rec.cost.units
        self.cost += units
        if rec.elapsed_s > self.elapsed:
            self.elapsed = rec.elapsed_s
        best_before = self.best
        layers = rec.layers
        if layers and self.last_feedback is not None:
            self._rollback(rec.seq, layers, best_before)
        if outcome in _REFUSED:
            return
        tool = rec.tool
        by_tool = self.by_tool
        by_tool[tool] = by_tool.get(tool, 0) + 1
        reward = None
        if self.p.evaluates_full_gates(rec):
            self.full_gate_calls += 1
            reward = rec.reward
            if rec.feasible and self.first_feasible is None:
                self.first_feasible = self._here(rec)
        else:
            partial = rec.partial_reward if rec.partial_reward is not None else rec.reward
            if partial is not None and (self.best_partial is None or partial > self.best_partial):
                self.best_partial = partial
        improved = reward is not None and (best_before is None or reward > best_before)
        if reward is not None:
            self.final = reward
        ep = self.open_episode
        if ep is not None and ep.first_layers_after is None and layers and rec.seq > ep.detected_seq:
            ep.first_layers_after = list(layers)
        if improved:
            self._end_stagnation(rec, best_before, reward)
            self._improved(rec, reward)
        else:  # one more call without improvement
            if self.since_start_seq is None:
                self.since_start_seq = rec.seq
            self.since_calls += 1
            self.since_cost += units
            if ep is None and (self.since_calls >= self.p.window_calls or self.since_cost >= self.p.window_cost_units):
                self._open_episode(rec, best_before)
        if outcome in _FEEDBACK:
            self.last_feedback = tool

    def _improved(self, rec: TrajectoryRecord | RecordView, reward: float) -> None:
        self.best = reward
        self.curve.append(CurvePoint(seq=rec.seq, elapsed_s=self.elapsed, cost_units=self.cost, best=reward))
        for t, hit in self.hits.items():
            if hit is None and reward >= t:
                self.hits[t] = self._here(rec)
        if self.rollback_rows:
            row = self.rollback_rows[-1]
            row[4], row[5] = self.best, max((self.best or 0.0) - (row[3] or 0.0), 0.0)

    def _here(self, rec: TrajectoryRecord | RecordView) -> Milestone:
        return Milestone(seq=rec.seq, elapsed_s=self.elapsed, cost_units=self.cost)

    def _rollback(self, seq: int, layers: list[EditLayer], best_before: float | None) -> None:
        feedback_stage = TOOL_STAGE[self.last_feedback]
        for layer in layers:
            if LAYER_STAGE[layer] < feedback_stage:
                self.rollback_rows.append([seq, list(layers), self.last_feedback, best_before, best_before, 0.0])
                return

    def _end_stagnation(self, rec: TrajectoryRecord | RecordView, best_before: float | None,
                        reward: float) -> None:
        """The call improved the best: the open episode (if any) ends, the counts restart."""
        ep = self.open_episode
        if ep is not None:
            self._close_counts(ep)
            ep.end_seq = rec.seq
            ep.recovered = True
            ep.gain = reward - (best_before or 0.0)
            ep.breaking_layers = list(rec.layers)
            self.open_episode = None
        self.since_calls, self.since_cost, self.since_start_seq = 0, 0.0, None

    def _open_episode(self, rec: TrajectoryRecord | RecordView, best_before: float | None) -> None:
        ep = StagnationEpisode(
            start_seq=self.since_start_seq, detected_seq=rec.seq, end_seq=None, calls=self.since_calls,
            cost_units=self.since_cost, best_before=best_before, recovered=False, gain=None,
            first_layers_after=None, breaking_layers=None)
        self.episodes.append(ep)
        self.open_episode = ep

    def _close_counts(self, ep: StagnationEpisode) -> None:
        ep.calls, ep.cost_units = self.since_calls, self.since_cost

    def _rollbacks(self) -> list[Rollback]:
        # model_construct: a hundred thousand of these from checked values; validating each costs
        return [Rollback.model_construct(seq=seq, layers=layers, after_feedback_from=tool, best_before=before,
                                         best_after=after, gain=gain)
                for seq, layers, tool, before, after, gain in self.rollback_rows]

    def result(self, path: str, bad_lines: list[str]) -> TrajectorySummary:
        if self.open_episode is not None:
            self._close_counts(self.open_episode)
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
    for rec in records:
        acc.add(rec)
    return acc.result(path, bad_lines or [])
