"""The flow's own overhead: cold `closer flow run DESIGN --to sta` against the same lint, Yosys
and OpenSTA commands run bare, interleaved in one invocation; then the reuse run.

Goals (issue 27): the cold flow at most 1.3x its bare commands on gcd and 1.05x on designs of
5k cells and more (PicoRV32); the second, unchanged run below 3 s with every node reused.

Per design: one set-up run (it fills the flow cache, closer.flow.cache, as any first run on a
machine does, and its node folders give the bare commands their inputs), then `--rounds` rounds
of [bare commands, cold flow CLI in a new folder] (order alternating), each a separate process,
timed by wall and by CPU (this process's children: what the time would be on an idle machine).
The bare commands are the ones SiliconCompiler ran (`replay.sh --command`), each in a copy of its
node folder's inputs as the set-up run left it at that node's end: every node run of the flow,
so a design whose first ABC script misses its delay target (closer.flow.synth_choice: synthesis
and STA run again with the restructured script) has both attempts' commands in its bare leg, as
the flow runs both. The last bare netlist must be byte-identical to the flow's. `--baseline-src DIR`
adds a third leg per round: the flow CLI of another checkout of closer (e.g. `git archive` of
the commit before a change), so before and after are measured under the same load.

Each node of a flow run records its tool's CPU time (closer.flow.tool_cpu): the flow's own CPU in
a round is its CPU minus its tools', and a row's figure is the paired ratio (bare CPU median +
the flow's own CPU median) / bare CPU median, which the tools' run-to-run variation (larger than
a 5 % goal on this machine) does not move; the ratios of the legs' medians are reported beside it.

    .venv/bin/python bench/flow_times.py [--designs gcd,picorv32] [--rounds 3] [--repeat 3]
                                         [--baseline-src DIR --baseline-label TEXT]

Last, one more cold run under cProfile says where the flow process's own time goes (`PHASES`:
imports, the project's build, SiliconCompiler's scheduler before and around the nodes, its path
resolvers), beside the per-node overhead that flow.json records.

Writes docs/flow-times.json and docs/flow-times.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from closer.flow.paths import FlowPaths
from closer.paths import repo_paths
from closer.toolchain import use_venv_tools, write_bytecode

GOAL_SMALL, GOAL_LARGE, LARGE_CELLS = 1.3, 1.05, 5000
REUSE_GOAL_S = 3.0
BARE_NODES = ("lint", "synth", "sta")     # elaborate runs pyslang inside Python: no command
NODE_FILES = ("inputs", "sc_manifest.tcl", "sta_config.tcl", "sdc")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one command, which must succeed."""
    cpu, start = _children_cpu_s(), time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"bench: {shlex.join(argv)} (in {cwd}) failed:\n{proc.stdout[-2000:]}")
    return wall, _children_cpu_s() - cpu


def _flow_argv(design: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "closer", "flow", "run", design, "--to", "sta", "--out", str(out)]


def _env(src: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src or repo_paths().root)
    return env


# The set-up run, in a child: run_flow with each project run's bare nodes copied when they ran
# (their output manifest rewritten), in order; the list goes to <out>/bare-nodes/order.json.
_SETUP = """
import json, shutil, sys
from pathlib import Path
import closer.flow.runner as runner
from closer.flow.paths import FlowPaths
out, design, nodes = Path(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
flow, ran, build = FlowPaths(out, design), [], runner.build_project

def stamp(node):
    return sorted((p.name, p.stat().st_mtime_ns) for p in (flow.node_dir(node) / "outputs").glob("*.pkg.json"))

def tracked_build(*args, **kwargs):  # the project class's run, wrapped once (the project is pickled)
    project = build(*args, **kwargs)
    cls = type(project)
    if not getattr(cls.run, "tracked", False):
        run = cls.run
        def tracked_run(self, *a, **k):
            before = {n: stamp(n) for n in nodes}
            try:
                return run(self, *a, **k)
            finally:
                for n in nodes:
                    if stamp(n) != before[n]:
                        dest = out / "bare-nodes" / f"{len(ran):02d}-{n}"
                        shutil.copytree(flow.node_dir(n), dest, symlinks=True)
                        ran.append([n, str(dest)])
        tracked_run.tracked = True
        cls.run = tracked_run
    return project

runner.build_project = tracked_build
runner.run_flow(design, to="sta", out=out)
(out / "bare-nodes" / "order.json").write_text(json.dumps(ran))
"""


