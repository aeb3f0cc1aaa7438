"""The metered public tools of a task workspace (`.closer/tools.toml` runs these):

    python -m closer.tasks.public_check sim|synth|pnr|verify --workspace W --results R --metrics M

* sim:    the public functional tests (tests/, public seeds and configs) on the workspace RTL
* synth:  `closer flow` to STA on the workspace RTL and SDC (area, power, timing)
* verify: the pristine evaluator's scoring (closer.tasks.score.score_tree) on the public
          conditions: the same gates through the same code (functional tests, the flow to STA or
          through the physical flow, LEC, gate-level simulation, closer.reward) with the public
          workload, the public physical conditions, the tree's own tests/ and the public targets
          (`.closer/public_targets.toml`). Its reward estimate is the evaluation's public_reward.
* pnr:    (kinds whose flow goes to finish) the same scoring as verify, plus the physical
          details: unrouted nets, DRC by rule, LVS, slack and DRV counts per corner, area, power;
          DEF, GDS, reports and a PNG of the layout with its DRC/LVS markers under R/pnr/.

W may be the agent's workspace or a materialized copy of it; everything is written under R and
to M. Metrics go to M (JSON) with `closer__estimate__*` (the reward estimate) for verify/pnr; a
summary goes to stdout, with a progress line as each stage starts. Failing tests or gates are
feedback (exit 0); a tool or build failure exits 1; bad input exits 2. Nothing hidden is read:
only the workspace's task.json, tests/ and control dir. The targets reach the output only as
the reward number.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from closer import metrics as mk
from closer.errors import CloserError
from closer.tasks import checks, rtl_policy
from closer.tasks.models import TaskConfig
from closer.inputs import load_json_model

if TYPE_CHECKING:  # sim and synth never score a tree: the scoring's modules are imported by verify and pnr
    from closer.tasks.score import TreeScore

ESTIMATE_SCORED = "closer__estimate__scored"
TOOLS = ("sim", "synth", "pnr", "verify")


def _task(workspace: Path) -> TaskConfig:
    path = workspace / "task.json"
    if not path.exists():
        raise CloserError(f"{path} does not exist: not a task workspace")
    return load_json_model(path, TaskConfig, "task file")


def public_sim(ws: Path, task: TaskConfig, results: Path) -> tuple[dict, list[str]]:
    sources = [ws / rel for rel in task.rtl]
    func = checks.run_functional(sources, task.top, ws / "tests", task.test_module, task.public,
                                 task.parameters, task.config, results / "sim")
    lines = [f"public functional tests: {func.tests - func.failed} of {func.tests} passed"]
    lines += [f"  {r['run']}: {r['tests'] - r['failed']}/{r['tests']} passed; results {r['results_xml']}"
              for r in func.runs]
    lines += func.errors
    return checks.func_metrics(func), lines


def public_synth(ws: Path, task: TaskConfig, results: Path) -> tuple[dict, list[str], checks.FlowOutcome]:
    folder = checks.write_design_folder(ws, task, {task.config: task.parameters[task.config]},
                                        results / "design" / task.design)
    outcome = checks.run_synthesis(folder, task, results / "flow")
    if outcome.error:
        return {}, [outcome.error], outcome
    keep = {k: v for k, v in outcome.metrics.items()
            if isinstance(v, (int, float)) and not k.startswith("run__")}
    lines = [f"synthesis: area {keep.get('synth__design__instance__area__stdcell')} um^2, "
             f"setup WS {keep.get('synth__timing__setup__ws')} ns, metadata {outcome.metadata}"]
    return keep, lines, outcome


def public_score(ws: Path, task: TaskConfig, results: Path) -> TreeScore:
    from closer.tasks.evaluate import public_conditions

    def say(line: str) -> None:
        click.echo(line)
        sys.stdout.flush()

    from closer.tasks.score import score_tree

    return score_tree(ws, task, public_conditions(task, ws), results / "score", progress=say)


def estimate_metrics(score: TreeScore) -> dict:
    from closer.tasks.estimator import ESTIMATE_FEASIBLE, ESTIMATE_REWARD

    v = score.verdict
    return {ESTIMATE_REWARD: v.reward if v.scored else None, ESTIMATE_FEASIBLE: v.feasible,
            ESTIMATE_SCORED: v.scored}


def public_metrics(score: TreeScore) -> dict:
    """The scoring's metrics an agent may see: numbers and flags, no provenance, no targets."""
    keep = {k: v for k, v in score.metrics.items()
            if not k.startswith("run__") and (v is None or isinstance(v, (bool, int, float, str)))}
    return keep | {"execution_time": derived_value(score, "execution_time")} | estimate_metrics(score)


