"""`closer task generate`: one design (spec, golden RTL, weak variant, tasks.toml) -> the A/B/C x
budget tasks, each a folder with its workspace and manifests, plus the hidden part written
outside the task folder, plus the suite manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import string
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import tomli_w

from closer import __version__
from closer.budget import BudgetOverride, ToolClass, resolve_budget
from closer.designs.model import Design, DesignPaths, load_design
from closer.errors import InputError
from closer.inputs import load_json_model
from closer.metered.config import ToolConfig
from closer.metered.instructions import agent_instructions
from closer.paths import repo_paths
from closer.sdc import BASE_COMMANDS
from closer.tasks.checks import FLOW_TIMEOUT_S, SIM_TIMEOUT_S, run_functional
from closer.tasks.models import (BUDGET_TIERS, KIND_TITLES, SUITE_VERSION, DesignTasks, FileDigest,
                                 HiddenConfig, KindSpec, LockedManifest, StartPoint, SuiteEntry,
                                 SuiteManifest, TaskConfig, TaskKind, load_design_tasks)
from closer.tasks.paths import (PUBLIC_TARGETS, SuitePaths, in_surface, sha256_file, tree_checksum,
                                workspace_files)

TASKS_TOML = "tasks.toml"
ORACLE_PUBLIC_EXCLUDE = ("hidden", "faults", "__pycache__", "README.md")
GOALS = {
    TaskKind.A: ("Write synthesizable RTL for the specification. It is checked by simulation, "
                 "synthesized to sky130_fd_sc_hd and simulated again at gate level; area and "
                 "cycles are scored."),
    TaskKind.B: ("The workspace holds a correct but weak implementation with its constraints, "
                 "floorplan and flow settings. Close it to a clean layout (GDS) that meets the "
                 "targets: change the RTL, constraints, floorplan or flow settings."),
    TaskKind.C: ("Implement the specification and take it to a clean layout (GDS) that meets "
                 "the targets: you own the RTL, constraints, floorplan and flow settings."),
}
B_C_PHYSICAL_FILES = {  # read into the rebuilt design's [physical] table (closer.designs.model.Physical)
    "floorplan/floorplan.toml": (
        "# Floorplan of the physical flow (closer/physical): cell area / core area, core height / width\n"
        "core_utilization = 0.30\naspect_ratio = 1.0\n"),
    "flow/settings.toml": (
        "# Flow settings (docs/flow.md \"Flow settings\"): qrouter's stage2 rip-up passes (0..15),\n"
        "# search-and-repair rounds, post-route timing repair rounds; synthesis: ABC strategy\n"
        "# (balanced/area/delay), fanout buffering, gate sizing, most pins per driver, fraction of the\n"
        "# clock period kept out of ABC's delay target\n"
        "router_passes = 15\nrepair_rounds = 8\ntiming_repair_rounds = 2\n"
        "synth_strategy = \"balanced\"\nsynth_buffering = true\nsynth_sizing = true\nmax_fanout = 7\n"
        "synth_delay_margin = 0.3\n"),
}


def task_id(design: str, kind: TaskKind, tier: str) -> str:
    return f"{design}-{kind.value}-{tier}"


def generate_suite(design_name: str, out: Path, kinds: list[TaskKind] | None = None,
                   budgets: list[str] | None = None, require_check: bool = False,
                   replace: bool = False) -> SuiteManifest:
    """The tasks of a design; suite.json names the passing `closer design check` record of exactly
    its current content, or says 'unchecked'. `require_check` (the CLI's default): refuse a
    design without one."""
    from closer.designs.checkrecord import content_checksum, passing_record

    design, dpaths = load_design(design_name)
    tasks = load_design_tasks(dpaths.root / TASKS_TOML)
    checksum = content_checksum(dpaths, tasks)
    record = passing_record(design.name, checksum)
    if record is None and require_check:
        raise InputError(f"{dpaths.root}: design {design.name!r} (content {checksum[:12]}) has no passing "
                         f"`closer design check`; run it, or pass --unchecked (recorded in suite.json)")
    note = str(record) if record is not None else "unchecked"
    return generate_from(design, dpaths, tasks, out, kinds, budgets, note, replace)


def generate_from(design: Design, dpaths: DesignPaths, tasks: DesignTasks, out: Path,
                  kinds: list[TaskKind] | None = None, budgets: list[str] | None = None,
                  check_note: str = "unchecked", replace: bool = False) -> SuiteManifest:
    _check_inputs(tasks, design, dpaths, dpaths.root / TASKS_TOML)
    kinds = kinds or list(TaskKind)
    budgets = budgets or list(BUDGET_TIERS)
    for tier in budgets:
        resolve_budget(BudgetOverride(tier=tier))  # unknown tiers fail before anything is written
    suite = SuitePaths(out.resolve())
    old = _existing_manifest(suite)
    entries = {e.task_id: e for e in (old.tasks if old else [])}
    golden_s = golden_func_time(design, dpaths, tasks, suite.root)
    for kind in kinds:
        for tier in budgets:
            tid = task_id(design.name, kind, tier)
            _refuse_changed(suite, entries.get(tid), design, dpaths, tasks, kind, tier, golden_s, replace)
            entry = write_task(suite, design, dpaths, tasks, kind, tier, golden_s)
            entries[entry.task_id] = entry
    ordered = sorted(entries.values(), key=lambda e: e.task_id)
    checks = {**(old.design_checks if old else {}), design.name: check_note}
    manifest = SuiteManifest(suite_version=content_version(ordered),
                             generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                             closer_version=__version__, design_checks=checks, tasks=ordered)
    suite.manifest.write_text(manifest.model_dump_json(indent=2) + "\n")
    return manifest


def content_version(entries: list[SuiteEntry]) -> str:
    """The suite version: the task format's version plus a digest of every task's content
    (public and hidden), so any change of a task, its conditions or targets shows."""
    digest = hashlib.sha256()
    for e in sorted(entries, key=lambda e: e.task_id):
        digest.update(f"{e.task_id}\0{e.checksum}\0{e.hidden_checksum}\n".encode())
    return f"{SUITE_VERSION}+{digest.hexdigest()[:12]}"


def _existing_manifest(suite: SuitePaths) -> SuiteManifest | None:
    if not suite.manifest.exists() and not suite.manifest.is_symlink():
        return None
    old = load_json_model(suite.manifest, SuiteManifest, "suite manifest")
    if old.suite_version.split("+")[0] != SUITE_VERSION:
        raise InputError(f"{suite.manifest}: suite version {old.suite_version} differs from this "
                         f"closer's {SUITE_VERSION}; generate into a new folder")
    return old


def _refuse_changed(suite: SuitePaths, old: SuiteEntry | None, design: Design, dpaths: DesignPaths,
                    tasks: DesignTasks, kind: TaskKind, tier: str, golden_s: float,
                    replace: bool) -> None:
    """A task already in the suite is rewritten only when its content is unchanged (or `replace`):
    trials of the old revision would otherwise be mixed with the new one unnoticed."""
    if old is None or replace:
        return
    with tempfile.TemporaryDirectory(prefix=".probe-", dir=suite.root) as tmp:
        probe = write_task(SuitePaths(Path(tmp)), design, dpaths, tasks, kind, tier, golden_s)
    if (probe.checksum, probe.hidden_checksum) != (old.checksum, old.hidden_checksum):
        raise InputError(f"{suite.manifest}: task {old.task_id} would change (checksum "
                         f"{old.checksum[:12]} -> {probe.checksum[:12]}, hidden {old.hidden_checksum[:12]} -> "
                         f"{probe.hidden_checksum[:12]}); generate into a new --out, or pass --replace")


def _check_inputs(tasks: DesignTasks, design: Design, dpaths: DesignPaths, spec_file: Path) -> None:
    if not (dpaths.root / tasks.spec).is_file():
        raise InputError(f"{spec_file}: key spec: {dpaths.root / tasks.spec} does not exist")
    if not (dpaths.root / tasks.oracle / f"{tasks.test_module}.py").is_file():
        raise InputError(f"{spec_file}: keys oracle/test_module: no "
                         f"{dpaths.root / tasks.oracle / tasks.test_module}.py")
    for rel, src in tasks.reference.items():
        if not (dpaths.root / src).is_file():
            raise InputError(f"{spec_file}: key reference.{rel}: {dpaths.root / src} does not exist")
    needs_weak = any(k.start is StartPoint.WEAK for k in tasks.kinds.values())
    if needs_weak and (tasks.weak is None or not (dpaths.root / tasks.weak).is_dir()):
        raise InputError(f"{spec_file}: key weak: a kind starts from the weak variant but "
                         f"{dpaths.root / (tasks.weak or 'weak')} is not a folder")
    for which, cond in (("public", tasks.public), ("hidden", tasks.hidden)):
        for config in cond.configs:
            if config not in design.configs:
                raise InputError(f"{spec_file}: key {which}.configs: design.toml has no config {config!r}")
    design.config(tasks.config)
    for kind, targets in tasks.targets.items():
        from closer.reward import targets_from_dict
        targets_from_dict(_targets_dict(tasks.kinds[kind], targets), f"{spec_file} [targets.{kind.value}]")


def public_targets(spec: KindSpec, tasks: DesignTasks, kind: TaskKind) -> dict:
    """What the public projection (metered verify/pnr, the evaluator's public_reward) is scored
    against: the kind's gates and the objective's targets. The metered tools print only the reward
    number from it, never a target."""
    return _targets_dict(spec, tasks.targets.get(kind, []))


def _targets_dict(kind: KindSpec, targets) -> dict:
    return {"gates": {"required": list(kind.gates)},
            "targets": [t.model_dump() for t in targets]}


def design_revision(dpaths: DesignPaths, design: Design, tasks: DesignTasks) -> str:
    digest = hashlib.sha256()
    files = [*dpaths.rtl(design), dpaths.sdc(design), dpaths.root / TASKS_TOML, dpaths.root / tasks.spec]
    for path in files:
        digest.update(path.name.encode() + sha256_file(path).encode())
    return digest.hexdigest()[:16]


def skeleton(golden: Path, top: str) -> str:
    """The golden top module's ANSI header (parameters and ports) with an empty body."""
    text = golden.read_text()
    match = re.search(rf"\bmodule\s+{re.escape(top)}\b.*?\)\s*;", text, re.DOTALL)
    if match is None:
        raise InputError(f"{golden}: no ANSI-style header of module {top!r} to derive the skeleton from")
    return (f"// Interface of `{top}` (see spec.md). Implement the behaviour in this module.\n"
            f"{match.group(0)}\n\n    // TODO: implement (see spec.md)\n\nendmodule\n")


def top_file(golden: dict[str, Path], top: str) -> str:
    """The reference file that holds the top module: named after it, or the only file."""
    named = [rel for rel, src in golden.items() if Path(rel).name == f"{top}{src.suffix}"]
    if len(named) == 1:
        return named[0]
    if len(golden) == 1:
        return next(iter(golden))
    raise InputError(f"[reference]: no single file named after the top module {top!r} "
                     f"among {sorted(golden)} to derive the skeleton from")


def placeholder(rel: str, config: TaskConfig) -> str:
    """A skeleton workspace's other RTL files: compiled (task.json `rtl`), empty until used."""
    return (f"// {rel}: compiled with the other RTL files, in the order of task.json `rtl`:\n"
            f"//   {', '.join(config.rtl)}\n"
            "// Put any modules you need here (or leave it empty); keep the file.\n")


def golden_func_time(design: Design, dpaths: DesignPaths, tasks: DesignTasks, root: Path) -> float:
    """Wall time of the hidden functional tests on the golden RTL (what an evaluation's
    simulation timeout scales with), measured once per machine and design content (cached under
    <cache>/closer/golden-times/, keyed by the reference RTL, the oracle, tasks.toml and
    design.toml). The golden must pass them: a suite is never written for a design whose own
    reference fails its hidden oracle."""
    from closer.designs.fetch import cache_root

    cached = cache_root() / "golden-times" / f"{_golden_key(design, dpaths, tasks)}.json"
    try:
        return float(json.loads(cached.read_text())["golden_func_s"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    elapsed = _measure_golden(design, dpaths, tasks, root)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"golden_func_s": elapsed}) + "\n")
    tmp.replace(cached)
    return elapsed


def _golden_key(design: Design, dpaths: DesignPaths, tasks: DesignTasks) -> str:
    digest = hashlib.sha256(__version__.encode())
    for path in [*(dpaths.root / src for src in tasks.reference.values()), dpaths.root / TASKS_TOML,
                 dpaths.design_toml]:
        digest.update(path.name.encode() + sha256_file(path).encode())
    digest.update(tree_checksum(dpaths.root / tasks.oracle).encode())
    return digest.hexdigest()[:24]


def _measure_golden(design: Design, dpaths: DesignPaths, tasks: DesignTasks, root: Path) -> float:
    sources = [dpaths.root / src for src in tasks.reference.values()]
    params = {c: dict(design.config(c).parameters) for c in {tasks.config, *tasks.hidden.configs}}
    with tempfile.TemporaryDirectory(prefix="closer-golden-", dir=root if root.is_dir() else None) as tmp:
        start = time.monotonic()
        func = run_functional(sources, design.top, dpaths.root / tasks.oracle, tasks.test_module, tasks.hidden,
                              params, tasks.config, Path(tmp), timeout_s=SIM_TIMEOUT_S)
        elapsed = round(time.monotonic() - start, 3)
    if func.failed or not func.tests:
        raise InputError(f"{dpaths.root}: the golden RTL does not pass its hidden functional tests "
                         f"({func.failed} of {func.tests} failed: {'; '.join(func.errors)[:300]})")
    return elapsed


def write_task(suite: SuitePaths, design: Design, dpaths: DesignPaths, tasks: DesignTasks,
               kind: TaskKind, tier: str, golden_func_s: float | None = None) -> SuiteEntry:
    tid = task_id(design.name, kind, tier)
    paths, hidden = suite.task(tid), suite.hidden(tid)
    for folder in (paths.root, hidden.root):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    spec = tasks.kinds[kind]
    sdc_rel = f"constraints/{dpaths.sdc(design).name}"
    rtl_rel = list(tasks.reference)
    params = {c: dict(design.config(c).parameters) for c in {tasks.config, *tasks.public.configs}}
    config = TaskConfig(
        task_id=tid, suite_version=SUITE_VERSION, design=design.name, top=design.top, config=tasks.config,
        kind=kind, budget_tier=tier, rtl=rtl_rel, sdc=sdc_rel, clock_port=design.clock.port,
        clock_period_ns=design.clock.period_ns, edit_surface={p: l for p, l in spec.edit_surface.items()},
        public=kind_conditions(tasks.public, spec), test_module=tasks.test_module, flow_to=spec.flow_to,
        sdc_exceptions=spec.sdc_exceptions, design_revision=design_revision(dpaths, design, tasks), parameters=params)
    _write_workspace(paths.workspace, design, dpaths, tasks, spec, config)
    paths.manifests.mkdir()
    paths.edit_surface.write_text(json.dumps({p: l.value for p, l in spec.edit_surface.items()}, indent=2) + "\n")
    paths.config.write_text(config.model_dump_json(indent=2) + "\n")
    locked = lock_manifest(paths.workspace, config)
    paths.locked.write_text(locked.model_dump_json(indent=2) + "\n")
    tool_config = ToolConfig.model_validate(_tools_toml(config))
    paths.instruction.write_text(render_instruction(config, spec, tool_config, tasks))
    _write_hidden(hidden, design, dpaths, tasks, spec, kind, tid, golden_func_s)
    return SuiteEntry(task_id=tid, design=design.name, kind=kind, budget_tier=tier,
                      path=str(paths.root.relative_to(suite.root)), checksum=tree_checksum(paths.root),
                      hidden_checksum=tree_checksum(hidden.root))


def lock_manifest(workspace: Path, config: TaskConfig) -> LockedManifest:
    files = [FileDigest(path=rel, sha256=sha256_file(workspace / rel), size=(workspace / rel).stat().st_size)
             for rel in workspace_files(workspace) if not in_surface(rel, config.edit_surface)]
    return LockedManifest(task_id=config.task_id, files=files)


def _write_workspace(ws: Path, design: Design, dpaths: DesignPaths, tasks: DesignTasks, spec: KindSpec,
                     config: TaskConfig) -> None:
    ws.mkdir(parents=True)
    shutil.copy2(dpaths.root / tasks.spec, ws / "spec.md")
    golden = {rel: dpaths.root / src for rel, src in tasks.reference.items()}
    top_file_rel = top_file(golden, design.top)
    for rel, src in golden.items():
        dest = ws / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if spec.start is StartPoint.SKELETON:
            dest.write_text(skeleton(src, design.top) if rel == top_file_rel else placeholder(rel, config))
        elif spec.start is StartPoint.WEAK:
            weak = dpaths.root / tasks.weak / rel
            shutil.copy2(weak if weak.is_file() else src, dest)  # the weak variant replaces some files
        else:
            shutil.copy2(src, dest)
    (ws / "constraints").mkdir(exist_ok=True)
    shutil.copy2(dpaths.sdc(design), ws / config.sdc)
    if config.kind in (TaskKind.B, TaskKind.C):
        for rel, text in B_C_PHYSICAL_FILES.items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text)
    _copy_oracle(dpaths.root / tasks.oracle, ws / "tests")
    (ws / "task.json").write_text(config.model_dump_json(indent=2) + "\n")
    (ws / ".closer").mkdir()
    (ws / ".closer" / "tools.toml").write_text(tomli_w.dumps(_tools_toml(config)))
    (ws / PUBLIC_TARGETS).write_text(tomli_w.dumps(public_targets(spec, tasks, config.kind)))


