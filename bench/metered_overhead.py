"""Benchmark: the fixed cost of the metered tools and of `closer --help`, each beside its reference.

    .venv/bin/python bench/metered_overhead.py [--runs N]

Rows (issue 27), every measurement interleaved with its reference in the same invocation so that
the shared machine's load hits both alike:

* `closer-tool status` on a started standalone workspace, median of N, against 50 ms; beside it
  `python -c pass` (the interpreter's own start) and the brokered status (the thin client). Both
  twice: through pip's console script (with site) and through the launcher that scripts/
  bootstrap.sh installs in its place (closer.launchers.nosite: `python -SI`, the cached
  status with the standard library), written here into the bench's temporary folder, beside
  `python -SI -c pass`.
* `closer-tool sim` minus the same simulator commands run bare (iverilog + vvp, in the same
  tree), median of N each, against +50 ms; standalone and through the broker, the brokered call
  also through the launcher (the client as an agent's sandbox runs it). Standalone as a user
  gets it: served by the workspace's daemon (closer.metered.daemon) that the first call started,
  its CPU read from /proc and counted with the call's; beside it the same call in-process
  ($CLOSER_TOOL_DAEMON=0: what the first call of an idle workspace costs, before it starts the
  daemon), which the cost split below takes apart.
* beside the standalone call, its floor: `python -SI` importing just the modules outside closer
  that a plain standalone tool call imports (the standard library's and msgspec's, listed by a
  child that imports closer.metered.quickcall), with no work done; `python -SI` importing msgspec
  alone (its share of that floor); and `python -SI` importing closer.metered.quickcall itself
  (the floor plus closer's own modules), so that the call's cost splits into measured parts.
* `closer --help` against 100 ms, beside `python -c pass`: pip's console script, and the launcher
  bootstrap.sh writes for `closer` (the listing it carries, without click) beside `python -SI -c pass`.

First the checkout's bytecode is compiled, as scripts/bootstrap.sh does (this machine's
environment sets PYTHONDONTWRITEBYTECODE: without it every process compiles what it imports).

The child processes run the checkout this script is in (PYTHONPATH). Results go to
docs/perf-metered.json and docs/perf-metered.md, with the load average and versions.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from closer import __version__  # noqa: E402
from closer.launchers.nosite import write_launcher  # noqa: E402
from closer.metered import daemon  # noqa: E402
from closer.metered.broker import Broker  # noqa: E402
from closer.metered.paths import WorkspacePaths  # noqa: E402
from closer.quickcli import site_packages  # noqa: E402
from closer.toolchain import write_bytecode  # noqa: E402
from tests.metered_helpers import make_workspace, tool_config  # noqa: E402

GOALS_MS = {"status": 50.0, "sim_overhead": 50.0, "help": 100.0}
PYTHON = str(ROOT / ".venv" / "bin" / "python")
CLOSER_TOOL = str(ROOT / ".venv" / "bin" / "closer-tool")
CLOSER = str(ROOT / ".venv" / "bin" / "closer")


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLOSER_BROKER", "CLOSER_WORKSPACE")}
    env["PYTHONPATH"] = str(ROOT)
    return {**env, **extra}


Sample = tuple[float, float]  # (wall ms, CPU ms of the child processes)


def _cpu_s() -> float:
    """This process's CPU time (its broker thread serves the brokered calls) and its children's."""
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_CHILDREN),
                                                  resource.getrusage(resource.RUSAGE_SELF)))


def timed(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> Sample:
    """One run; a failing command stops the bench (nothing is measured wrong)."""
    before = _cpu_s()
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env or child_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
    wall_ms = (time.perf_counter() - start) * 1000
    cpu_ms = (_cpu_s() - before) * 1000
    if done.returncode != 0:
        sys.exit(f"bench: {' '.join(argv)} exited {done.returncode}:\n{done.stdout.decode(errors='replace')}")
    return wall_ms, cpu_ms


def interleaved(runs: int, cases: dict[str, Callable[[], Sample]]) -> dict[str, list[Sample]]:
    """Each case once per round, in turn, so both sides see the same load."""
    samples: dict[str, list[Sample]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, case in cases.items():
            samples[name].append(case())
    return samples


def summary(values: list[Sample]) -> dict:
    walls = [wall for wall, _ in values]
    return {"median_ms": round(statistics.median(walls), 1), "min_ms": round(min(walls), 1),
            "max_ms": round(max(walls), 1), "cpu_median_ms": round(statistics.median(c for _, c in values), 1),
            "runs": len(values)}


def daemon_pids(ws: WorkspacePaths) -> list[int]:
    return daemon.running_pids(str(ws.control))


def _proc_cpu_s(pid: int) -> float:
    """A process's own user + system time (its children run through closer.procs are waited for by
    it: their time is in its children's fields, counted too)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def daemon_served(ws: WorkspacePaths, argv: list[str]) -> Callable[[], Sample]:
    """A standalone call as a user gets it: the first starts the workspace's daemon (a warm-up, not
    sampled); each sample counts the daemon's CPU (not a child of the bench) with the client's."""
    env = child_env(CLOSER_TOOL_DAEMON="1")
    timed(argv, cwd=ws.root, env=env)
    deadline = time.monotonic() + 30
    while not (daemon_pids(ws) and list(ws.control.glob("broker-*.sock"))):
        if time.monotonic() > deadline:
            sys.exit("bench: the standalone call started no daemon")
        time.sleep(0.05)

    def case() -> Sample:
        pids = daemon_pids(ws)
        before = sum(_proc_cpu_s(pid) for pid in pids)
        wall, cpu = timed(argv, cwd=ws.root, env=env)
        return wall, cpu + (sum(_proc_cpu_s(pid) for pid in pids) - before) * 1000

    return case