def derived_value(score: TreeScore, metric: str) -> float | None:
    """A derived metric's value as the reward library computed it (never its target)."""
    for term in ((score.verdict.reward_result or {}).get("terms") or {}).values():
        if term.get("metric") == metric:
            return term.get("value")
    return None


def verify_lines(score: TreeScore) -> list[str]:
    v = score.verdict
    lines = [f"public functional tests: {score.func.tests - score.func.failed} of {score.func.tests} passed",
             *score.func.errors]
    if score.gls.tests:
        lines.append(f"gate-level tests: {score.gls.tests - score.gls.failed} of {score.gls.tests} passed")
    lines += score.gls.errors
    if score.flow_error:
        lines.append(f"flow: {score.flow_error}")
    m = score.metrics
    if m.get("closer__lec__result") is not None:
        lines.append(f"LEC: {m['closer__lec__result']}")
    lines.append("gates: " + (", ".join(f"{g} {s}" for g, s in v.gates.items()) or "none measured"))
    from closer.tasks.score import public_reasons

    lines += [f"  {r}" for r in public_reasons(v)]
    if v.scored:
        lines.append(f"reward estimate (public conditions): {v.reward:.6g}; feasible: {v.feasible}")
    else:
        lines.append(f"reward estimate: none ({v.verifier_error})")
    return lines


def _num(value, fmt: str = "{:.4g}") -> str:
    return "n/a" if value is None else fmt.format(value) if isinstance(value, (int, float)) else str(value)


OFFICIAL_SUMMARY_KEYS = ("errors", "rules", "wall_s")


def pnr_lines(score: TreeScore, task: TaskConfig, outputs: dict[str, Path]) -> list[str]:
    m = score.metrics
    lines = [f"unrouted nets: {_num(m.get('closer__route__unrouted_nets'))}"]
    drc = {k.removeprefix("closer__signoff__drc__"): v for k, v in m.items()
           if k.startswith("closer__signoff__drc__") and k != "closer__signoff__drc__errors" and v}
    lines.append(f"DRC errors: {_num(m.get('closer__signoff__drc__errors'))}"
                 + (" (" + ", ".join(f"{r} {n}" for r, n in sorted(drc.items())) + ")" if drc else ""))
    official = {k.removeprefix("closer__signoff__official_drc__"): v for k, v in m.items()
                if k.startswith("closer__signoff__official_drc__") and k.rsplit("__", 1)[1] not in OFFICIAL_SUMMARY_KEYS}
    lines.append(f"official DRC (sky130A_mr.drc) errors: {_num(m.get('closer__signoff__official_drc__errors'))}"
                 + (" (" + ", ".join(f"{r} {n}" for r, n in sorted(official.items())) + ")" if official else ""))
    lines.append(f"antenna: {_num(m.get('detailedroute__antenna__violating__nets'))} violating nets, "
                 f"{_num(m.get('detailedroute__antenna_diodes_count'))} diodes")
    lines.append(f"LVS: {'clean' if m.get('closer__signoff__lvs__clean') else 'not clean'}: "
                 f"opens {_num(m.get('closer__signoff__lvs__opens'))}, shorts {_num(m.get('closer__signoff__lvs__shorts'))}")
    corners = task.public.physical.corners if task.public.physical else []
    for corner in corners:
        lines.append(f"corner {corner}: setup WS {_num(m.get(f'finish__timing__setup__ws__corner__{corner}'))} ns, "
                     f"hold WS {_num(m.get(f'finish__timing__hold__ws__corner__{corner}'))} ns, "
                     f"max-slew {_num(m.get(f'finish__timing__drv__max_slew__corner__{corner}'))}, "
                     f"max-cap {_num(m.get(f'finish__timing__drv__max_cap__corner__{corner}'))}, "
                     f"power {_num(m.get(f'closer__power__total__{corner}__spef'))} W")
    lines.append("TNS: not reported by the physical flow's STA (worst slack per corner above)")
    lines.append(f"area: {_num(m.get('finish__design__instance__area'))} um^2 "
                 f"(utilization {_num(m.get('finish__design__instance__utilization'))}); "
                 f"power (signoff corner): {_num(m.get('finish__power__total'))} W; "
                 f"execution time: {_num(derived_value(score, 'execution_time'))} ns")
    lines += [f"{what}: {path}" for what, path in outputs.items()]
    return lines


