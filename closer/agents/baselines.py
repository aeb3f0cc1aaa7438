"""The machinery baselines, run as agent processes inside a task workspace:

    python -m closer.agents.baselines null   --workspace W              changes nothing (the floor)
    python -m closer.agents.baselines oracle --workspace W --solution S copies the reference solution
    python -m closer.agents.baselines sweep  --workspace W              scripted closure policy

They call the metered tools through `closer-tool` on PATH, like any agent. The sweep tries clock
period, core utilization and router-pass settings (each checked with `closer-tool synth`)
and keeps the best setting that meets timing with the smallest area, until the budget refuses.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click

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
    for src in sorted(p for p in solution.rglob("*") if p.is_file()):
        dest = workspace / src.relative_to(solution)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
    code = tool(workspace, "verify")
    sys.exit(0 if code in (0, *REFUSED) else code)


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


def _last_metrics(ws: Path) -> dict:
    results = sorted((ws / "results").glob("*_synth"), key=lambda p: int(p.name.split("_")[0]))
    if not results:
        return {}
    path = results[-1] / "metrics.json"
    return json.loads(path.read_text()) if path.is_file() else {}


@main.command("sweep")
@click.option("--workspace", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option("--max-candidates", default=4, show_default=True)
def sweep_agent(workspace: Path, max_candidates: int) -> None:
    """Try (clock period scale, utilization, router passes) settings with `closer-tool synth`; keep the
    best that meets setup timing (smallest area), restore it, run `closer-tool verify`."""
    task = json.loads((workspace / "task.json").read_text())
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