def _copy_oracle(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(*ORACLE_PUBLIC_EXCLUDE))


def _tools_toml(config: TaskConfig) -> dict:
    def cmd(tool: str, timeout_s: float = 1800.0) -> dict:
        return {"commands": [["{python}", "-m", "closer.tasks.public_check", tool, "--workspace", "{workspace}",
                              "--results", "{results}", "--metrics", "{metrics}"]],
                "timeout_s": timeout_s,
                "version": ["{python}", "-m", "closer.tasks.public_versions", tool]}

    tools = {ToolClass.SIM.value: cmd("sim"), ToolClass.SYNTH.value: cmd("synth")}
    if config.flow_to == "finish":  # verify and pnr run the physical flow: the evaluator's limit
        tools[ToolClass.PNR.value] = cmd("pnr", FLOW_TIMEOUT_S + 600.0)
        tools[ToolClass.VERIFY.value] = cmd("verify", FLOW_TIMEOUT_S + 600.0)
    else:
        tools[ToolClass.VERIFY.value] = cmd("verify")

    return {
        "run": {"design": config.design, "pdk_corner": "tt_025C_1v80"},
        "budget": {"tier": config.budget_tier},
        "surface": {"include": list(config.edit_surface), "exclude": []},
        "layers": _layers(config),
        "tree": {"control_files": [Path(PUBLIC_TARGETS).name]},
        "reward": {"estimator": "closer.tasks.estimator:estimate"},
        "tools": tools,
    }


