"""`run_flow`: one SiliconCompiler run of a design up to a step, then the ORFS-named metrics.

Node reuse is SiliconCompiler's: with `option hash` on, a node whose inputs, settings and files
hash the same as in the previous run in the same directory is not run again. A node counts as
reused here when its output manifest was not rewritten by this run.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from closer import __version__
from closer import metrics as closer_keys
from closer.designs.model import load_design
from closer.errors import CloserError, ToolError
from closer.flow import metrics, synth_choice
from closer.flow.dependency_check import dependency_check_once
from closer.flow.paths import FlowPaths, default_run_dir
from closer.flow.platform import load_platform
from closer.flow.project import JOB_NAME, build_project
from closer.flow.sc_process import prepare_process
from closer.flow.settings import abc_scripts
from closer.flow.steps import FRONT_STEPS, PHYSICAL_STEPS, STEPS, Backend, Step, resolve_backend, steps_until
from closer.flow.tool_cpu import tool_cpu_s
from closer.toolchain import use_venv_tools
from closer.paths import repo_paths
from closer.pdk import pdk
from closer.sdc import SdcError, write_canonical

NODE_TIMEOUT_S = 900.0
PNR_STAGE_FILE = "6_pnr.json"   # the physical stages' keys (floorplan__ ... finish__, closer__)
_FAILED_NODES = re.compile(r"errors in: ([\w/, ]+)")
_ERROR_LINE = re.compile(r"^(%Error|ERROR|Error)\b.*")


@dataclass
class StepRecord:
    name: str
    tool: str
    tool_version: str | None
    reused: bool
    wall_s: float | None        # the node's own task time when it ran (from SiliconCompiler)
    exe_s: float | None         # time inside the tool executable
    peak_mem_mb: float | None
    log: str
    exe_cpu_s: float | None = None  # the tool's CPU time in the node (closer.flow.tool_cpu)


@dataclass
class FlowResult:
    design: str
    config: str
    backend: str
    to: str
    run_dir: str
    wall_s: float
    steps: list[StepRecord] = field(default_factory=list)
    metadata: str | None = None
    status: str = "ok"             # "ok" or "failed"
    error: str | None = None       # the failure message when status is "failed"

    @property
    def all_reused(self) -> bool:
        return all(s.reused for s in self.steps)


def run_flow(design_name: str, config: str = "default", to: str | None = None,
             backend: Backend | str = Backend.AUTO, out: Path | None = None,
             progress=None) -> FlowResult:
    """Run the flow; return the run record. Raises ToolError naming the failed step and its log."""
    start = time.monotonic()
    use_venv_tools()
    design, design_paths = load_design(design_name)
    design.config(config)
    chosen = resolve_backend(backend)
    steps = steps_until(chosen, to)
    platform = load_platform()
    pdk_paths = pdk()
    flow_paths = FlowPaths(Path(out) if out else default_run_dir(design.name, config), design.name)
    flow_paths.root.mkdir(parents=True, exist_ok=True)

    with _exclusive(flow_paths), open(flow_paths.root / "sc.log", "w") as sc_log:
        sdc = _canonical_sdc(design, design_paths, flow_paths, steps, start, chosen, config)
        _drop_nodes_of_another_platform(flow_paths)
        before = {s.name: _manifest_mtime(flow_paths, s.name, design.top) for s in steps}
        watcher = _ProgressWatcher(flow_paths, steps, design.top, before, progress)

        def project_to(to: str, abc: str | None = None):
            # a fresh project per run: SiliconCompiler's run() leaves the project's schema
            # unusable for another run (a task's required keys were unset on the second)
            project = build_project(design, design_paths, config, platform, pdk_paths,
                                    STEPS[chosen], flow_paths, to=to,
                                    flow_name=f"closer-{chosen.value}", sdc=sdc, log_stream=sc_log)
            for step in steps:
                project.set("option", "timeout", NODE_TIMEOUT_S, step=step.name, index="0")
            if abc is not None:
                from closer.flow.synth_task import CloserSynthesis
                CloserSynthesis.find_task(project).set("var", "strategy", abc, step="synth", index="0")
            return project

        prepare_process()
        watcher.start()
        try:
            with dependency_check_once():
                project, attempts = _run_project(project_to, steps, flow_paths, design)
        except RuntimeError as exc:
            error = _failure(flow_paths, steps, design.top, before, exc)
            _record_failure(flow_paths, design.name, config, chosen, steps, start, error)
            raise error from None
        finally:
            watcher.stop()

    history = project.history(JOB_NAME)
    records = [_step_record(history, flow_paths, s, design.top, before) for s in steps]
    result = FlowResult(design.name, config, chosen.value, steps[-1].name, str(flow_paths.root),
                        round(time.monotonic() - start, 3), records)
    result.metadata = str(_write_metrics(flow_paths, steps, platform, design, design_paths, config,
                                         chosen, records, pdk_paths.root, attempts))
    metrics.write_json(flow_paths.record, asdict(result))
    return result


def _run_project(project_to, steps: list[Step], flow_paths: FlowPaths, design):
    """Run up to the last of `steps` (`project_to(to, abc_script)` builds the project). With
    synthesis among them, the steps before the physical ones run once per ABC script until one
    meets ABC's delay target (closer.flow.synth_choice); then the rest, with the kept script
    (synthesis runs again if a later one was tried). So a design the first script closes runs in
    one project run up to `sta`, and the physical steps only ever see the kept netlist. Returns
    the last project run and the synthesis attempts.

    The attempts share SiliconCompiler's node folders, which hold one attempt's synthesis-and-after
    nodes at a time: the others' are moved aside under sc/attempts/ and moved back before their
    script runs again (`_bring_attempt`), so an unchanged rerun reuses every attempt's nodes
    instead of synthesizing each script again (changed inputs: SiliconCompiler reruns them)."""
    names = [s.name for s in steps]
    if "synth" not in names:
        project = project_to(names[-1])
        project.run()
        return project, []
    attempt_dir = flow_paths.synth_attempts
    shutil.rmtree(attempt_dir, ignore_errors=True)  # this run's attempts only
    attempt_dir.mkdir(parents=True)
    front = [n for n in names if n not in _PHYSICAL][-1]
    scripts = abc_scripts(design.physical)
    if len(scripts) == 1:  # no attempt to set aside: drop what settings with two scripts left
        shutil.rmtree(flow_paths.attempts_aside, ignore_errors=True)
    attempts: list[synth_choice.Attempt] = []
    for script in scripts:
        if attempts and not synth_choice.needs_next(attempts):
            break
        if len(scripts) > 1:
            _bring_attempt(flow_paths, script.name)
        project = project_to(front, script.script)
        project.run()
        _mark_resident(flow_paths, script.name if len(scripts) > 1 else None)
        log = flow_paths.node_log("synth")
        shutil.copyfile(log, flow_paths.synth_attempt_log(script.name))
        attempts.append(synth_choice.Attempt(script.name, script.script, synth_choice.abc_estimate(log)))
    kept = synth_choice.chosen(attempts)
    if kept is not attempts[-1] or names[-1] != front:
        if kept is not attempts[-1]:
            _bring_attempt(flow_paths, kept.name)
        project = project_to(names[-1], kept.script)
        project.run()
        _mark_resident(flow_paths, kept.name if len(scripts) > 1 else None)
    return project, attempts


# The front steps a synthesis attempt produces (its script changes them): synth and what follows it.
_ATTEMPT_STEPS = tuple(s.name for s in FRONT_STEPS[[t.name for t in FRONT_STEPS].index("synth"):])


def _resident(flow_paths: FlowPaths) -> str | None:
    """The script whose attempt the node folders hold, None when unknown."""
    marker = flow_paths.attempts_aside / "resident"
    return marker.read_text().strip() or None if marker.is_file() else None


def _mark_resident(flow_paths: FlowPaths, script_name: str | None) -> None:
    marker = flow_paths.attempts_aside / "resident"
    marker.unlink(missing_ok=True)
    if script_name is not None:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(script_name + "\n")


def _bring_attempt(flow_paths: FlowPaths, script_name: str) -> None:
    """Make the node folders hold `script_name`'s last attempt when one was set aside: the resident
    attempt's folders are moved aside (renames, nothing copied). The marker is cleared first, so a
    run that fails between the moves leaves no claim about what the folders hold."""
    resident = _resident(flow_paths)
    if resident == script_name:
        return
    _mark_resident(flow_paths, None)
    aside = flow_paths.attempts_aside
    if resident is not None:
        for step in _ATTEMPT_STEPS:
            node, keep = flow_paths.node_dir(step), aside / resident / step
            shutil.rmtree(keep, ignore_errors=True)
            if node.is_dir():
                keep.parent.mkdir(parents=True, exist_ok=True)
                node.rename(keep)
    wanted = aside / script_name
    if wanted.is_dir():
        for step in _ATTEMPT_STEPS:
            node, kept = flow_paths.node_dir(step), wanted / step
            shutil.rmtree(node, ignore_errors=True)
            if kept.is_dir():
                kept.rename(node)
        shutil.rmtree(wanted, ignore_errors=True)


_PHYSICAL = {s.name for s in PHYSICAL_STEPS}


def _canonical_sdc(design, design_paths, flow_paths: FlowPaths, steps: list[Step], start: float,
                   backend: Backend, config: str) -> Path:
    """The design's SDC read as data (closer.sdc) and written as the canonical SDC the nodes read;
    an SDC outside the allowed subset fails the run (SdcError, recorded in flow.json)."""
    try:
        write_canonical(design_paths.sdc(design), flow_paths.canonical_sdc,
                        design.constraints.sdc_policy())
    except SdcError as exc:
        _record_failure(flow_paths, design.name, config, backend, steps, start, exc)
        raise
    return flow_paths.canonical_sdc


def platform_revision() -> str:
    """SHA-256 (16 hex) of the platform folder (platform.toml, dont_use.txt, ...): SiliconCompiler
    does not key node reuse on the library's dont-use list, so a changed list must rerun every
    node (measured: a run directory from before the router dont-use cells were added reused its
    old netlist, 2169.6 instead of 2387.3 um^2)."""
    from closer.flow.platform import platform_dir

    h = hashlib.sha256()
    for path in sorted(p for p in platform_dir("sky130hd").rglob("*") if p.is_file()):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def _drop_nodes_of_another_platform(flow_paths: FlowPaths) -> None:
    """Remove SiliconCompiler's node directories when they were built with other platform files
    (or by a version that did not stamp them), so that nothing stale is reused."""
    import shutil

    revision = platform_revision()
    stamp = flow_paths.platform_stamp
    if flow_paths.sc_build.exists() and (not stamp.is_file() or stamp.read_text().strip() != revision):
        shutil.rmtree(flow_paths.sc_build)
    stamp.write_text(revision + "\n")


@contextmanager
def _exclusive(flow_paths: FlowPaths):
    """One run at a time per run directory: SiliconCompiler's node directories are not safe to
    share between concurrent runs."""
    with open(flow_paths.lock, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ToolError(f"another flow run is using {flow_paths.root}; wait for it or use "
                            f"another --out") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _record_failure(flow_paths: FlowPaths, design: str, config: str, backend: Backend,
                    steps: list[Step], start: float, error: CloserError) -> None:
    """Keep the last good metadata.json as metadata.previous.json (so nothing recorded is lost,
    and a stale file is not scored as this run's), and write the failed run record."""
    if flow_paths.metadata.exists():
        flow_paths.metadata.replace(flow_paths.previous_metadata)
    record = FlowResult(design, config, backend.value, steps[-1].name, str(flow_paths.root),
                        round(time.monotonic() - start, 3), status="failed", error=str(error))
    metrics.write_json(flow_paths.record, asdict(record))


def run_record_schema() -> dict:
    """JSON Schema of flow.json, from the FlowResult dataclass (closer/schemas/flow-run.schema.json)."""
    from pydantic import TypeAdapter

    schema = TypeAdapter(FlowResult).json_schema()
    schema["title"] = "Closer flow run record (flow.json)"
    return schema


def _manifest_mtime(flow_paths: FlowPaths, step: str, top: str) -> float | None:
    manifest = flow_paths.node_dir(step) / "outputs" / f"{top}.pkg.json"
    return manifest.stat().st_mtime_ns if manifest.exists() else None


def _finished_now(flow_paths, step, top, before) -> bool:
    now = _manifest_mtime(flow_paths, step, top)
    return now is not None and now != before.get(step)


class _ProgressWatcher:
    """Reports the step now running (the first whose node has not finished) and elapsed time."""

    def __init__(self, flow_paths, steps, top, before, progress) -> None:
        self.flow_paths, self.steps, self.top, self.before = flow_paths, steps, top, before
        self.progress = progress
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._start = time.monotonic()

    def start(self) -> None:
        if self.progress is not None:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=1)

    def _loop(self) -> None:
        while not self._stop.wait(0.2):
            current = next((s.name for s in self.steps
                            if not _finished_now(self.flow_paths, s.name, self.top, self.before)
                            and self.flow_paths.node_dir(s.name).exists()), None)
            if current == "pnr":
                current = f"pnr: {physical_step(self.flow_paths)}"
            self.progress(current or "checking", time.monotonic() - self._start)


