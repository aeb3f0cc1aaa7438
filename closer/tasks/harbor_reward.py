"""`python -m closer.tasks.harbor_reward EVALUATION OUT --evaluate-exit N`: Harbor's reward file.

Harbor reads `reward.json` as a dict of finite numbers, so the verifier writes the reward, whether
the run was scored and accepted, one `gate__<name>` per measured gate (1 pass, 0 fail) and every
finite numeric raw metric; why a reward is below 1 goes to `reason.txt` beside it. A missing or invalid
evaluation record is a reward of 0 with its reason, never a missing reward file.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import click

from closer.errors import CloserError
from closer.inputs import load_json_model
from closer.tasks.evaluate import EvaluationRecord

REWARD_FILE = "reward.json"
REASON_FILE = "reason.txt"


def reward_json(evaluation: dict) -> dict[str, float]:
    """Harbor's reward.json: a dict of finite numbers. reward is 0 when the run was not scored."""
    out: dict[str, float] = {"reward": float(evaluation.get("reward") or 0.0),
                             "scored": 1.0 if evaluation.get("scored") else 0.0,
                             "accepted": 1.0 if evaluation.get("accepted") else 0.0}
    for gate, status in (evaluation.get("gates") or {}).items():
        if status in ("pass", "fail"):
            out[f"gate__{gate}"] = 1.0 if status == "pass" else 0.0
    for key, value in (evaluation.get("metrics") or {}).items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[key] = float(value)
    return out


def below_one_reason(record: EvaluationRecord, evaluate_exit: int) -> str | None:
    """Why a record's reward is below 1 (None when it is 1)."""
    if record.reward is not None and record.reward >= 1.0:
        return None
    if record.verifier_error:
        return record.verifier_error
    if record.reasons:
        return "; ".join(record.reasons)
    if record.failing_gates:
        return "failing gates: " + ", ".join(record.failing_gates)
    return f"reward {record.reward} (closer evaluate exited {evaluate_exit})"


def write_reward(evaluation: Path, out: Path, evaluate_exit: int) -> dict[str, float]:
    try:
        record = load_json_model(evaluation, EvaluationRecord, "evaluation record")
    except CloserError as exc:
        rewards = reward_json({})
        reason: str | None = f"closer evaluate exited {evaluate_exit} without a valid record: {exc}"
    else:
        rewards = reward_json(record.model_dump(mode="json"))
        reason = below_one_reason(record, evaluate_exit)
    out.mkdir(parents=True, exist_ok=True)
    if reason:
        (out / REASON_FILE).write_text(reason + "\n")
    partial = out / (REWARD_FILE + ".partial")
    partial.write_text(json.dumps(rewards, indent=1, allow_nan=False) + "\n")
    partial.replace(out / REWARD_FILE)
    return rewards


@click.command()
@click.argument("evaluation", type=click.Path(path_type=Path))  # a damaged one is reward 0, not a usage error
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--evaluate-exit", type=int, default=0, help="exit status of `closer evaluate` (named in the reason)")
def main(evaluation: Path, out: Path, evaluate_exit: int) -> None:
    """Write OUT/reward.json (and OUT/reason.txt when the reward is below 1) from EVALUATION."""
    rewards = write_reward(evaluation, out, evaluate_exit)
    click.echo(f"reward {rewards['reward']} -> {out / REWARD_FILE}")


if __name__ == "__main__":
    sys.exit(main())
