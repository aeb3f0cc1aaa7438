"""`run_flow`: one run of a design's flow up to a step, then the ORFS-named metrics.

Two engines run the same nodes in the same node folders (closer.flow.paths):

- `direct` (the default): closer.flow.direct runs each node's tool itself, in this process's
  children, and reuses a node whose key (its inputs' content, settings and tool) is unchanged;
- `sc`: SiliconCompiler's scheduler runs them as its tasks (closer.flow.project), with its own
  node reuse (`option hash`: a node whose inputs, settings and files hash the same as in the
  previous run in the same directory is not run again; a node counts as reused here when its
  output manifest was not rewritten by this run). It is the reference the direct engine is
  tested against (the same netlists and metrics) and the way to SiliconCompiler's own tasks.

A folder left by one engine is run again by the other (neither reads the other's reuse records).
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
from enum import StrEnum
from pathlib import Path

from closer import __version__
from closer import metrics as closer_keys
from closer.designs.model import Design, DesignPaths, load_design
from closer.errors import CloserError, ToolError
from closer.flow import metrics, synth_choice
from closer.flow.paths import JOB_NAME, FlowPaths, default_run_dir
from closer.flow.platform import Platform, load_platform
from closer.flow.settings import abc_scripts
from closer.flow.steps import FRONT_STEPS, PHYSICAL_STEPS, STEPS, Backend, Step, resolve_backend, steps_until
from closer.flow.tool_cpu import tool_cpu_s
from closer.flow.tool_versions import siliconcompiler_version
from closer.toolchain import use_venv_tools
from closer.paths import repo_paths
from closer.pdk import PdkPaths, pdk
from closer.sdc import SdcError, write_canonical

NODE_TIMEOUT_S = 900.0
PNR_STAGE_FILE = "6_pnr.json"   # the physical stages' keys (floorplan__ ... finish__, closer__)


class Engine(StrEnum):
    DIRECT = "direct"   # closer.flow.direct: the nodes' tools run here, reuse by content key
    SC = "sc"           # SiliconCompiler's scheduler and tasks (closer.flow.project)


_FAILED_NODES = re.compile(r"errors in: ([\w/, ]+)")
_ERROR_LINE = re.compile(r"^(%Error|ERROR|Error)\b.*")


@dataclass
class StepRecord:
    name: str
    tool: str
    tool_version: str | None
    reused: bool
    wall_s: float | None        # the node's own time when it ran (the tool's and the engine's)
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
    engine: str = Engine.DIRECT.value

    @property
    def all_reused(self) -> bool:
        return all(s.reused for s in self.steps)


def run_flow(design_name: str, config: str = "default", to: str | None = None,
             backend: Backend | str = Backend.AUTO, out: Path | None = None,
             progress=None, engine: Engine | str = Engine.DIRECT) -> FlowResult:
    """Run the flow; return the run record. Raises ToolError naming the failed step and its log."""
    start = time.monotonic()
    use_venv_tools()
    engine = Engine(engine)
    design, design_paths = load_design(design_name)
    design.config(config)
    chosen = resolve_backend(backend)
    steps = steps_until(chosen, to)
    platform = load_platform()
    pdk_paths = pdk()
    flow_paths = FlowPaths(Path(out) if out else default_run_dir(design.name, config), design.name)
    flow_paths.root.mkdir(parents=True, exist_ok=True)
    run = _Run(design, design_paths, config, chosen, steps, platform, pdk_paths, flow_paths, start, engine)

    with _exclusive(flow_paths):
        sdc = _canonical_sdc(design, design_paths, flow_paths, steps, start, chosen, config, engine)
        _drop_nodes_of_another_platform(flow_paths)
        runner = _run_sc if engine is Engine.SC else _run_direct
        records, attempts = runner(run, sdc, progress)

    result = FlowResult(design.name, config, chosen.value, steps[-1].name, str(flow_paths.root),
                        round(time.monotonic() - start, 3), records, engine=engine.value)
    result.metadata = str(_write_metrics(flow_paths, steps, platform, design, design_paths, config,
                                         chosen, records, pdk_paths.root, attempts, engine))
    metrics.write_json(flow_paths.record, asdict(result))
    return result


@dataclass(frozen=True)
class _Run:
    """One run's inputs, as both engines get them."""
    design: Design
    design_paths: DesignPaths
    config: str
    backend: Backend
    steps: list[Step]
    platform: Platform
    pdk_paths: PdkPaths
    flow_paths: FlowPaths
    start: float
    engine: Engine

    def fail(self, error: CloserError) -> None:
        _record_failure(self.flow_paths, self.design.name, self.config, self.backend, self.steps,
                        self.start, error, self.engine)