def stop_daemons(ws: WorkspacePaths) -> None:
    for pid in daemon_pids(ws):
        try:
            os.kill(pid, 15)
        except ProcessLookupError:
            pass


def bare_sim(ws: WorkspacePaths, work: Path) -> Callable[[], float]:
    """The sim class's own commands, run directly in a copy of the workspace's tree."""
    tree = work / "bare"
    shutil.copytree(ws.root, tree, ignore=shutil.ignore_patterns(".closer", "results"))
    out = tree / "out"
    out.mkdir()
    compile_argv = ["iverilog", "-g2012", "-o", str(out / "sim.vvp"), "rtl/counter.v", "tb/counter_tb.v"]
    run_argv = ["vvp", "-n", str(out / "sim.vvp")]

    def case() -> Sample:
        (compile_wall, compile_cpu), (run_wall, run_cpu) = timed(compile_argv, cwd=tree), timed(run_argv, cwd=tree)
        return compile_wall + run_wall, compile_cpu + run_cpu

    return case


def call_imports() -> list[str]:
    """The modules outside closer that the launcher's process imports for a plain tool call."""
    code = ("import sys; sys.path[:0] = [sys.argv[1]]; from closer.quickcli import site_packages; "
            "sys.path.extend(site_packages()); before = set(sys.modules); import closer.metered.quickcall; "
            "print(' '.join(sorted(m for m in sys.modules if m not in before and m.split('.')[0] != 'closer')))")
    done = subprocess.run([PYTHON, "-SI", "-c", code, str(ROOT)], capture_output=True, text=True, check=True)
    return done.stdout.split()