def physical_step(flow_paths: FlowPaths) -> str:
    """The closer.physical step running in the pnr node: the one after the last that
    `phys/steps.json` lists as done (its first step while the file is absent or being written)."""
    from closer.physical.flow import STEPS as PHYS_STEPS

    steps_json = flow_paths.node_dir("pnr") / "phys" / "steps.json"
    try:
        done = json.loads(steps_json.read_text()) if steps_json.is_file() else []
    except (OSError, ValueError):
        done = []
    ids = [s.id for s in PHYS_STEPS]
    finished = {entry.get("step") for entry in done if isinstance(entry, dict)}
    return next((i for i in ids if i not in finished), ids[-1])


def _failure(flow_paths, steps, top, before, exc: Exception) -> ToolError:
    named = _FAILED_NODES.search(str(exc))
    failed_names = {n.split("/")[0] for n in named.group(1).split(",")} if named else set()
    failed = next((s for s in steps if s.name in failed_names), None)
    if failed is None:
        return ToolError(f"flow failed: {exc}; see {flow_paths.root / 'sc.log'}")
    log = flow_paths.node_log(failed.name)
    lines = []
    if log.is_file():
        lines = [m.group(0) for m in map(_ERROR_LINE.match, log.read_text(errors="replace")
                                         .splitlines()) if m][:12]
    detail = "\n".join(lines) if lines else "(no error lines in the log; see sc.log)"
    return ToolError(f"step {failed.name} ({failed.tool}) failed; log: {log}\n{detail}")


