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
NODE_FILES = ("inputs", "sc_manifest.tcl", "sta_config.tcl", "sdc", "macros")


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


# The set-up run, in a child: run_flow with each node's tool run recorded as it happens (the
# command, and a copy of its node folder as the tool left it), in order; the list goes to
# <out>/bare-nodes/order.json.
_SETUP = """
import json, shutil, sys
from pathlib import Path
import closer.flow.direct.specs as specs
import closer.flow.runner as runner
out, design, nodes = Path(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
ran, tool_run = [], specs.run

def tracked_run(command, log, *args, **kwargs):
    done = tool_run(command, log, *args, **kwargs)
    node = Path(command.cwd).parent.name
    if node in nodes:
        dest = out / "bare-nodes" / f"{len(ran):02d}-{node}"
        shutil.copytree(command.cwd, dest, symlinks=True)
        ran.append([node, str(dest), list(command.argv)])
    return done

specs.run = tracked_run
runner.run_flow(design, to="sta", out=out)
(out / "bare-nodes" / "order.json").write_text(json.dumps(ran))
"""


def _setup_run(design: str, out: Path) -> tuple[float, list[tuple[str, Path, list[str]]]]:
    """The set-up run's wall time and the tool runs it made, in order (node, copy of its folder,
    command)."""
    wall, _ = _timed([sys.executable, "-c", _SETUP, str(out), design, ",".join(BARE_NODES)], out.parent, _env())
    ran = json.loads((out / "bare-nodes" / "order.json").read_text())
    return wall, [(node, Path(folder), argv) for node, folder, argv in ran]


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
    """The CPU seconds the run's tools took, as each node recorded them: every node run of a cold
    run, the synthesis attempts set aside included (the direct engine's node.json, `exe_cpu_s`;
    a SiliconCompiler-engine baseline's tool_cpu.json, closer.flow.tool_cpu)."""
    from closer.flow.direct.node import NODE_RECORD, read_record
    from closer.flow.tool_cpu import TOOL_CPU_FILE, tool_cpu_s

    direct = [read_record(path.parent) for path in run_dir.rglob(NODE_RECORD)]
    return (sum(r.exe_cpu_s or 0.0 for r in direct if r is not None)
            + sum(tool_cpu_s(path.parent) or 0.0 for path in run_dir.rglob(TOOL_CPU_FILE)))


def _node_overheads(run_dir: Path) -> dict[str, float | None]:
    """Per node: the node's time minus the time inside its tool (flow.json)."""
    record = json.loads((run_dir / "flow.json").read_text())
    return {s["name"]: (round(s["wall_s"] - s["exe_s"], 3)
                        if s["wall_s"] is not None and s["exe_s"] is not None else None)
            for s in record["steps"]}


# (label, file suffix, function name) of the cProfile entries whose cumulative time is reported
IMPORTS = "imports (closer, pydantic, click, pyslang, ...)"
KEYS, ELABORATE = "node keys (hashing what each node reads)", "elaboration (pyslang, in the flow's process)"
PREPARE, METRICS = "synthesis and STA inputs (manifest, SDC, STA config)", "metrics and records"
WAIT = "waiting for the tools (their run, not the flow's)"
PHASES = ((IMPORTS, "<frozen importlib._bootstrap>", "_find_and_load"),
          (KEYS, "closer/flow/direct/node.py", "node_key"),
          (ELABORATE, "closer/flow/direct/elaborate.py", "elaborate"),
          (PREPARE, "closer/flow/direct/synth.py", "prepare_synthesis"),
          (PREPARE, "closer/flow/direct/sta.py", "write_sta_inputs"),
          (METRICS, "closer/flow/runner.py", "_write_metrics"),
          (WAIT, "closer/procs.py", "_wait"))