def measure(runs: int, work: Path) -> dict:
    config = tool_config(None, budget={"sim": "uncapped", "wall_s": 10 * 86400.0})
    ws = make_workspace(work / "ws", config)
    served_ws = make_workspace(work / "ws-daemon", config)
    brokered_ws = make_workspace(work / "ws-brokered", config)
    in_process = child_env(CLOSER_TOOL_DAEMON="0")
    socket_path = work / "broker.sock"
    broker = Broker(brokered_ws, socket_path).start()
    via_broker = child_env(CLOSER_BROKER=str(socket_path))
    python_pass = lambda: timed([PYTHON, "-c", "pass"])  # noqa: E731
    launcher = str(write_launcher(work / "closer-tool", PYTHON))
    modules = call_imports()
    floor = (f"import sys; sys.path.extend({site_packages()!r}); import " + ", ".join(modules))
    msgspec_only = f"import sys; sys.path.extend({site_packages()!r}); import msgspec"
    call_modules = (f"import sys; sys.path[:0] = [{str(ROOT)!r}]; sys.path.extend({site_packages()!r}); "
                    "import closer.metered.quickcall")
    closer_launcher = str(write_launcher(work / "closer", PYTHON, command="closer"))
    try:
        status = interleaved(runs, {
            "python -c pass": python_pass,
            "closer-tool status": lambda: timed([CLOSER_TOOL, "status"], cwd=ws.root, env=in_process),
            "closer-tool status (brokered)": lambda: timed([CLOSER_TOOL, "status"], cwd=brokered_ws.root,
                                                           env=via_broker),
            "python -SI -c pass": lambda: timed([PYTHON, "-SI", "-c", "pass"]),
            "launcher status": lambda: timed([launcher, "status"], cwd=ws.root, env=in_process),
            "launcher status (brokered)": lambda: timed([launcher, "status"], cwd=brokered_ws.root, env=via_broker),
        })
        sim = interleaved(runs, {
            "bare iverilog + vvp": bare_sim(ws, work),
            "closer-tool sim": daemon_served(served_ws, [CLOSER_TOOL, "sim"]),
            "closer-tool sim, in-process": lambda: timed([CLOSER_TOOL, "sim"], cwd=ws.root, env=in_process),
            "closer-tool sim (brokered)": lambda: timed([CLOSER_TOOL, "sim"], cwd=brokered_ws.root,
                                                        env=via_broker),
            "launcher sim (brokered)": lambda: timed([launcher, "sim"], cwd=brokered_ws.root, env=via_broker),
            "python -SI + the call's imports": lambda: timed([PYTHON, "-SI", "-c", floor]),
            "python -SI + msgspec": lambda: timed([PYTHON, "-SI", "-c", msgspec_only]),
            "python -SI + closer.metered.quickcall": lambda: timed([PYTHON, "-SI", "-c", call_modules]),
            "python -SI -c pass": lambda: timed([PYTHON, "-SI", "-c", "pass"]),
        })
        helps = interleaved(runs, {
            "python -c pass": python_pass,
            "closer --help": lambda: timed([CLOSER, "--help"]),
            "python -SI -c pass": lambda: timed([PYTHON, "-SI", "-c", "pass"]),
            "launcher --help": lambda: timed([closer_launcher, "--help"]),
        })
    finally:
        broker.stop(wait_s=60)
        stop_daemons(served_ws)
    return {"status": status, "sim": sim, "help": helps, "call_imports": modules}


def rows(samples: dict) -> list[dict]:
    """Each row by wall time (the goal's measure) and by CPU time, the children's and the bench
    process's own (what the load inflates least: on a machine busier than its CPUs, wall time is
    mostly waiting; the brokered calls are served by a thread of this process)."""
    med = {group: {name: statistics.median(wall for wall, _ in v) for name, v in cases.items()}
           for group, cases in samples.items()}
    cpu = {group: {name: statistics.median(c for _, c in v) for name, v in cases.items()}
           for group, cases in samples.items()}
    bare = ("sim", "bare iverilog + vvp")
    measured = [  # (row, (group, case), goal, reference (group, case), subtract the reference)
        ("closer-tool status", ("status", "closer-tool status"), GOALS_MS["status"], ("status", "python -c pass"), False),
        ("closer-tool status (brokered)", ("status", "closer-tool status (brokered)"), GOALS_MS["status"],
         ("status", "python -c pass"), False),
        ("closer-tool status, launcher (cached)", ("status", "launcher status"), GOALS_MS["status"],
         ("status", "python -SI -c pass"), False),
        ("closer-tool status, launcher (brokered)", ("status", "launcher status (brokered)"), GOALS_MS["status"],
         ("status", "python -SI -c pass"), False),
        ("closer-tool sim over bare", ("sim", "closer-tool sim"), GOALS_MS["sim_overhead"], bare, True),
        ("closer-tool sim (brokered) over bare", ("sim", "closer-tool sim (brokered)"), GOALS_MS["sim_overhead"],
         bare, True),
        ("closer-tool sim, launcher (brokered) over bare", ("sim", "launcher sim (brokered)"),
         GOALS_MS["sim_overhead"], bare, True),
        ("closer --help", ("help", "closer --help"), GOALS_MS["help"], ("help", "python -c pass"), False),
        ("closer --help, launcher", ("help", "launcher --help"), GOALS_MS["help"], ("help", "python -SI -c pass"),
         False),
    ]
    out = []
    for name, (group, case), goal, (ref_group, ref_case), over in measured:
        wall = med[group][case] - (med[ref_group][ref_case] if over else 0.0)
        cpu_ms = cpu[group][case] - (cpu[ref_group][ref_case] if over else 0.0)
        out.append({"row": name, "measured_ms": round(wall, 1), "goal_ms": goal,
                    "ratio_to_goal": round(wall / goal, 2), "meets_goal": wall <= goal,
                    "cpu_ms": round(cpu_ms, 1), "cpu_ratio_to_goal": round(cpu_ms / goal, 2),
                    "reference": ref_case, "reference_ms": round(med[ref_group][ref_case], 1),
                    "reference_cpu_ms": round(cpu[ref_group][ref_case], 1)})
    return out