def _setup_run(design: str, out: Path) -> tuple[float, list[tuple[str, Path]]]:
    """The set-up run's wall time and the bare nodes it ran, in order (node, copy of its folder)."""
    wall, _ = _timed([sys.executable, "-c", _SETUP, str(out), design, ",".join(BARE_NODES)], out.parent, _env())
    ran = json.loads((out / "bare-nodes" / "order.json").read_text())
    return wall, [(node, Path(folder)) for node, folder in ran]


def _node_commands(nodes: list[tuple[str, Path]]) -> list[tuple[str, Path, list[str]]]:
    commands = []
    for node, folder in nodes:
        printed = subprocess.run(["bash", str(folder / "replay.sh"), "--command"], capture_output=True,
                                 text=True, check=True).stdout
        commands.append((node, folder, shlex.split(printed.strip())))
    return commands


def _bare_run(commands: list[tuple[str, Path, list[str]]], work: Path) -> tuple[float, float, Path]:
    """Each node run's command in a fresh copy of its inputs: (wall, CPU, the last netlist)."""
    wall = cpu = 0.0
    netlist = None
    for number, (node, source, argv) in enumerate(commands):
        dest = work / f"{number:02d}-{node}"
        dest.mkdir(parents=True)
        for name in NODE_FILES:
            if (source / name).is_dir():
                shutil.copytree(source / name, dest / name)
            elif (source / name).is_file():
                shutil.copy2(source / name, dest / name)
        (dest / "outputs").mkdir()
        (dest / "reports").mkdir()
        node_wall, node_cpu = _timed(argv, dest, _env())
        wall, cpu = wall + node_wall, cpu + node_cpu
        if node == "synth":
            netlist = next((dest / "outputs").glob("*.vg"))
    assert netlist is not None, "the flow ran no synthesis node"
    return wall, cpu, netlist


def _tools_cpu_s(run_dir: Path) -> float:
    """The CPU seconds the run's tools took, as each node recorded them (closer.flow.tool_cpu):
    every node run of a cold run, the synthesis attempts set aside included."""
    from closer.flow.tool_cpu import TOOL_CPU_FILE, tool_cpu_s

    return sum(tool_cpu_s(path.parent) or 0.0 for path in run_dir.rglob(TOOL_CPU_FILE))


def _node_overheads(run_dir: Path) -> dict[str, float | None]:
    """Per node: SiliconCompiler's task time minus the time inside the tool (flow.json)."""
    record = json.loads((run_dir / "flow.json").read_text())
    return {s["name"]: (round(s["wall_s"] - s["exe_s"], 3)
                        if s["wall_s"] is not None and s["exe_s"] is not None else None)
            for s in record["steps"]}


# (label, file suffix, function name) of the cProfile entries whose cumulative time is reported
IMPORTS, BUILD = "imports (closer, SiliconCompiler, their packages)", "build_project (closer.flow.project)"
CHECKS, RESOLVERS = "scheduler: tool checks before the nodes", "path resolvers (find_resolver, all calls)"
PHASES = ((IMPORTS, "<frozen importlib._bootstrap>", "_find_and_load"), (BUILD, "closer/flow/project.py", "build_project"),
          (CHECKS, "siliconcompiler/scheduler/scheduler.py", "__check_tool_versions"),
          (RESOLVERS, "siliconcompiler/package/__init__.py", "find_resolver"),
          ("waiting for the node processes (waitpid)", "~", "<built-in method posix.waitpid>"))


def _profile_phases(design: str, out: Path) -> dict[str, float]:
    """Seconds of each PHASES entry (cumulative, this process) in one cold flow run under cProfile."""
    import pstats

    prof = out.with_suffix(".prof")
    argv = [sys.executable, "-m", "cProfile", "-o", str(prof), *_flow_argv(design, out)[1:]]
    _timed(argv, out.parent, _env())
    stats = pstats.Stats(str(prof)).stats  # (file, line, name) -> (cc, nc, tt, ct, callers)
    phases = {"total (the flow process under cProfile)": max(v[3] for v in stats.values())}
    for label, suffix, name in PHASES:
        phases[label] = round(sum(v[3] for (file, _, func), v in stats.items()
                                  if func == name and file.endswith(suffix)), 3)
    return phases


# What a front half without SiliconCompiler would still import in its process: the design model,
# the SDC reader, the metrics module and pyslang for elaboration.
FLOOR_IMPORTS = "import closer.designs.model, closer.sdc, closer.flow.metrics, pyslang"