def _profile_phases(design: str, out: Path) -> dict[str, float]:
    """Seconds of each PHASES entry (cumulative, this process) in one cold flow run under cProfile."""
    import pstats

    prof = out.with_suffix(".prof")
    argv = [sys.executable, "-m", "cProfile", "-o", str(prof), *_flow_argv(design, out)[1:]]
    _timed(argv, out.parent, _env())
    stats = pstats.Stats(str(prof)).stats  # (file, line, name) -> (cc, nc, tt, ct, callers)
    phases = {"total (the flow process under cProfile)": max(v[3] for v in stats.values())}
    for label, suffix, name in PHASES:
        phases[label] = round(phases.get(label, 0.0) + sum(
            v[3] for (file, _, func), v in stats.items() if func == name and file.endswith(suffix)), 3)
    return phases


def _cells(run_dir: Path) -> int:
    return int(json.loads((run_dir / "metadata.json").read_text())["synth__design__instance__count"])


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def bench_design(design: str, rounds: int, repeat: int, baseline: Path | None) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"closer-flow-times-{design}-") as tmp_name:
        tmp = Path(tmp_name)
        setup_wall, commands = _setup_run(design, tmp / "setup")
        setup = FlowPaths(tmp / "setup", design)
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
    goal = GOAL_LARGE if cells >= LARGE_CELLS else GOAL_SMALL
    result = {"design": design, "cells": cells, "goal_ratio": goal,
              "setup_run_wall_s": round(setup_wall, 3), "rounds": rounds,
              "commands": [[node, shlex.join(argv)] for node, _, argv in commands],
              "netlist_byte_identical": True,
              "reuse_run_wall_s": [round(w, 3) for w, _ in reuse],
              "reuse_run_cpu_s": [round(c, 3) for _, c in reuse],
              "reuse_goal_s": REUSE_GOAL_S, "profiled_phases_s": phases}
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
              "same run, as each node recorded it (`exe_cpu_s` in flow.json: the direct engine's node.json, "
              "or closer.flow.tool_cpu for a baseline on SiliconCompiler); "
              "the paired ratio is (bare CPU + the flow's own CPU) / bare CPU, medians. The tools' "
              "time varies between runs by more than a 5 % goal (the bare leg's rounds below), so the "
              "ratios of the legs' medians can fall on either side of it by chance; the paired ratio "
              "removes the variation of the flow's own tool runs. A row meets its goal when its paired "
              "ratio does. A baseline checkout that records no tool CPU has no paired ratio."]
    lines += ["", "Per round (s): " + "; ".join(
        f"{r['design']} bare CPU {r['bare']['cpu_s']}, flow CPU {r['flow']['cpu_s']}, flow's tools "
        f"{r['flow'].get('tools_cpu_s', '–')}" for r in results)]
    lines += ["", "Per node, the node's time minus the time in its tool (s, median; a baseline on "
              "SiliconCompiler: its task time minus the tool's):", ""]
    for r in results:
        for leg in ("flow", "baseline"):
            if leg in r:
                nodes = r[leg]["node_overhead_s"]
                medians = {n: _median([o[n] for o in nodes if o[n] is not None]) for n in nodes[0]}
                lines.append(f"- {r['design']} {leg}: " + ", ".join(f"{n} {v}" for n, v in medians.items()))
    for r in results:
        if "profiled_phases_s" in r:
            lines += ["", f"Where a cold {r['design']} flow process spends its time (one more run under cProfile, "
                      "cumulative seconds, profiler overhead included; the tools run in child processes):", "",
                      "| phase | s |", "|---|---:|"]
            lines += [f"| {label} | {round(value, 3)} |" for label, value in r["profiled_phases_s"].items()]
            if all(label in r["profiled_phases_s"] for label, _, _ in PHASES):  # this bench's phases
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
            f"The flow runs on the direct engine (closer.flow.direct): no SiliconCompiler schema, "
            f"scheduler or node processes. In its process, imports take {phases[IMPORTS]} s, the "
            f"node keys {phases[KEYS]} s, elaboration {phases[ELABORATE]} s, writing the tools' "
            f"inputs {phases[PREPARE]} s and the metrics {phases[METRICS]} s; the nodes' own time "
            f"beside their tools sums to {per_node:.2f} s (flow.json).")


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