def provenance(load_before: tuple[float, float, float]) -> dict:
    def first_line(argv: list[str]) -> str:
        done = subprocess.run(argv, capture_output=True, text=True)
        return (done.stdout or done.stderr).strip().splitlines()[0] if (done.stdout or done.stderr).strip() else "?"

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    changed = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                             capture_output=True, text=True)
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "closer_version": __version__, "git_commit": (commit.stdout.strip() or "?") + (" with uncommitted changes" if changed.stdout.strip() else ""),
        "python": sys.version.split()[0], "iverilog": first_line(["iverilog", "-V"]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus (shared)",
        "load_average_1min_before": round(load_before[0], 2),
        "load_average_1min_after": round(os.getloadavg()[0], 2),
        "bytecode": bytecode_state(),
    }


def bytecode_state() -> str:
    """How many of closer's modules have bytecode at least as new as their source."""
    sources = sorted((ROOT / "closer").rglob("*.py"))
    compiled = [s for s in sources if (pyc := Path(importlib.util.cache_from_source(str(s)))).exists()
                and pyc.stat().st_mtime >= s.stat().st_mtime]
    return f"{len(compiled)} of {len(sources)} closer modules have current .pyc"


def markdown(result: dict) -> str:
    p = result["provenance"]
    lines = ["# Metered tools' fixed cost and `closer --help`", "",
             "Written by `bench/metered_overhead.py` (do not edit by hand). Medians of "
             f"{result['runs']} runs, each interleaved with its reference.", "",
             "| row | measured (wall) | goal | ratio to goal | meets | CPU | CPU / goal | reference (wall, CPU) |",
             "|---|---:|---:|---:|:-:|---:|---:|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['row']} | {r['measured_ms']} ms | {r['goal_ms']:g} ms | {r['ratio_to_goal']} | "
                     f"{'yes' if r['meets_goal'] else 'no'} | {r['cpu_ms']} ms | {r['cpu_ratio_to_goal']} | "
                     f"{r['reference']}: {r['reference_ms']} ms, {r['reference_cpu_ms']} ms |")
    lines += ["", "All samples (ms): wall median / min / max, and the CPU time (median) of the children and of "
              "the bench process (whose broker thread serves the brokered calls) or, for the standalone call served by the workspace's daemon, the daemon's.", "",
              "| case | median | min | max | CPU |", "|---|---:|---:|---:|---:|"]
    for cases in result["samples"].values():
        for name, s in cases.items():
            lines.append(f"| {name} | {s['median_ms']} | {s['min_ms']} | {s['max_ms']} | {s['cpu_median_ms']} |")
    sim = result["samples"]["sim"]
    if "python -SI + the call's imports" in sim:
        floor, bare = sim["python -SI + the call's imports"], sim["bare iverilog + vvp"]
        call = sim["closer-tool sim, in-process"]
        lines += ["", f"The in-process standalone call's floor: `python -SI` importing only the {len(result['call_imports'])} "
                  f"modules outside closer that a plain standalone call imports (the standard library's and "
                  f"msgspec's; no pydantic, no click) takes {floor['median_ms']} ms ({floor['cpu_median_ms']} ms "
                  f"CPU), before closer's own modules and any work: {round(floor['median_ms'] / GOALS_MS['sim_overhead'], 2)} "
                  f"of the +{GOALS_MS['sim_overhead']:g} ms goal. That call is {call['median_ms']} ms "
                  f"({call['cpu_median_ms']} ms CPU) against the bare tools' {bare['median_ms']} ms: "
                  f"{round(call['median_ms'] - bare['median_ms'] - floor['median_ms'], 1)} ms over tools + floor "
                  "(closer's modules, the call's files, the process wrappers of closer.procs, the tree). "
                  "It is what the first plain call of an idle workspace costs; it starts the workspace's daemon, "
                  "which serves the calls after it (the `closer-tool sim over bare` row)."]
        if "python -SI + closer.metered.quickcall" in sim:
            lines += ["", *cost_split(sim)]
    lines += ["", f"Measured {p['date']} at commit {p['git_commit']} (closer {p['closer_version']}), Python "
              f"{p['python']}, {p['iverilog']}, {p['machine']}; 1-minute load average "
              f"{p['load_average_1min_before']} before, {p['load_average_1min_after']} after; bytecode: "
              f"{p['bytecode']}. The brokered rows serve the call from a broker thread in the bench "
              "process without the tool sandbox (bubblewrap needs root)."]
    if p["load_average_1min_before"] > (os.cpu_count() or 1):
        lines += ["", f"The load average was above the {os.cpu_count()} CPUs: wall times include waiting for a CPU "
                  "(see the reference rows, measured in the same rounds, and the CPU column)."]
    lines.append("")
    return "\n".join(lines)