def _metric(history, name: str, step: str):
    try:
        return history.get("metric", name, step=step, index="0")
    except (KeyError, ValueError):
        return None


def _step_record(history, flow_paths, step: Step, top: str, before) -> StepRecord:
    memory = _metric(history, "memory", step.name)
    try:
        version = history.get("record", "toolversion", step=step.name, index="0")
    except (KeyError, ValueError):
        version = None
    if version is None and step.version is not None:
        version = step.version()
    wall = _metric(history, "tasktime", step.name)
    exe = _metric(history, "exetime", step.name)
    return StepRecord(
        name=step.name, tool=step.tool, tool_version=version,
        reused=not _finished_now(flow_paths, step.name, top, before),
        wall_s=round(wall, 3) if wall is not None else None,
        exe_s=round(exe, 3) if exe is not None else None,
        peak_mem_mb=round(memory / 1e6, 1) if memory else None,
        log=str(flow_paths.node_log(step.name)),
        exe_cpu_s=tool_cpu_s(flow_paths.node_dir(step.name)))


def design_revision(files: list[Path]) -> str:
    """SHA-256 over the design's inputs (names and contents), so results name what they timed."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _pdk_fingerprint(pdk_root: Path) -> str | None:
    """SHA-256 of the PDK's own SHA256SUMS file (which lists every PDK file's hash)."""
    sums = pdk_root / "SHA256SUMS"
    return hashlib.sha256(sums.read_bytes()).hexdigest()[:16] if sums.is_file() else None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(repo_paths().root), "rev-parse", "HEAD"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _physical_tools(flow_paths: FlowPaths) -> str | None:
    """closer.physical's own provenance of its tools (router, KLayout, OpenSTA, placer)."""
    from closer.flow.pnr_task import PHYS_DIR

    meta = flow_paths.node_dir("pnr") / PHYS_DIR / "metadata.json"
    try:
        tools = json.loads(meta.read_text())["provenance"]["physical"]["tools"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return ";".join(f"{k}={v}" for k, v in sorted(tools.items()))


def _macro_areas(design, config: str) -> dict[str, float]:
    """{macro cell name: Liberty area µm²} of the config's macros."""
    from closer.flow.macros import config_macros

    return {m.name: m.area_um2 for m in config_macros(design.config(config).macros, pdk())}


def _write_metrics(flow_paths, steps, platform, design, design_paths, config, backend,
                   records: list[StepRecord], pdk_root: Path,
                   attempts: list[synth_choice.Attempt]) -> Path:
    names = [s.name for s in steps]
    stages: list[dict] = []
    pnr_json = flow_paths.metrics_dir / PNR_STAGE_FILE
    for stale in (flow_paths.synth_json, flow_paths.sta_json, pnr_json):
        stale.unlink(missing_ok=True)  # a shorter run (--to) must not leave a longer run's stages
    if "synth" in names:
        synth = metrics.synth_metrics(flow_paths.node_dir("synth") / "reports" / "stat.json",
                                      _macro_areas(design, config))
        synth.update(synth_choice.choice_metrics(attempts))
        metrics.write_json(flow_paths.synth_json, synth)
        stages.append(synth)
    if "sta" in names:
        from closer.flow.sta_task import STA_JSON
        sta = metrics.sta_metrics(flow_paths.node_dir("sta") / STA_JSON, platform)
        metrics.write_json(flow_paths.sta_json, sta)
        stages.append(sta)
    if "pnr" in names:
        from closer.flow.pnr_task import PNR_JSON
        pnr = metrics.pnr_metrics(flow_paths.node_dir("pnr") / PNR_JSON)
        metrics.write_json(pnr_json, pnr)
        stages.append(pnr)
    inputs = [design_paths.design_toml, *design_paths.rtl(design), design_paths.sdc(design)]
    import siliconcompiler

    run_keys: dict[str, object] = {
        "run__flow__design": design.name,
        "run__flow__variant": config,
        "run__flow__design__revision": design_revision(inputs),
        "run__flow__scripts_commit": _git_commit(),
        "run__flow__closer_version": __version__,
        "run__flow__backend": backend.value,
        "run__flow__last_step": names[-1],
        "run__flow__platform": platform.platform.name,
        "run__flow__platform__library": platform.platform.library,
        "run__flow__platform__corners": {c: v.checks for c, v in platform.corners.items()},
        "run__flow__platform__synthesis_corner": platform.synthesis.corner,
        "run__flow__pdk_root": str(pdk_root),
        "run__flow__pdk__sums_sha256": _pdk_fingerprint(pdk_root),
        "run__flow__platform__time_units": "1ns",
        "run__flow__platform__power_units": "1W",
        "run__flow__platform__area_units": "1um^2",
        "run__flow__platform__frequency_units": "1Hz",
        "run__flow__siliconcompiler_version": siliconcompiler.__version__,
        "run__flow__python_version": sys.version.split()[0],
    }
    if "pnr" in names:
        run_keys["run__flow__physical__tools"] = _physical_tools(flow_paths)
    for record in records:
        run_keys[f"run__flow__tool__{record.name}"] = f"{record.tool} {record.tool_version}"
    run_keys[closer_keys.RUN_DESIGN] = design.name
    run_keys[closer_keys.RUN_DESIGN_REVISION] = run_keys["run__flow__design__revision"]
    run_keys[closer_keys.RUN_PDK_CORNER] = ";".join(
        f"{check}:{','.join(platform.corners_with(check))}" for check in ("setup", "hold", "power"))
    run_keys[closer_keys.RUN_TOOL_VERSIONS] = ";".join(
        f"{r.name}:{r.tool}={r.tool_version}" for r in records)
    merged = metrics.merge_metadata(stages, run_keys)
    metrics.write_json(flow_paths.metadata, merged)
    return flow_paths.metadata

