"""Measures on hand-made trajectories: exact AUC on both axes, milestones, stagnation, rollbacks;
and the summarize/plot commands."""

from __future__ import annotations

import json
import random
from fractions import Fraction

import pytest
from click.testing import CliRunner

from closer.cli import cli
from closer.trajectory.measures import Summarizer, SummaryParams, auc_step, summarize_records
from closer.trajectory.record import EditLayer
from tests.metered_helpers import make_record, write_trajectory

R = make_record


def params(**kw) -> SummaryParams:
    base = dict(wall_s=100.0, cost_units=10.0, window_calls=3, window_cost_units=100.0)
    return SummaryParams(**(base | kw))


HAND = [
    R(1, "sim", reward=0.25, elapsed_s=10, units=1),
    R(2, "synth", reward=0.1, elapsed_s=20, units=5),          # worse: no step
    R(3, "sim", reward=0.5, elapsed_s=40, units=1, feasible=True),
    R(4, "pnr", elapsed_s=50, outcome="refused_budget"),       # costs nothing
    R(5, "sim", reward=0.75, elapsed_s=80, units=2),
]


def test_exact_auc_on_both_axes():
    s = summarize_records(HAND, params())
    # wall: 0 on [0,10), .25 on [10,40), .5 on [40,80), .75 on [80,100]  -> 42.5 / 100
    assert s.auc_wall == 0.425
    # cost: cumulative 1, 6, 7, 7, 9 -> .25 on [1,7), .5 on [7,9), .75 on [9,10] -> 3.25 / 10
    assert s.auc_cost == 0.325
    assert (s.final_reward, s.best_reward, s.cost_units, s.elapsed_s) == (0.75, 0.75, 9.0, 80.0)
    assert [(p.seq, p.best) for p in s.curve] == [(1, 0.25), (3, 0.5), (5, 0.75)]


def test_auc_is_exact_rational_and_clipped_at_b():
    third = 1 / 3
    assert auc_step([(0.0, third)], 3.0) == float(Fraction(third))
    # steps past B do not count; a step at 0 covers everything
    assert auc_step([(0.0, 0.5), (150.0, 1.0)], 100.0) == 0.5
    assert auc_step([], 10.0) == 0.0
    # 0.1 + 0.2 style float noise does not creep in: one rounding at the end
    steps = [(0.1 * i, 0.1 * i) for i in range(1, 10)]
    exact = sum(Fraction(0.1 * i) * (Fraction(0.1 * (i + 1)) - Fraction(0.1 * i)) for i in range(1, 9))
    exact += Fraction(0.9) * (Fraction(1.0) - Fraction(0.1 * 9))
    assert auc_step(steps, 1.0) == float(exact)


def test_final_differs_from_best_and_no_reward_gives_zero():
    s = summarize_records([R(1, reward=0.9, elapsed_s=5), R(2, reward=0.2, elapsed_s=6)], params())
    assert (s.final_reward, s.best_reward) == (0.2, 0.9)
    empty = summarize_records([R(1, elapsed_s=5, outcome="tool_error")], params())
    assert (empty.best_reward, empty.auc_wall, empty.auc_cost, empty.first_feasible) == (None, 0.0, 0.0, None)


def test_milestones_and_pnr_fraction():
    s = summarize_records(HAND, params(thresholds=[0.5, 0.6, 0.99]))
    assert s.first_feasible.seq == 3 and s.first_feasible.elapsed_s == 40 and s.first_feasible.cost_units == 7
    hits = {h.threshold: h.reached for h in s.thresholds}
    assert hits[0.5].seq == 3 and hits[0.6].seq == 5 and hits[0.6].cost_units == 9 and hits[0.99] is None
    assert s.pnr_calls == 0 and s.pnr_fraction == 0.0        # the pnr call was refused
    assert s.outcomes["refused_budget"] == 1 and s.calls_by_tool["sim"] == 3
    with_pnr = summarize_records(HAND[:3] + [R(4, "pnr", elapsed_s=50, units=25)], params())
    assert with_pnr.pnr_calls == 1 and with_pnr.pnr_fraction == 0.25


def test_stagnation_episode_by_calls_and_recovery():
    recs = [
        R(1, reward=0.5), R(2, reward=0.4), R(3, reward=0.4),
        R(4, reward=0.5),                                       # equal is not an improvement
        R(5, reward=0.3, layers=["constraint"]),
        R(6, reward=0.8, layers=["rtl"]),                       # breaks the episode
        R(7, reward=0.1), R(8, reward=0.2),                     # 2 calls: below W = 3
    ]
    s = summarize_records(recs, params())
    assert len(s.stagnation) == 1
    e = s.stagnation[0]
    assert (e.start_seq, e.detected_seq, e.end_seq, e.calls) == (2, 4, 6, 4)
    assert e.recovered and e.gain == pytest.approx(0.3) and e.best_before == 0.5
    assert e.first_layers_after == [EditLayer.CONSTRAINT] and e.breaking_layers == [EditLayer.RTL]


def test_stagnation_by_cost_window_unrecovered():
    recs = [R(1, "sim", reward=0.5), R(2, "pnr", reward=0.2, units=25), R(3, "sim", reward=0.1)]
    s = summarize_records(recs, params(window_calls=50, window_cost_units=20))
    assert [(e.start_seq, e.detected_seq, e.end_seq, e.recovered, e.cost_units) for e in s.stagnation] == \
        [(2, 2, None, False, 26.0)]