def _layers(config: TaskConfig) -> dict[str, list[str]]:
    layers: dict[str, list[str]] = {}
    for pattern, layer in config.edit_surface.items():
        layers.setdefault(layer.value, []).append(pattern)
    return layers


def render_instruction(config: TaskConfig, spec: KindSpec, tool_config: ToolConfig, tasks: DesignTasks) -> str:
    template = string.Template((repo_paths().tasks / "instruction.md.tmpl").read_text())
    budget = resolve_budget(tool_config.budget)
    surface = "\n".join(["| pattern | layer |", "|---|---|",
                         *(f"| `{p}` | {l.value} |" for p, l in config.edit_surface.items())])
    public_summary = summarize_conditions(config.public, tasks.instruction.workload_unit)
    params = ", ".join(f"{k}={v}" for k, v in config.parameters[config.config].items()) or "none"
    return template.substitute(
        task_id=config.task_id, kind_title=KIND_TITLES[config.kind], design=config.design,
        budget_tier=config.budget_tier, goal=GOALS[config.kind], top=config.top, config=config.config,
        parameters=params, surface_table=surface, public_summary=public_summary,
        gates=", ".join(spec.gates), hidden_variation=tasks.instruction.hidden_variation, tools=agent_instructions(tool_config, budget),
        sdc_commands=", ".join(f"`{c}`" for c in BASE_COMMANDS), sdc_exceptions=_sdc_exceptions(spec))