def _run_direct(run: _Run, sdc: Path, progress):
    """The nodes run by closer.flow.direct; (step records, synthesis attempts)."""
    from closer.flow.direct.engine import DirectEngine
    from closer.flow.direct.node import read_record

    # the engine reports each step as it starts or is reused; the watcher adds the elapsed time
    watcher = _ProgressWatcher(run.flow_paths, progress, lambda: engine.current, idle=None)
    engine = DirectEngine(direct_context(run.design, run.design_paths, run.config, run.platform,
                                         run.pdk_paths, run.flow_paths, sdc),
                          on_node=lambda step, reused: watcher.report(f"{step}: reused" if reused else step))
    names = [s.name for s in run.steps]

    def run_to(to: str, abc: str | None):
        engine.run_to(names[: names.index(to) + 1], abc)

    watcher.start()
    try:
        _, attempts = _run_attempts(run_to, run.steps, run.flow_paths, run.design)
    except CloserError as exc:
        run.fail(exc)
        raise
    finally:
        watcher.stop()
    records = []
    for step in run.steps:
        node = read_record(run.flow_paths.node_dir(step.name))
        records.append(StepRecord(
            name=step.name, tool=step.tool, tool_version=node.tool_version if node else None,
            reused=step.name not in engine.ran, wall_s=node.wall_s if node else None,
            exe_s=node.exe_s if node else None, peak_mem_mb=node.peak_mem_mb if node else None,
            log=str(run.flow_paths.node_log(step.name)), exe_cpu_s=node.exe_cpu_s if node else None))
    return records, attempts


def direct_context(design: Design, design_paths: DesignPaths, config: str, platform: Platform,
                   pdk_paths: PdkPaths, flow_paths: FlowPaths, sdc: Path):
    """What the direct engine's nodes read (closer.flow.direct.engine.FrontContext)."""
    from closer.flow.direct.engine import FrontContext
    from closer.flow.direct.sources import design_sources
    from closer.flow.macros import config_macros

    return FrontContext(design, config, design_sources(design, design_paths, config), platform,
                        pdk_paths, flow_paths, sdc, config_macros(design.config(config).macros, pdk_paths),
                        platform_revision(), NODE_TIMEOUT_S)


def _run_sc(run: _Run, sdc: Path, progress):
    """The nodes run by SiliconCompiler's scheduler; (step records, synthesis attempts)."""
    from closer.flow.dependency_check import dependency_check_once
    from closer.flow.project import build_project
    from closer.flow.sc_process import prepare_process

    flow_paths, steps, design = run.flow_paths, run.steps, run.design
    with open(flow_paths.root / "sc.log", "w") as sc_log:
        before = {s.name: _manifest_mtime(flow_paths, s.name, design.top) for s in steps}

        def current() -> str | None:
            return next((s.name for s in steps
                         if not _finished_now(flow_paths, s.name, design.top, before)
                         and flow_paths.node_dir(s.name).exists()), None)

        def project_to(to: str, abc: str | None = None):
            # a fresh project per run: SiliconCompiler's run() leaves the project's schema
            # unusable for another run (a task's required keys were unset on the second)
            project = build_project(design, run.design_paths, run.config, run.platform, run.pdk_paths,
                                    STEPS[run.backend], flow_paths, to=to,
                                    flow_name=f"closer-{run.backend.value}", sdc=sdc, log_stream=sc_log)
            for step in steps:
                project.set("option", "timeout", NODE_TIMEOUT_S, step=step.name, index="0")
            if abc is not None:
                from closer.flow.synth_task import CloserSynthesis
                CloserSynthesis.find_task(project).set("var", "strategy", abc, step="synth", index="0")
            project.run()
            return project

        prepare_process()
        watcher = _ProgressWatcher(flow_paths, progress, current)
        watcher.start()
        try:
            with dependency_check_once():
                project, attempts = _run_attempts(project_to, steps, flow_paths, design)
        except RuntimeError as exc:
            error = _failure(flow_paths, steps, design.top, before, exc)
            run.fail(error)
            raise error from None
        finally:
            watcher.stop()

    history = project.history(JOB_NAME)
    return [_step_record(history, flow_paths, s, design.top, before) for s in steps], attempts