def pnr_outputs(score: TreeScore, task: TaskConfig, results: Path) -> dict[str, Path]:
    """DEF, GDS, DRC/LVS/STA reports and the layout PNG, copied from the flow to results/pnr/."""
    from closer.flow.paths import FlowPaths
    from closer.tasks import layout_png

    if score.flow_dir is None:
        return {}
    node = FlowPaths(score.flow_dir, task.design).node_dir("pnr")
    phys = node / "phys"
    dest = results / "pnr"
    dest.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for what, src in (("DEF", node / "outputs" / f"{task.top}.def"), ("GDS", node / "outputs" / f"{task.top}.gds"),
                      ("SPEF", phys / f"{task.top}.spef"), ("steps", phys / "steps.json")):
        if src.is_file():
            shutil.copyfile(src, dest / src.name)
            out[what] = dest / src.name
    for sub in ("drc", "signoff_drc", "antenna", "lvs", "sta"):
        if (phys / sub).is_dir():
            shutil.copytree(phys / sub, dest / sub, dirs_exist_ok=True)
            out[f"{sub.upper()} reports"] = dest / sub
    if "GDS" in out:
        lvs_json = dest / "lvs" / "lvs.json"
        lvs = json.loads(lvs_json.read_text()) if lvs_json.is_file() else {}
        points = layout_png.instance_origins(out["DEF"], layout_png.lvs_instances(lvs)) if "DEF" in out else []
        try:
            out["layout PNG"] = layout_png.render(out["GDS"], dest / f"{task.top}.png",
                                                  layout_png.drc_boxes(dest / "drc" / "drc.lyrdb"), points)
        except Exception as exc:  # the picture is a convenience: its failure must not lose the result
            click.echo(f"layout PNG not written: {type(exc).__name__}: {exc}")
    return out


@click.command()
@click.argument("tool", type=click.Choice(TOOLS), required=False)
@click.option("--workspace", type=click.Path(file_okay=False, path_type=Path))
@click.option("--results", type=click.Path(file_okay=False, path_type=Path))
@click.option("--metrics", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--version", "show_version", is_flag=True)
def main(tool: str | None, workspace: Path | None, results: Path | None, metrics: Path | None,
         show_version: bool) -> None:
    if show_version:
        from closer.tasks.public_versions import line  # what the tools.toml `version` command prints

        click.echo(line(tool or ""))
        return
    if tool is None or workspace is None or results is None or metrics is None:
        raise click.UsageError("need TOOL, --workspace, --results and --metrics")
    ws = workspace.resolve()
    task = _task(ws)
    if tool == "pnr" and task.flow_to != "finish":
        raise CloserError(f"{ws / 'task.json'}: flow_to is {task.flow_to!r}: this task has no physical flow (no pnr)")
    results = results.resolve()
    results.mkdir(parents=True, exist_ok=True)
    violations = rtl_policy.check_tree(ws, task.rtl, task.edit_surface)
    if violations:  # nothing of the agent's RTL runs in a tool before it passes the policy
        metrics.write_text(json.dumps({RTL_VIOLATIONS: len(violations)}, indent=1) + "\n")
        click.echo("RTL policy (docs/security.md): the RTL is not run:\n" +
                   "\n".join(f"  {v}" for v in violations))
        sys.exit(1)
    out, lines, failed_tool = run_tool(tool, ws, task, results)
    metrics.write_text(json.dumps(out, indent=1, sort_keys=True, default=str) + "\n")
    click.echo("\n".join(lines))
    sys.exit(1 if failed_tool else 0)


RTL_VIOLATIONS = "closer__rtl__policy_violations"


def run_tool(tool: str, ws: Path, task: TaskConfig, results: Path) -> tuple[dict, list[str], bool]:
    if tool == "sim":
        m, text = public_sim(ws, task, results)
        return m, text, False
    if tool == "synth":
        m, text, outcome = public_synth(ws, task, results)
        return m | {mk.FLOW_REUSED: int(outcome.reused is not None)}, text, outcome.error is not None
    score = public_score(ws, task, results)
    lines = verify_lines(score)
    if tool == "pnr":
        lines = pnr_lines(score, task, pnr_outputs(score, task, results)) + lines
    # a flow that did not run to its end is a tool failure unless the func gate stopped it first
    failed = score.flow is not None and score.flow.error is not None
    reused = score.flow is not None and score.flow.reused is not None
    return public_metrics(score) | {mk.FLOW_REUSED: int(reused)}, lines, failed


if __name__ == "__main__":
    try:
        main(standalone_mode=True)
    except CloserError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