def _import_floor_cpu_s(repeat: int = 5) -> float:
    """Median CPU seconds of a Python process that only makes FLOOR_IMPORTS."""
    return _median([_timed([sys.executable, "-c", FLOOR_IMPORTS], repo_paths().root, _env())[1]
                    for _ in range(repeat)])


def _cells(run_dir: Path) -> int:
    return int(json.loads((run_dir / "metadata.json").read_text())["synth__design__instance__count"])


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def bench_design(design: str, rounds: int, repeat: int, baseline: Path | None) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"closer-flow-times-{design}-") as tmp_name:
        tmp = Path(tmp_name)
        setup_wall, bare_nodes = _setup_run(design, tmp / "setup")
        setup = FlowPaths(tmp / "setup", design)
        commands = _node_commands(bare_nodes)
        legs: dict[str, dict[str, list]] = {"bare": {}, "flow": {}}
        if baseline is not None:
            legs["baseline"] = {}
        for leg in legs.values():
            leg.update(wall_s=[], cpu_s=[], node_overhead_s=[], tools_cpu_s=[])
        for number in range(rounds):
            order = list(legs) if number % 2 == 0 else list(reversed(legs))
            for leg in order:
                out = tmp / f"{leg}-{number}"
                if leg == "bare":
                    wall, cpu, netlist = _bare_run(commands, out)
                else:
                    wall, cpu = _timed(_flow_argv(design, out), tmp,
                                       _env(baseline if leg == "baseline" else None))
                    legs[leg]["node_overhead_s"].append(_node_overheads(out))
                    legs[leg]["tools_cpu_s"].append(round(_tools_cpu_s(out), 3))
                legs[leg]["wall_s"].append(round(wall, 3))
                legs[leg]["cpu_s"].append(round(cpu, 3))
            flow_netlist = next((FlowPaths(tmp / f"flow-{number}", design).node_dir("synth")
                                 / "outputs").glob("*.vg"))
            if flow_netlist.read_bytes() != netlist.read_bytes():
                raise SystemExit(f"bench: {design}: the bare Yosys netlist differs from the flow's "
                                 f"({netlist} vs {flow_netlist})")
        reuse = [_timed(_flow_argv(design, tmp / "flow-0"), tmp, _env()) for _ in range(repeat)]
        cells = _cells(setup.root)
        phases = _profile_phases(design, tmp / "profiled")
        floor = _import_floor_cpu_s()
    goal = GOAL_LARGE if cells >= LARGE_CELLS else GOAL_SMALL
    result = {"design": design, "cells": cells, "goal_ratio": goal,
              "setup_run_wall_s": round(setup_wall, 3), "rounds": rounds,
              "commands": [[node, shlex.join(argv)] for node, _, argv in commands],
              "netlist_byte_identical": True,
              "reuse_run_wall_s": [round(w, 3) for w, _ in reuse],
              "reuse_run_cpu_s": [round(c, 3) for _, c in reuse],
              "reuse_goal_s": REUSE_GOAL_S, "profiled_phases_s": phases,
              "import_floor_cpu_s": floor}
    for leg, times in legs.items():
        result[leg] = {**times, "wall_s_median": _median(times["wall_s"]),
                       "cpu_s_median": _median(times["cpu_s"])}
    for leg in ("flow", "baseline"):
        if leg in legs:
            result[f"{leg}_over_bare_wall"] = round(
                result[leg]["wall_s_median"] / result["bare"]["wall_s_median"], 3)
            result[f"{leg}_over_bare_cpu"] = round(
                result[leg]["cpu_s_median"] / result["bare"]["cpu_s_median"], 3)
    # The flow's own CPU in each round: its CPU minus what its tools took in that same run. The
    # tools' time varies from run to run by more than the goals allow (picorv32's bare leg took
    # 20.5 to 26.0 s in one invocation), so ratios of the legs' medians can land on either side of
    # a 5 % goal by chance; the bare median plus the flow's own median cannot.
    for leg in ("flow", "baseline"):
        if leg in legs and all(t > 0 for t in legs[leg]["tools_cpu_s"]):
            own = [round(c - t, 3) for c, t in zip(legs[leg]["cpu_s"], legs[leg]["tools_cpu_s"])]
            result[leg]["own_cpu_s"] = own
            result[leg]["own_cpu_s_median"] = _median(own)
            result[f"{leg}_paired_ratio"] = round(
                (result["bare"]["cpu_s_median"] + _median(own)) / result["bare"]["cpu_s_median"], 3)
    result["meets_goal"] = result["flow_paired_ratio"] <= goal
    return result


