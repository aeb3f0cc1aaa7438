"""Where the SiliconCompiler engine's own time goes: one `run_flow(DESIGN, to=sta, engine="sc")`
in a fresh folder with the SiliconCompiler and closer functions that make up its overhead timed in
every process (the node processes are forked, so the timers reach them). The default, direct
engine's phases are in bench/flow_times.py's profile. Prints one line per call: process, function,
seconds. Run it twice to see the second (cache-warm) run; `PYTHONPATH` picks the checkout, so the
same script times a baseline checkout too.

    PYTHONPATH=. .venv/bin/python bench/flow_overhead_profile.py [--design gcd]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import tempfile
import time
from pathlib import Path

TIMED = [
    ("siliconcompiler.utils", None, "mask_credentials"),
    ("siliconcompiler.utils", None, "check_python_dependencies"),
    ("siliconcompiler.schema_support.record", "RecordSchema", "record_python_packages"),
    ("siliconcompiler.scheduler.schedulernode", "SchedulerNode", "check_version"),
    ("siliconcompiler.scheduler.schedulernode", "SchedulerNode", "_SchedulerNode__hash_files_pre_execute"),
    ("siliconcompiler.scheduler.schedulernode", "SchedulerNode", "run"),
    ("siliconcompiler.tool", "Task", "write_task_manifest"),
    ("siliconcompiler.tool", "Task", "generate_replay_script"),
    ("siliconcompiler.tool", "Task", "run_task"),
    ("siliconcompiler.project", "Project", "write_manifest"),
    ("siliconcompiler.tools.yosys.syn_asic", "_ASICTask", "_prepare_synthesis_libraries"),
    ("closer.flow.synth_task", "CloserSynthesis", "_prepare_synthesis_libraries"),
    ("closer.flow.sc_library", None, "dont_use_cells"),
    ("closer.flow.project", None, "build_project"),
]


def _wrap(log: Path, module_name: str, owner_name: str | None, name: str) -> None:
    import importlib

    module = importlib.import_module(module_name)
    owner = getattr(module, owner_name) if owner_name else module
    original = owner.__dict__.get(name) if owner_name else getattr(module, name, None)
    if original is None:
        return   # not in this checkout (a baseline without closer's override)
    label = f"{owner_name + '.' if owner_name else ''}{name.replace('_SchedulerNode__', '__')}"

    @functools.wraps(original)
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            with open(log, "a") as handle:
                handle.write(json.dumps({"pid": os.getpid(), "fn": label,
                                         "s": round(time.perf_counter() - start, 4)}) + "\n")

    setattr(owner, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--design", default="gcd")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="closer-flow-profile-") as tmp:
        log = Path(tmp) / "calls.jsonl"
        for entry in TIMED:
            _wrap(log, *entry)
        import closer.flow.project as project
        import closer.flow.runner as runner

        runner.build_project = project.build_project     # the timed one
        start = time.perf_counter()
        result = runner.run_flow(args.design, to="sta", out=Path(tmp) / "run", engine="sc")
        print(f"run_flow {time.perf_counter() - start:.3f} s; load average {os.getloadavg()[0]:.1f}")
        for step in result.steps:
            print(f"  node {step.name}: task {step.wall_s} s, in the tool {step.exe_s} s")
        main_pid = os.getpid()
        for line in log.read_text().splitlines():
            call = json.loads(line)
            if call["s"] >= 0.01:
                where = "main" if call["pid"] == main_pid else f"node {call['pid']}"
                print(f"{where:>12}  {call['fn']:<45} {call['s']:.3f} s")


if __name__ == "__main__":
    main()