def test_cross_stage_rollbacks_and_their_gain():
    recs = [
        R(1, "sim", reward=0.2),
        R(2, "synth", reward=0.3),
        R(3, "sim", reward=0.25, layers=["rtl"]),               # rtl edit after synth feedback
        R(4, "synth", reward=0.6),
        R(5, "pnr", reward=0.6, units=25),
        R(6, "synth", reward=0.5, layers=["constraint"]),       # constraint edit after pnr feedback
        R(7, "pnr", reward=0.55, layers=["floorplan"], units=25),  # after synth: same-or-later stage
        R(8, "sim", reward=0.1, layers=["rtl"], outcome="refused_budget"),  # refused, but an rtl edit after pnr
    ]
    s = summarize_records(recs, params())
    got = [(r.seq, [x.value for x in r.layers], r.after_feedback_from.value, r.best_before, r.best_after, r.gain)
           for r in s.rollbacks]
    assert got == [
        (3, ["rtl"], "synth", 0.3, 0.6, pytest.approx(0.3)),
        (6, ["constraint"], "pnr", 0.6, 0.6, 0.0),
        (8, ["rtl"], "pnr", 0.6, 0.6, 0.0),
    ]


def _varied(n: int = 400, seed: int = 7) -> list:
    """Records that take every branch of the summarizer: refusals, errors, partial estimates,
    metrics a full-gate rule reads, edits of every layer, improvements and long stalls."""
    rng = random.Random(seed)
    out, elapsed = [], 0.0
    for seq in range(1, n + 1):
        tool = rng.choice(["sim", "synth", "pnr", "verify"])
        outcome = rng.choices(["ok", "tool_error", "refused_budget", "timeout"], [80, 10, 7, 3])[0]
        elapsed += rng.uniform(0, 5)
        reward = round(rng.random() * seq / n, 3) if outcome == "ok" and rng.random() < 0.7 else None
        layers = sorted(rng.sample(["rtl", "constraint", "floorplan", "flow"], k=rng.choice([0, 0, 1, 2])))
        rec = R(seq, tool, reward=reward, elapsed_s=elapsed, units=rng.choice([1.0, 5.0, 25.0]), outcome=outcome,
                layers=layers, feasible=None if reward is None else reward > 0.3)
        if reward is not None and rng.random() < 0.1:
            rec = rec.model_copy(update={"partial_reward": reward, "reward": None})
        if rng.random() < 0.5:
            rec = rec.model_copy(update={"metrics": {"pnr__area": 1.0}})
        out.append(rec)
    return out


@pytest.mark.parametrize("full_gate_tools", [None, {"pnr": ["pnr__area"], "sim": []}])
def test_add_all_in_pieces_one_by_one_and_in_one_pass_agree(full_gate_tools):
    """add_all keeps its state in locals over the loop: what it stores back must be what the next
    call starts from, whatever the split."""
    recs = _varied()
    p = params(window_calls=4, window_cost_units=30.0, thresholds=[0.2, 0.5], full_gate_tools=full_gate_tools)
    whole = summarize_records(recs, p)
    assert whole.rollbacks and whole.stagnation and whole.best_partial_reward is not None
    assert any(e.recovered for e in whole.stagnation) and any(r.gain > 0 for r in whole.rollbacks)
    one_by_one, pieces = Summarizer(p), Summarizer(p)
    for rec in recs:
        one_by_one.add(rec)
    for start in range(0, len(recs), 37):
        pieces.add_all(iter(recs[start:start + 37]))
    assert one_by_one.result("", []) == whole == pieces.result("", [])
    # the agreement is not vacuous: the best call's reward taken away changes the summary
    top = max(range(len(recs)), key=lambda i: recs[i].reward if recs[i].reward is not None else -1.0)
    worse = recs[:top] + [recs[top].model_copy(update={"reward": 0.0, "feasible": False})] + recs[top + 1:]
    assert summarize_records(worse, p) != whole


def test_add_all_keeps_what_it_added_when_the_records_raise():
    recs = _varied(60)
    p = params(window_calls=4, window_cost_units=30.0)

    def damaged():
        yield from recs[:25]
        raise ValueError("line 26 is damaged")

    acc = Summarizer(p)
    with pytest.raises(ValueError):
        acc.add_all(damaged())
    assert acc.records == 25
    acc.add_all(recs[25:])
    assert acc.result("", []) == summarize_records(recs, p)


def test_summarize_and_plot_commands(tmp_path):
    path = write_trajectory(tmp_path / "t.jsonl", HAND)
    runner = CliRunner()
    out = runner.invoke(cli, ["trajectory", "summarize", str(path), "--json", "--wall-budget-s", "100",
                              "--cost-budget", "10", "--threshold", "0.5"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["auc_wall"] == 0.425 and data["auc_cost"] == 0.325
    assert data["params"]["source"].startswith("tier low (budgets.toml) with wall_s=100")
    text = runner.invoke(cli, ["trajectory", "summarize", str(path), "--tier", "medium"])
    assert text.exit_code == 0 and "36000" in text.output
    png = tmp_path / "curve.png"
    plot = runner.invoke(cli, ["trajectory", "plot", str(path), "--out", str(png), "--wall-budget-s", "100",
                               "--cost-budget", "10", "--threshold", "0.6"])
    assert plot.exit_code == 0, plot.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_summarize_reports_torn_line(tmp_path):
    path = write_trajectory(tmp_path / "t.jsonl", HAND)
    with open(path, "ab") as f:
        f.write(HAND[0].model_dump_json().encode()[:30])
    out = CliRunner().invoke(cli, ["trajectory", "summarize", str(path), "--json"])
    data = json.loads(out.output)
    assert data["records"] == 5 and len(data["bad_lines"]) == 1 and "t.jsonl:6: torn last line" in data["bad_lines"][0]