def _report(results: list[dict]) -> str:
    lines = ["# Flow overhead: `closer flow run DESIGN --to sta` against its bare tool commands", "",
             "Written by `bench/flow_times.py` (interleaved rounds in one invocation; medians; "
             "CPU = the processes' own CPU time, what the wall time would be on an idle machine).",
             "", "| design | cells | bare wall s | flow wall s | wall ratio | bare CPU s | "
             "flow CPU s | CPU ratio | flow's own CPU s | paired ratio (goal) | "
             "baseline wall / CPU / paired ratio | reuse run s | meets goal |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        baseline = (f"{r['baseline_over_bare_wall']} / {r['baseline_over_bare_cpu']} / "
                    f"{r.get('baseline_paired_ratio', '–')}" if "baseline" in r else "–")
        lines.append(
            f"| {r['design']} | {r['cells']} | {r['bare']['wall_s_median']} | "
            f"{r['flow']['wall_s_median']} | {r['flow_over_bare_wall']} | "
            f"{r['bare']['cpu_s_median']} | {r['flow']['cpu_s_median']} | "
            f"{r['flow_over_bare_cpu']} | {r['flow'].get('own_cpu_s_median', '–')} | "
            f"{r.get('flow_paired_ratio', '–')} (≤ {r['goal_ratio']}) | {baseline} | "
            f"{statistics.median(r['reuse_run_wall_s']):.2f} | "
            f"{'yes' if r['meets_goal'] else 'no'} |")
    lines += [""] + [
        f"- {r['design']}: {r['rounds']} rounds, {r['machine']['cpus']} CPUs, load average "
        f"{r['machine']['loadavg_1m_start']} at start and {r['machine']['loadavg_1m_end']} at the "
        f"end, measured {r['machine']['measured_utc']}; the bare leg runs the flow's node runs "
        f"({', '.join(c[0] if isinstance(c, list) else c for c in r['commands'])})"
        + (f"; the baseline leg is {r['baseline_label']}" if "baseline_label" in r else "")
        for r in results]
    lines += ["", "The flow's own CPU is, per round, the flow's CPU minus the CPU its tools took in that "
              "same run, as each node recorded it (closer.flow.tool_cpu, `exe_cpu_s` in flow.json); "
              "the paired ratio is (bare CPU + the flow's own CPU) / bare CPU, medians. The tools' "
              "time varies between runs by more than a 5 % goal (the bare leg's rounds below), so the "
              "ratios of the legs' medians can fall on either side of it by chance; the paired ratio "
              "removes the variation of the flow's own tool runs. A row meets its goal when its paired "
              "ratio does. A baseline checkout that records no tool CPU has no paired ratio."]
    lines += ["", "Per round (s): " + "; ".join(
        f"{r['design']} bare CPU {r['bare']['cpu_s']}, flow CPU {r['flow']['cpu_s']}, flow's tools "
        f"{r['flow'].get('tools_cpu_s', '–')}" for r in results)]
    lines += ["", "Per node, SiliconCompiler's task time minus the time in the tool (s, median):", ""]
    for r in results:
        for leg in ("flow", "baseline"):
            if leg in r:
                nodes = r[leg]["node_overhead_s"]
                medians = {n: _median([o[n] for o in nodes if o[n] is not None]) for n in nodes[0]}
                lines.append(f"- {r['design']} {leg}: " + ", ".join(f"{n} {v}" for n, v in medians.items()))
    for r in results:
        if "profiled_phases_s" in r:
            lines += ["", f"Where a cold {r['design']} flow process spends its time (one more run under cProfile, "
                      "cumulative seconds, profiler overhead included; the nodes run in child processes):", "",
                      "| phase | s |", "|---|---:|"]
            lines += [f"| {label} | {round(value, 3)} |" for label, value in r["profiled_phases_s"].items()]
            lines += ["", _why(r)]
    return "\n".join(lines) + "\n"


