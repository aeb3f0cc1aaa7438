"""Running `closer design check` and `calibrate`: load the folder, run the stages with progress
lines, append the check record; the stages themselves are in closer.designs.check."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from closer.designs import calibrate, check
from closer.designs.checkrecord import CheckRecord, append_record, content_checksum, now_utc
from closer.designs.model import load_design
from closer.errors import InputError
from closer.tasks.models import load_design_tasks

Progress = Callable[[str], None]
TASKS_TOML = "tasks.toml"


@contextmanager
def _context(name: str, keep: Path | None, ignore_targets: bool = False):
    design, dpaths = load_design(name)
    tasks_path = dpaths.root / TASKS_TOML
    if ignore_targets:  # calibrate writes them; they need not exist yet
        from closer.tasks.models import DesignTasks
        from closer.tomlio import load_toml_model

        tasks = load_toml_model(tasks_path, DesignTasks, "{path} does not exist: the design has no tasks")
    else:
        tasks = load_design_tasks(tasks_path)
    with check.scratch(design.name) as tmp:
        work = Path(tmp)
        try:
            yield check.CheckContext(design, dpaths, tasks, work)
        finally:
            if keep is not None:
                shutil.copytree(work, keep, dirs_exist_ok=True, symlinks=True)


def check_design(name: str, quick: bool = False, keep: Path | None = None,
                 progress: Progress = lambda _: None, jobs: int = 1) -> tuple[CheckRecord, Path]:
    started = now_utc()
    with _context(name, keep, ignore_targets=quick) as ctx:
        ctx.jobs = jobs
        checksum = content_checksum(ctx.dpaths, ctx.tasks)
        stages = check.QUICK_STAGES if quick else check.FULL_STAGES
        outcomes = []
        progress(f"design check {ctx.design.name} ({ctx.dpaths.root}): {len(stages)} stages")
        begin = time.monotonic()
        descriptions = {"lint": "Verilator lint of golden and weak", "oracle": "oracle vs skeleton, golden, weak",
                        "mutants": "mutant generation and kill ratio", "tasks": "generating A, B, C (low)",
                        "weak": "the weak variant on B (full flow)"}

        def announce(name: str) -> None:
            progress(f"  ... {name}: {descriptions.get(name, 'the oracle agent on ' + name[-1] + ' (hidden conditions)')}")

        try:
            stage_begin = begin
            for i, outcome in enumerate(check.run_stages(ctx, stages, announce), 1):
                outcomes.append(outcome)
                done = time.monotonic()
                progress(f"[{i}/{len(stages)}] {outcome.stage:<8} {'ok  ' if outcome.ok else 'FAIL'} "
                         f"{outcome.detail} ({done - stage_begin:.0f} s; {done - begin:.0f} s in all)")
                stage_begin = done
        finally:
            ctx.drain()
        if content_checksum(ctx.dpaths, ctx.tasks) != checksum:
            raise InputError(f"{ctx.dpaths.root}: the design folder changed while it was checked; check again")
    passed = all(o.ok for o in outcomes) and len(outcomes) == len(stages)
    record = CheckRecord(design=ctx.design.name, folder=str(ctx.dpaths.root), content_checksum=checksum,
                         started_at=started, finished_at=now_utc(), complete=not quick and passed,
                         passed=passed, stages=outcomes)
    return record, append_record(record)


def calibrate_design(name: str, margin: float, keep: Path | None = None,
                     progress: Progress = lambda _: None, jobs: int = 1) -> tuple[Path, list[calibrate.Measured]]:
    with _context(name, keep, ignore_targets=True) as ctx:
        ctx.jobs = jobs
        if ctx.tasks.targets_file is None:
            raise InputError(f"{ctx.dpaths.root / TASKS_TOML}: key targets_file: not set; calibrate "
                             "writes the file it names (e.g. targets_file = \"task-targets.toml\")")
        target_path = ctx.dpaths.root / ctx.tasks.targets_file
        progress(f"calibrate {ctx.design.name}: golden and weak RTL on A (synthesis) and B (full flow)")
        try:
            measured = calibrate.measure(ctx)
        finally:
            ctx.drain()
    text = calibrate.targets_text(measured, margin, ctx.design.name)
    return calibrate.write_targets(target_path, text), measured