def _sdc_exceptions(spec: KindSpec) -> str:
    allowed = ", ".join(f"`{e}`" for e in spec.sdc_exceptions)
    return (f"refused except {allowed} (closer.sdc.SdcException)" if allowed
            else "refused (`set_false_path`, `set_multicycle_path`, `set_max_delay`, ...)")


def summarize_conditions(cond, workload_unit: str = "requests") -> str:
    """One line for the instruction: configs, seeds and the workload size (and the physical flow's
    corners and placer seed)."""
    parts = [f"configs {', '.join(cond.configs)}", f"seeds {', '.join(map(str, cond.seeds))}"]
    if cond.count is not None:
        parts.append(f"{cond.count} {workload_unit} each")
    if cond.workload:
        parts.append("workload " + ", ".join(f"{k}={v}" for k, v in cond.workload.items()))
    if cond.physical is not None:
        parts.append(f"STA corners {', '.join(cond.physical.corners)}, placer seed {cond.physical.place_seed}")
    return ", ".join(parts)


def kind_conditions(cond, spec: KindSpec):
    """Physical conditions only for kinds that run the physical flow."""
    return cond if spec.flow_to == "finish" else cond.model_copy(update={"physical": None})


def _write_hidden(hidden, design: Design, dpaths: DesignPaths, tasks: DesignTasks, spec: KindSpec,
                  kind: TaskKind, tid: str, golden_func_s: float | None) -> None:
    params = {c: dict(design.config(c).parameters) for c in {tasks.config, *tasks.hidden.configs}}
    cfg = HiddenConfig(task_id=tid, hidden=kind_conditions(tasks.hidden, spec), gates=list(spec.gates),
                       parameters=params, golden_func_s=golden_func_s)
    hidden.config.write_text(cfg.model_dump_json(indent=2) + "\n")
    hidden.targets.write_text(tomli_w.dumps(_targets_dict(spec, tasks.targets.get(kind, []))))
    shutil.copytree(dpaths.root / tasks.oracle, hidden.oracle,
                    ignore=shutil.ignore_patterns("__pycache__"))
    hidden.solution.mkdir()
    for rel, src in tasks.reference.items():
        dest = hidden.solution / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(dpaths.root / src, dest)