def _why(r: dict) -> str:
    """What the measured phases say about the goal (the figures are this run's)."""
    phases = r["profiled_phases_s"]
    over = r["flow"].get("own_cpu_s_median", r["flow"]["cpu_s_median"] - r["bare"]["cpu_s_median"])
    nodes = r["flow"]["node_overhead_s"]
    per_node = sum(_median([o[n] for o in nodes if o[n] is not None]) for n in nodes[0])
    room = r["bare"]["cpu_s_median"] * (r["goal_ratio"] - 1)
    return (f"Why {r['design']} is {'within' if r['meets_goal'] else 'not within'} its goal: the flow costs "
            f"{over:.2f} s of CPU of its own beside its tools, where the goal leaves {room:.2f} s. "
            f"In the flow's own process, imports take {phases[IMPORTS]} s (SiliconCompiler's schema "
            f"and tool modules, pyslang for the elaborate node), building the project "
            f"{phases[BUILD]} s (SiliconCompiler's schema: every parameter of the PDK, library, "
            f"flow and tasks is a schema object), the scheduler's checks before the nodes "
            f"{phases[CHECKS]} s and its path resolvers {phases[RESOLVERS]} s (each lookup "
            "re-enters the resolver registry under its multiprocessing manager's lock); each node "
            f"then runs in a forked process whose setup and bookkeeping add {per_node:.2f} s over "
            "the tool's own time (flow.json). Already cut: the version checks, the Liberty "
            "preparation and the package records are cached (closer.flow.cache); the flow's process "
            "registers only SiliconCompiler's local path resolvers and imports what each node would "
            "(closer.flow.sc_process); the lint node no longer loads the physical flow; the elaborate "
            "node writes no source banners and the synthesis node no hierarchical cell-area report "
            "(nothing reads either). What remains is "
            "SiliconCompiler's own cost per run and per node (its schema, its forked node processes "
            "and their bookkeeping), not the tools' work, and it stays while the flow runs on SiliconCompiler."
            + (f" For comparison, a Python process making only the imports a front half without "
               f"SiliconCompiler would still need (`{FLOOR_IMPORTS}`) takes {r['import_floor_cpu_s']} s "
               f"of CPU, {'within' if r['import_floor_cpu_s'] <= room else 'beyond'} the room the goal leaves."
               if "import_floor_cpu_s" in r else ""))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--designs", default="gcd", help="comma-separated design names")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved cold rounds per design")
    parser.add_argument("--repeat", type=int, default=3, help="reuse runs to time")
    parser.add_argument("--baseline-src", type=Path, default=None,
                        help="another closer checkout to time beside this one (before/after)")
    parser.add_argument("--baseline-label", default=None,
                        help="what the baseline checkout is (e.g. `git archive` of commit X), for the report")
    args = parser.parse_args()
    use_venv_tools()   # the bare commands find the same launchers the flow's nodes do
    for src in filter(None, (repo_paths().root, args.baseline_src)):
        write_bytecode(Path(src))
    docs = repo_paths().docs
    for design in args.designs.split(","):
        load_start = os.getloadavg()[0]
        result = bench_design(design, args.rounds, args.repeat, args.baseline_src)
        if args.baseline_src is not None:
            result["baseline_label"] = args.baseline_label or str(args.baseline_src)
        result["machine"] = {"cpus": os.cpu_count(), "loadavg_1m_start": round(load_start, 2),
                             "loadavg_1m_end": round(os.getloadavg()[0], 2),
                             "python": platform.python_version(),
                             "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        print(f"{design} ({result['cells']} cells): bare {result['bare']['wall_s_median']} s, "
              f"flow {result['flow']['wall_s_median']} s wall -> {result['flow_over_bare_wall']}x "
              f"(goal <= {result['goal_ratio']}x: {'met' if result['meets_goal'] else 'NOT met'}); "
              f"CPU {result['flow_over_bare_cpu']}x"
              + (f"; baseline {result['baseline_over_bare_wall']}x" if args.baseline_src else "")
              + f"; reuse runs {result['reuse_run_wall_s']} s")
        _write(docs, result)
    print(f"wrote {docs / 'flow-times.json'} and {docs / 'flow-times.md'}")


def _write(docs: Path, result: dict) -> None:
    """Replace this design's entry in docs/flow-times.json (the others stay), rewrite the .md."""
    path = docs / "flow-times.json"
    try:
        designs = json.loads(path.read_text()).get("designs", [])
    except (OSError, ValueError, AttributeError):
        designs = []
    designs = [d for d in designs if isinstance(d, dict) and "bare" in d
               and d.get("design") != result["design"]] + [result]
    path.write_text(json.dumps({"designs": designs}, indent=1) + "\n")
    (docs / "flow-times.md").write_text(_report(designs))

if __name__ == "__main__":
    main()
