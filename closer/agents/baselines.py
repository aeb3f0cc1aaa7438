"""The machinery baselines, run as agent processes inside a task workspace:

    python -m closer.agents.baselines null   --workspace W              changes nothing (the floor)
    python -m closer.agents.baselines oracle --workspace W --solution S copies the reference solution
    python -m closer.agents.baselines sweep  --workspace W [--solution S] scripted closure policy

They call the metered tools through `closer-tool` on PATH, like any agent. The sweep:

* tasks without a physical flow (A): tries clock-period and floorplan settings with
  `closer-tool synth`, keeps the best that meets timing with the smallest area, then verifies;
* tasks with `closer-tool pnr` (B, C): a closure loop. Each pnr result (its metrics.json: gates,
  unrouted nets, DRC, LVS, hold slack, max-slew/max-cap, the reward estimate) picks the next
  settings (`closure_step`): max-slew/max-cap violations get a denser core (shorter wires: the
  flow has no buffering or sizing to set), a congested or dirty layout a lower utilization, and
  either more router passes and repair rounds; a failing functional/LEC/GLS gate or hold slack
  stops the loop (no setting fixes RTL; the flow has no hold fixing). It stops at the first feasible result or when the pnr budget refuses, restores the best
  result's settings and verifies.
* task C: the workspace RTL is a skeleton no setting can close, so the runner gives the sweep the
  reference solution and it copies only its RTL (the files of the edit surface's `rtl` layer)
  before the closure loop: on C it is a physical-closure baseline over the reference RTL, not a
  design agent. It never reads the solution on A or B.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from dataclasses import dataclass, replace

import click
import tomli_w

REFUSED = (10, 11)


def tool(ws: Path, *args: str) -> int:
    done = subprocess.run(["closer-tool", *args], cwd=ws)
    return done.returncode


@click.group()
def main() -> None:
    """Machinery baselines."""


@main.command("null")
@click.option("--workspace", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
def null_agent(workspace: Path) -> None:
    """Change nothing; one status call (free) so the run is visible in the trajectory tools."""
    tool(workspace, "status")


@main.command("oracle")
@click.option("--workspace", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option("--solution", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
def oracle_agent(workspace: Path, solution: Path) -> None:
    """Copy the reference solution onto the workspace, then run the public verifier once."""
    copy_solution(solution, workspace)
    code = tool(workspace, "verify")
    sys.exit(0 if code in (0, *REFUSED) else code)


def copy_solution(solution: Path, workspace: Path, patterns: list[str] | None = None) -> list[str]:
    """Copy the solution's files onto the workspace (only those matching `patterns`, edit-surface
    patterns, when given); returns the copied relative paths."""
    from closer.tasks.paths import in_surface

    copied = []
    for src in sorted(p for p in solution.rglob("*") if p.is_file()):
        rel = src.relative_to(solution).as_posix()
        if patterns is not None and not in_surface(rel, patterns):
            continue
        dest = workspace / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        copied.append(rel)
    return copied


def _sdc_period(text: str) -> float:
    match = re.search(r"create_clock\b.*?-period\s+([0-9.]+)", text)
    if match is None:
        raise click.ClickException("sweep: no create_clock -period in the SDC")
    return float(match.group(1))


def _set_period(text: str, period: float) -> str:
    return re.sub(r"(create_clock\b.*?-period\s+)([0-9.]+)", lambda m: f"{m.group(1)}{period:g}", text, count=1)


def _set_toml_number(path: Path, key: str, value: float) -> None:
    text = path.read_text()
    path.write_text(re.sub(rf"(?m)^({re.escape(key)}\s*=\s*)[0-9.]+", lambda m: f"{m.group(1)}{value:g}", text))


def _last_metrics(ws: Path, tool: str = "synth") -> dict:
    results = sorted((ws / "results").glob(f"*_{tool}"), key=lambda p: int(p.name.split("_")[0]))
    if not results:
        return {}
    path = results[-1] / "metrics.json"
    return json.loads(path.read_text()) if path.is_file() else {}


@dataclass(frozen=True)
class Settings:
    """The settings the closure loop moves: floorplan, routing and synthesis (flow/settings.toml
    keys of closer.flow.settings.SynthSettings; defaults as declared there)."""

    core_utilization: float
    router_passes: int
    repair_rounds: int
    synth_buffering: bool = True
    synth_sizing: bool = True
    max_fanout: int = 7
    synth_delay_margin: float = 0.3
    synth_strategy: str = "balanced"

    def write(self, ws: Path) -> None:
        floorplan, flow = ws / "floorplan" / "floorplan.toml", ws / "flow" / "settings.toml"
        _set_toml_number(floorplan, "core_utilization", self.core_utilization)
        for key in ("router_passes", "repair_rounds", *SYNTH_KEYS):
            _set_toml_value(flow, key, getattr(self, key))


SYNTH_KEYS = ("synth_buffering", "synth_sizing", "max_fanout", "synth_delay_margin", "synth_strategy")
MIN_UTILIZATION, MAX_UTILIZATION = 0.12, 0.6
MIN_FANOUT, MAX_MARGIN = 3, 0.6
RTL_GATES = ("func", "lec", "gls")  # failures no physical setting can fix


def _set_toml_value(path: Path, key: str, value: bool | int | float | str) -> None:
    """`key = value` in a flat TOML file: the line replaced where the key is, else appended."""
    literal = tomli_w.dumps({key: value}).strip()
    text = path.read_text()
    pattern = rf"(?m)^{re.escape(key)}\s*=.*$"
    if re.search(pattern, text):
        path.write_text(re.sub(pattern, lambda _m: literal, text, count=1))
    else:
        path.write_text(text + ("" if text.endswith("\n") or not text else "\n") + literal + "\n")


def read_settings(ws: Path) -> Settings:
    import tomllib

    fp = tomllib.loads((ws / "floorplan" / "floorplan.toml").read_text())
    fl = tomllib.loads((ws / "flow" / "settings.toml").read_text())
    synth = {k: fl[k] for k in SYNTH_KEYS if k in fl}
    return Settings(fp.get("core_utilization", 0.30), fl.get("router_passes", 15), fl.get("repair_rounds", 8),
                    **synth)


def failing_gates(metrics: dict) -> list[str]:
    """The gates a pnr result shows failing, from its public metrics."""
    def nonzero(key: str) -> bool:
        return bool(metrics.get(key))

    out = []
    if nonzero("closer__func__tests_failed"):
        out.append("func")
    if metrics.get("closer__lec__result") not in (None, "equivalent"):
        out.append("lec")
    if nonzero("closer__gls__tests_failed"):
        out.append("gls")
    if nonzero("closer__route__unrouted_nets") or nonzero("detailedroute__route__drc_errors"):
        out.append("route")
    if nonzero("closer__signoff__drc_errors"):
        out.append("drc")
    if nonzero("closer__signoff__lvs_errors"):
        out.append("lvs")
    if nonzero("detailedroute__antenna__violating__nets"):
        out.append("antenna")
    if _drv_violations(metrics) or _negative(metrics, "finish__timing__hold__ws"):
        out.append("sta")  # setup is not a gate: the reward scores it
    return out


def closure_step(current: Settings, metrics: dict) -> Settings | None:
    """The next settings to try after a pnr result, or None when no setting can help.

    max-slew/max-cap: buffering and sizing on, then a smaller max fanout, then a denser core
    (shorter wires); setup: sizing on, then a larger delay margin for ABC, then the delay
    strategy (also on a feasible result: setup is scored); a dirty layout: a sparser core and
    more repair rounds; hold: nothing (no hold repair in the flow)."""
    failing = failing_gates(metrics)
    if not metrics or not (failing or _setup_violated(metrics)) or any(g in RTL_GATES for g in failing):
        return None
    dirty = bool({"route", "drc", "lvs", "antenna"} & set(failing))
    nxt = replace(current, router_passes=15,
                  repair_rounds=min(64, max(current.repair_rounds, 8) * 2) if dirty else current.repair_rounds)
    if _drv_violations(metrics):
        nxt = _fix_drv(nxt)
    elif _setup_violated(metrics):
        nxt = _fix_setup(nxt)
    elif dirty:
        nxt = replace(nxt, core_utilization=round(max(MIN_UTILIZATION, current.core_utilization * 0.75), 3))
    else:
        return None  # hold: the flow has no hold fixing
    return None if nxt == current else nxt


def _fix_drv(s: Settings) -> Settings:
    if not (s.synth_buffering and s.synth_sizing):
        return replace(s, synth_buffering=True, synth_sizing=True)
    if s.max_fanout > MIN_FANOUT:
        return replace(s, max_fanout=max(MIN_FANOUT, s.max_fanout - 2))
    return replace(s, core_utilization=round(min(MAX_UTILIZATION, s.core_utilization * 1.4), 3))


def _fix_setup(s: Settings) -> Settings:
    if not s.synth_sizing:
        return replace(s, synth_sizing=True)
    if s.synth_delay_margin < MAX_MARGIN:
        return replace(s, synth_delay_margin=round(min(MAX_MARGIN, s.synth_delay_margin + 0.1), 3))
    return replace(s, synth_strategy="delay")


def _negative(metrics: dict, base: str) -> bool:
    return any(v is not None and v < 0 for k, v in metrics.items() if k.startswith(base))


def _setup_violated(metrics: dict) -> bool:
    return _negative(metrics, "finish__timing__setup__ws")


def _drv_violations(metrics: dict) -> bool:
    return any(v for k, v in metrics.items()
               if k.startswith(("finish__timing__drv__max_slew", "finish__timing__drv__max_cap")))


def _estimate(metrics: dict) -> tuple[bool, float]:
    return bool(metrics.get("closer__estimate__feasible")), float(metrics.get("closer__estimate__reward") or 0.0)


def closure_sweep(ws: Path, max_calls: int) -> None:
    """pnr -> read the result -> next settings, until feasible, hopeless or out of budget."""
    settings = read_settings(ws)
    best: tuple[tuple[bool, float], Settings] | None = None
    for _ in range(max_calls):
        settings.write(ws)
        code = tool(ws, "pnr")
        if code in REFUSED:
            break
        metrics = _last_metrics(ws, "pnr")
        key = _estimate(metrics)
        if best is None or key > best[0]:
            best = (key, settings)
        click.echo(f"sweep: {settings}: feasible {key[0]}, estimate {key[1]:.4g}, failing {failing_gates(metrics)}")
        if key[0] and not _setup_violated(metrics):
            break
        nxt = closure_step(settings, metrics)
        if nxt is None:
            click.echo("sweep: no setting left that could fix the failing gates")
            break
        settings = nxt
    if best is not None:
        best[1].write(ws)
        click.echo(f"sweep: keeping {best[1]}")
    tool(ws, "verify")


@main.command("sweep")
@click.option("--workspace", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option("--max-candidates", default=4, show_default=True)
@click.option("--solution", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Reference solution (given on C only): its RTL replaces the skeleton.")
def sweep_agent(workspace: Path, max_candidates: int, solution: Path | None) -> None:
    """B/C (a pnr tool): the closure loop over pnr results (on C over the reference RTL). A: try
    (clock period scale, utilization, router passes) settings with `closer-tool synth`; keep the
    best that meets setup timing (smallest area), restore it, run `closer-tool verify`."""
    task = json.loads((workspace / "task.json").read_text())
    if solution is not None:  # the runner gives it on C only (closer.agents.SOLUTION_KINDS)
        rtl_patterns = [pattern for pattern, layer in task["edit_surface"].items() if layer == "rtl"]
        copied = copy_solution(solution, workspace, rtl_patterns)
        click.echo(f"sweep: task C, starting from the reference RTL ({', '.join(copied)}): "
                   "a physical-closure baseline")
    if task.get("flow_to") == "finish":
        closure_sweep(workspace, max_candidates)
        return
    sdc = workspace / task["sdc"]
    floorplan, flow = workspace / "floorplan" / "floorplan.toml", workspace / "flow" / "settings.toml"
    base_sdc = sdc.read_text()
    base_period = _sdc_period(base_sdc)
    # utilization and router passes change only the physical flow (scored by verify); the
    # synthesis check below ranks the clock scale
    grid = [(scale, util, passes) for util, passes in ((0.30, 15), (0.25, 15), (0.30, 10), (0.25, 10))
            for scale in (1.0, 1.2)]
    best: tuple[float, tuple] | None = None

    def apply(scale: float, util: float, passes: int) -> None:
        if "constraints/*" in task["edit_surface"]:
            sdc.write_text(_set_period(base_sdc, round(base_period * scale, 3)))
        if floorplan.is_file():
            _set_toml_number(floorplan, "core_utilization", util)
        if flow.is_file():
            _set_toml_number(flow, "router_passes", passes)

    for scale, util, passes in grid[:max_candidates]:
        apply(scale, util, passes)
        code = tool(workspace, "synth")
        if code in REFUSED:
            break
        metrics = _last_metrics(workspace)
        area, ws_ns = metrics.get("synth__design__instance__area__stdcell"), metrics.get("synth__timing__setup__ws")
        if area is None or ws_ns is None:
            continue
        # score: meeting timing first, then the shortest effective period, then the smallest area
        period = round(base_period * scale, 3)
        key = (0 if ws_ns >= 0 else 1, period - min(ws_ns, 0.0), area)
        if best is None or key < best[0]:
            best = (key, (scale, util, passes))
    if best is not None:
        scale, util, passes = best[1]
        apply(scale, util, passes)
        click.echo(f"sweep: best scale {scale} util {util} router passes {passes}")
    tool(workspace, "verify")


if __name__ == "__main__":
    main()