def cost_split(sim: dict) -> list[str]:
    """The standalone call's CPU time over the bare tools, in parts measured in the same rounds:
    the interpreter's start, msgspec's import, the other modules outside closer, closer's own
    modules, and what is left (the call's work, its process wrappers and the setpriv probe)."""
    cpu = {name: s["cpu_median_ms"] for name, s in sim.items()}
    start = cpu["python -SI -c pass"]
    parts = [
        ("the interpreter's start (`python -SI -c pass`)", start),
        ("msgspec and what it imports (typing, enum, re, datetime, decimal, uuid, inspect, ...)",
         cpu["python -SI + msgspec"] - start),
        ("the other modules outside closer (pathlib, shutil, subprocess, tomllib, json, dataclasses, ...)",
         cpu["python -SI + the call's imports"] - cpu["python -SI + msgspec"]),
        ("closer's own modules (their code, their dataclasses and msgspec Structs)",
         cpu["python -SI + closer.metered.quickcall"] - cpu["python -SI + the call's imports"]),
        ("the call's work: files, snapshot, tree, record, the wrappers (setpriv, sh) and the setpriv probe",
         cpu["closer-tool sim, in-process"] - cpu["bare iverilog + vvp"] - cpu["python -SI + closer.metered.quickcall"]),
    ]
    total = cpu["closer-tool sim, in-process"] - cpu["bare iverilog + vvp"]
    lines = [f"Where the in-process standalone call's {total:.1f} ms of CPU over the bare tools go (medians of "
             "the same rounds, each part the difference of two measured cases; the goal is "
             f"{GOALS_MS['sim_overhead']:g} ms):", "", "| part | CPU (ms) |", "|---|---:|"]
    lines += [f"| {name} | {ms:.1f} |" for name, ms in parts]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="folder for perf-metered.json/.md")
    args = parser.parse_args()
    write_bytecode(ROOT, PYTHON)
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="metered-overhead-"))
    try:
        samples = measure(args.runs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    modules = samples.pop("call_imports")
    result = {"runs": args.runs, "rows": rows(samples), "call_imports": modules,
              "samples": {g: {n: summary(v) for n, v in cases.items()} for g, cases in samples.items()},
              "provenance": provenance(load_before)}
    for r in result["rows"]:
        print(f"{r['row']:40s} {r['measured_ms']:8.1f} ms  goal {r['goal_ms']:5.0f} ms  ratio {r['ratio_to_goal']:5.2f}"
              f"  CPU {r['cpu_ms']:7.1f} ms ratio {r['cpu_ratio_to_goal']:5.2f}"
              f"  ({r['reference']} {r['reference_ms']:.1f} ms, CPU {r['reference_cpu_ms']:.1f} ms)")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "perf-metered.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "perf-metered.md").write_text(markdown(result))


if __name__ == "__main__":
    main()