def _run_attempts(run_to, steps: list[Step], flow_paths: FlowPaths, design):
    """Run up to the last of `steps` (`run_to(to, abc_script)` runs the chain to step `to` with
    that ABC script, None for the design's first, and returns what the engine keeps of the run).
    With synthesis among them, the steps before the physical ones run once per ABC script until
    one meets ABC's delay target (closer.flow.synth_choice); then the rest, with the kept script
    (synthesis runs again if a later one was tried). So a design the first script closes runs in
    one run up to `sta`, and the physical steps only ever see the kept netlist. Returns the last
    run's result and the synthesis attempts.

    The attempts share the node folders, which hold one attempt's synthesis-and-after nodes at a
    time: the others' are moved aside under sc/attempts/ and moved back before their script runs
    again (`_bring_attempt`), so an unchanged rerun reuses every attempt's nodes instead of
    synthesizing each script again (changed inputs: the engine reruns them)."""
    names = [s.name for s in steps]
    if "synth" not in names:
        return run_to(names[-1], None), []
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
        last = run_to(front, script.script)
        _mark_resident(flow_paths, script.name if len(scripts) > 1 else None)
        log = flow_paths.node_log("synth")
        shutil.copyfile(log, flow_paths.synth_attempt_log(script.name))
        attempts.append(synth_choice.Attempt(script.name, script.script, synth_choice.abc_estimate(log)))
    kept = synth_choice.chosen(attempts)
    if kept is not attempts[-1] or names[-1] != front:
        if kept is not attempts[-1]:
            _bring_attempt(flow_paths, kept.name)
        last = run_to(names[-1], kept.script)
        _mark_resident(flow_paths, kept.name if len(scripts) > 1 else None)
    return last, attempts


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
                   backend: Backend, config: str, engine: Engine) -> Path:
    """The design's SDC read as data (closer.sdc) and written as the canonical SDC the nodes read;
    an SDC outside the allowed subset fails the run (SdcError, recorded in flow.json)."""
    try:
        write_canonical(design_paths.sdc(design), flow_paths.canonical_sdc,
                        design.constraints.sdc_policy())
    except SdcError as exc:
        _record_failure(flow_paths, design.name, config, backend, steps, start, exc, engine)
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
                    steps: list[Step], start: float, error: CloserError, engine: Engine) -> None:
    """Keep the last good metadata.json as metadata.previous.json (so nothing recorded is lost,
    and a stale file is not scored as this run's), and write the failed run record."""
    if flow_paths.metadata.exists():
        flow_paths.metadata.replace(flow_paths.previous_metadata)
    record = FlowResult(design, config, backend.value, steps[-1].name, str(flow_paths.root),
                        round(time.monotonic() - start, 3), status="failed", error=str(error),
                        engine=engine.value)
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
    """Reports the step now running (`current()`) and elapsed time; while none runs, `idle` (None:
    nothing)."""

    def __init__(self, flow_paths, progress, current, idle: str | None = "checking") -> None:
        self.flow_paths, self.progress, self.current, self.idle = flow_paths, progress, current, idle
        self._stop = threading.Event()
        self._lock = threading.Lock()   # the engine reports a starting step from the main thread
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._start = time.monotonic()

    def start(self) -> None:
        if self.progress is not None:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=1)

    def report(self, current: str | None = None) -> None:
        """Report now: `current`, else the step `current()` names."""
        if self.progress is None:
            return
        current = current or self.current() or self.idle
        if current is None:
            return
        if current == "pnr":
            current = f"pnr: {physical_step(self.flow_paths)}"
        with self._lock:
            self.progress(current, time.monotonic() - self._start)

    def _loop(self) -> None:
        while not self._stop.wait(0.2):
            self.report()


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
    from closer.flow.direct.pnr import PHYS_DIR

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
                   attempts: list[synth_choice.Attempt], engine: Engine) -> Path:
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
        from closer.flow.direct.sta import STA_JSON
        sta = metrics.sta_metrics(flow_paths.node_dir("sta") / STA_JSON, platform)
        metrics.write_json(flow_paths.sta_json, sta)
        stages.append(sta)
    if "pnr" in names:
        from closer.flow.direct.pnr import PNR_JSON
        pnr = metrics.pnr_metrics(flow_paths.node_dir("pnr") / PNR_JSON)
        metrics.write_json(pnr_json, pnr)
        stages.append(pnr)
    inputs = [design_paths.design_toml, *design_paths.rtl(design), design_paths.sdc(design)]
    run_keys: dict[str, object] = {
        "run__flow__design": design.name,
        "run__flow__variant": config,
        "run__flow__design__revision": design_revision(inputs),
        "run__flow__scripts_commit": _git_commit(),
        "run__flow__closer_version": __version__,
        "run__flow__backend": backend.value,
        "run__flow__engine": engine.value,
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
        "run__flow__siliconcompiler_version": siliconcompiler_version(),
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

