"""The flow on designs of increasing size, and on designs it was not tuned for: each row is one
`closer flow run DESIGN_FOLDER` at the default flow settings (the design's own `[physical]` table
only, as any design sets it), from an empty run directory (nothing reused).

Everything in the report is read from what the flow wrote, never recomputed here: metadata.json
(the verdict, the official deck per rule, antenna, LVS, provenance), the pnr node's
`phys/steps.json` (each closer.physical step in the order it ran, nested ones included, with its
wall and CPU time and its metrics: the sign-off STA's WNS/TNS/skew per corner after every
(re)route, the hold repair's and each setup-repair round's OpenSTA before/after) and flow.json
(wall time per flow node). CPU is the flow process tree's user + sys (getrusage of the waited
children). Writes docs/flow-scaling.md and docs/flow-scaling.json; a row not re-run keeps its
`measured` label (commit, date).
Run: .venv/bin/python bench/flow_scaling.py [names...] [--work DIR]; --report-only rewrites the page.
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import json
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from closer.flow.paths import FlowPaths  # noqa: E402
from closer.flow.verdict import verdict  # noqa: E402
from closer.pdk import pdk  # noqa: E402

# mac16's own folder holds its RTL; the macN rows instantiate it once per lane
MAC16_RTL = ROOT / "bench" / "designs" / "mac16" / "rtl" / "mac16.v"
MACN_RTL = """
module macN #(parameter N = 2) (input wire clk, input wire rst, input wire en,
              input wire [15:0] a, input wire [15:0] b, output wire [39:0] y);
    wire [40*N-1:0] accs;
    genvar i;
    generate for (i = 0; i < N; i = i + 1) begin : lane
        mac16 m (.clk(clk), .rst(rst), .en(en), .a(a ^ (16'h1234 * i)), .b(b + i), .acc(accs[40*i +: 40]));
    end endgenerate
    // fold the lanes so every lane is observable
    reg [39:0] fold;
    integer k;
    always @(*) begin fold = 0; for (k = 0; k < N; k = k + 1) fold = fold ^ accs[40*k +: 40]; end
    assign y = fold;
endmodule
"""

SDC = """create_clock -name core_clock -period {period} [get_ports clk]
set_input_delay 1.0 -clock core_clock [delete_from_list [all_inputs] [get_ports clk]]
set_output_delay 1.0 -clock core_clock [all_outputs]
set_load 0.005 [all_outputs]
"""

DESIGN_TOML = """[design]
name = "{name}"
top = "{top}"
description = "bench/flow_scaling.py row {name}"

[sources]
rtl = ["rtl/{top}.v"]
include_dirs = []

[clock]
port = "clk"
period_ns = {period}

[constraints]
sdc = "constraints/{top}.sdc"

[configs.default]
parameters = {{ {params} }}
{physical}"""


@dataclass(frozen=True)
class Case:
    """One row: where its design folder comes from and what the row says it is."""

    kind: str                 # "folder" (a design folder, copied), "rtl" (an RTL file or the MAC text)
    source: str               # REPO:<path>, PDK:<path> or INLINE
    top: str
    period_ns: float
    shape: str
    params: dict = field(default_factory=dict)
    weak: bool = False        # gcd's task-B start: the weak RTL in gcd's folder
    physical: str = ""        # the design's own [physical] table (as a design.toml sets it)
    config: str = "default"   # the named config of design.toml the run takes (--config)
    fetch: bool = False       # upstream RTL: `closer design fetch` the folder before the run


# mac16 is a design folder (bench/designs/mac16: its 20 ns clock and its core_utilization 0.20 are
# explained in its design.toml); mac16x2 / mac16x4 set core_utilization 0.20 as it does (at the
# flow's default 0.30 mac16 left 36-47 nets unrouted: docs/physical.md, "Density") and its 20 ns
# clock (at 10 ns mac16x2 signed off everything but setup at ss, -4.485 ns: the multiplier's path
# is longer than 10 ns there, and the flow sizes and buffers but does not restructure logic);
# they are issue 19's (3k-7k cells) and are not run by default.
DESIGNS: dict[str, Case] = {
    "counter8": Case("rtl", "PDK:smoke/counter.v", "counter", 5.0, "8-bit counter (PDK smoke test)"),
    "gcd": Case("folder", "REPO:designs/gcd", "gcd", 10.0, "16-bit GCD, golden RTL"),
    "gcd_5ns": Case("folder", "REPO:designs/gcd", "gcd", 5.0, "gcd at twice its clock"),
    "gcd_weak": Case("folder", "REPO:designs/gcd", "gcd", 10.0, "task B's start (weak RTL)", weak=True),
    "mac16": Case("folder", "REPO:bench/designs/mac16", "mac16", 20.0, "16x16 MAC, 40-bit accumulator"),
    "crc_lfsr": Case("folder", "REPO:designs/crc_lfsr", "crc_lfsr", 5.0, "unseen: CRC-32 + LFSR, async reset"),
    "alu_rf": Case("folder", "REPO:bench/designs/alu_rf", "alu_rf", 10.0, "unseen: ALU + 8x16 register file"),
    "pwm_bank": Case("folder", "REPO:bench/designs/pwm_bank", "pwm_bank", 5.0, "unseen: 8 PWM channels, wide enables"),
    "mac16x2": Case("rtl", "INLINE", "macN", 20.0, "2 MAC lanes (issue 19)", {"N": 2},
                    physical="\n[physical]\ncore_utilization = 0.2\n"),
    "mac16x4": Case("rtl", "INLINE", "macN", 20.0, "4 MAC lanes (issue 19)", {"N": 4},
                    physical="\n[physical]\ncore_utilization = 0.2\n"),
    "picorv32": Case("folder", "REPO:designs/picorv32", "picorv32", 10.0, "RV32I core, upstream RTL (issue 19)",
                     fetch=True),
    "firdma_small": Case("folder", "REPO:designs/firdma", "firdma", 20.0, "AXI DMA + 4-tap FIR, flop buffer (issue 19)",
                         config="small"),
    "firdma_full": Case("folder", "REPO:designs/firdma", "firdma", 20.0,
                        "AXI DMA + 16-tap FIR, SRAM macro buffer (issue 19)", config="full"),
}
DEFAULT_ROWS = ["counter8", "gcd", "gcd_5ns", "gcd_weak", "crc_lfsr", "alu_rf", "pwm_bank", "mac16"]
CORNERS = ("ss_100C_1v60", "tt_025C_1v80", "ff_n40C_1v95")


def _source(spec: str) -> Path:
    kind, rel = spec.split(":", 1)
    return (pdk().root if kind == "PDK" else ROOT) / rel


def _set_period(folder: Path, top_sdc: Path, period: float) -> None:
    toml = folder / "design.toml"
    toml.write_text(re.sub(r"(?m)^period_ns = .*$", f"period_ns = {period}", toml.read_text()))
    top_sdc.write_text(re.sub(r"-period \S+", f"-period {period}", top_sdc.read_text()))


def make_folder(name: str, work: Path) -> Path:
    """The row's design folder under `work` (a copy: the bench never edits the repo's designs)."""
    case = DESIGNS[name]
    src = _source(case.source) if case.source != "INLINE" else None
    folder = work / (src.name if case.kind == "folder" else name)  # the folder is named as the design
    shutil.rmtree(folder, ignore_errors=True)
    if case.kind == "folder":
        shutil.copytree(src, folder, ignore=shutil.ignore_patterns("weak"))
        if case.weak:
            shutil.copyfile(src / "weak" / "rtl" / f"{case.top}.v", folder / "rtl" / f"{case.top}.v")
        sdc = next((folder / "constraints").glob("*.sdc"))
        if f"period_ns = {case.period_ns}" not in (folder / "design.toml").read_text():
            _set_period(folder, sdc, case.period_ns)
        return folder
    (folder / "rtl").mkdir(parents=True)
    (folder / "constraints").mkdir()
    rtl = MAC16_RTL.read_text() + MACN_RTL if src is None else src.read_text()
    (folder / "rtl" / f"{case.top}.v").write_text(rtl)
    (folder / "constraints" / f"{case.top}.sdc").write_text(SDC.format(period=case.period_ns))
    params = ", ".join(f"{k} = {v}" for k, v in case.params.items())
    (folder / "design.toml").write_text(DESIGN_TOML.format(name=name, top=case.top, period=case.period_ns,
                                                           params=params, physical=case.physical))
    return folder


def _commit() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %cs"], capture_output=True, text=True)
    # the flow's code and platform; the bench's own files (report code, its design folders) are not the flow
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "closer", "pdk"],
                           capture_output=True, text=True).stdout.strip()
    return done.stdout.strip() + (" + uncommitted flow changes" if dirty else "")


def _physical_table(folder: Path) -> str:
    """The `[physical]` table of the row's design.toml as TOML text ('' when it sets none): a folder
    row's settings are its own file's, an inline row's are what make_folder wrote."""
    table = tomllib.loads((folder / "design.toml").read_text()).get("physical")
    return tomli_w.dumps({"physical": table}).strip() if table else ""


def run_one(name: str, work: Path, timeout_s: float = 4 * 3600) -> dict:
    """One `closer flow run` of the row's folder from an empty run directory; the row's numbers."""
    work.mkdir(parents=True, exist_ok=True)
    folder = make_folder(name, work)
    out = work / "run"
    shutil.rmtree(out, ignore_errors=True)
    design = re.search(r'(?m)^name = "([^"]+)"', (folder / "design.toml").read_text()).group(1)
    measured = f"{_commit()}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"  # at the start
    case = DESIGNS[name]
    if case.fetch:
        subprocess.run([sys.executable, "-m", "closer", "design", "fetch", design], check=True, cwd=ROOT,
                       capture_output=True, text=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "closer", "flow", "run", str(folder), "--config", case.config,
                           "--out", str(out)],
                          capture_output=True, text=True, timeout=timeout_s, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    row: dict = {"design": name, "shape": case.shape, "clock_ns": case.period_ns,
                 "physical": _physical_table(folder), "run_dir": str(out),
                 "wall_s": round(time.monotonic() - t0, 1),
                 "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
                 "exit": done.returncode, "last_line": (done.stdout.strip().splitlines() or [""])[-1],
                 "measured": measured}
    paths = FlowPaths(out, design)
    if done.returncode != 0 or not paths.metadata.is_file():
        row["error"] = (done.stderr.strip().splitlines() or ["(no output)"])[-1][:300]
        return row
    row["metrics"] = json.loads(paths.metadata.read_text())
    row["steps"] = json.loads((paths.node_dir("pnr") / "phys" / "steps.json").read_text())
    row["nodes"] = json.loads(paths.record.read_text()).get("steps", [])
    _draw_congestion(row, paths)
    return row


def _draw_congestion(row: dict, paths: FlowPaths) -> None:
    """The placement's RUDY map (closer.physical.place.congestion) of the run, drawn for the page,
    with the points where the router's searches for the nets it left unrouted failed."""
    phys = paths.node_dir("pnr") / "phys"
    estimate = phys / "congestion.json"
    if estimate.is_file():
        from closer.physical.place import congestion

        unrouted_json = phys / "route" / "unrouted.json"
        failed = json.loads(unrouted_json.read_text()).get("fell_through_um", {}) if unrouted_json.is_file() else {}
        picture = ROOT / "docs" / "img" / f"congestion-{row['design']}.png"
        congestion.write_png(congestion.read_json(estimate), picture, f"{row['design']} after placement",
                             {n: tuple(xy) for n, xy in failed.items()})
        row["congestion_png"] = str(picture.relative_to(ROOT / "docs"))


def congestion_section(rows: list[dict]) -> list[str]:
    """The placements' congestion maps (RUDY demand over track supply per GCell)."""
    drawn = [r for r in rows if r.get("congestion_png")]
    if not drawn:
        return []
    lines = ["", "## Congestion after placement (RUDY)", "",
             "Per GCell (5 rows square), the larger direction's RUDY wire demand over the tracks met1-met4 put "
             "through it (closer.physical.place.congestion; above 1: more wire than tracks).", ""]
    for r in drawn:
        m = r.get("metrics", {})
        lines += [f"- {r['design']}: peak {m.get('closer__place__congestion__peak')}, "
                  f"{m.get('closer__place__congestion__over_one')} of {m.get('closer__place__congestion__gcells')} "
                  f"GCells over 1{_inflation_note(m)}", "", f"![congestion {r['design']}]({r['congestion_png']})", ""]
    return lines


def _inflation_note(m: dict) -> str:
    """What the routability rounds (closer.physical.place.inflation) did, when any ran."""
    rounds = m.get("closer__place__inflation__rounds")
    if not rounds:
        return ""
    return (f"; inflation above {m['closer__place__inflation__target']}: {rounds} rounds, kept round "
            f"{m['closer__place__inflation__kept_round']}, overflow {m['closer__place__inflation__overflow_before']} → "
            f"{m['closer__place__inflation__overflow_after']} (peak before {m['closer__place__inflation__peak_before']})")


# --- report -----------------------------------------------------------------------------------

def _fmt(v, nd=3):
    if v is None:
        return "–"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def _corner_triplet(m: dict, key: str, nd: int = 3) -> str:
    """`ss / tt / ff` of `key.format(c=corner)`."""
    return " / ".join(_fmt(m.get(key.format(c=c)), nd) for c in CORNERS)


def _sta_line(label: str, m: dict) -> str:
    ws = _corner_triplet(m, "finish__timing__setup__ws__corner__{c}")
    tns = _corner_triplet(m, "finish__timing__setup__tns__corner__{c}")
    hws = _corner_triplet(m, "finish__timing__hold__ws__corner__{c}")
    htns = _corner_triplet(m, "finish__timing__hold__tns__corner__{c}")
    drv = " / ".join(f"{m.get(f'finish__timing__drv__max_slew__corner__{c}', '–')},"
                     f"{m.get(f'finish__timing__drv__max_cap__corner__{c}', '–')}" for c in CORNERS)
    skew = _corner_triplet(m, "closer__cts__skew__{c}", 4)
    ins = _corner_triplet(m, "closer__cts__insertion_delay__{c}", 4)
    return f"| {label} | {ws} | {tns} | {hws} | {htns} | {drv} | {skew} | {ins} |"


def _note(label: str, text: str) -> str:
    return f"| {label} | {text} | | | | | | |"


def _problems(m: dict) -> str:
    return (f"{m.get('closer__route__unrouted_nets', '–')} unrouted, {m.get('closer__signoff__drc__errors', '–')} "
            f"Closer-deck DRC, LVS {m.get('closer__signoff__lvs__opens', '–')} open / "
            f"{m.get('closer__signoff__lvs__shorts', '–')} short")


def _sizing_row(label: str, m: dict, key: str, extra: str) -> str:
    """A sizing round's own OpenSTA before → after (`label` opens the parenthesis `extra` closes)."""
    return (f"| {label}, before → after; resized {m[key + '__resized']}, of them for max-slew/cap "
            f"{m.get(key + '__drv_resized', 0)}{extra}) | {_fmt(m[key + '__ws_before'])} → {_fmt(m[key + '__ws_after'])} "
            f"| {_fmt(m[key + '__tns_before'])} → {_fmt(m[key + '__tns_after'])} | | | | | |")


def step_points(steps: list[dict]) -> list[str]:
    """One table row per repair step and per sign-off STA, in the order the flow ran them."""
    setup = next((s["metrics"] for s in steps if s["step"] == "SetupRepair"), {})
    # RoutedSetupRepair's own STA runs are listed before it (a nested step ends first)
    routed_at = next((i for i, s in enumerate(steps) if s["step"] == "RoutedSetupRepair"), -1)
    routed = steps[routed_at]["metrics"] if routed_at >= 0 else {}
    rows, seen, sta_runs, routed_runs = [], {}, 0, 0
    for i, s in enumerate(steps):
        m, name = s["metrics"], s["step"]
        if name == "HoldRepair" and any(k.startswith("closer__hold_repair__") for k in m):
            k = "closer__hold_repair__{c}"
            rows.append(f"| HoldRepair (OpenSTA, no wires; {m.get('cts__design__instance__count__hold_buffer')} delay "
                        f"cells): before → after | | | {_corner_triplet(m, k + '__ws_before')} → "
                        f"{_corner_triplet(m, k + '__ws_after')} | {_corner_triplet(m, k + '__tns_before')} → "
                        f"{_corner_triplet(m, k + '__tns_after')} | | | |")
        elif name in ("Replace", "ReplaceAfterRepair"):
            key = "closer__replace" if name == "Replace" else "closer__replace_signoff"
            if m.get(f"{key}__ran"):
                rows.append(_note(name, f"problems {m.get(key + '__problems_before')} → {m.get(key + '__problems_after')}, "
                                        f"{'kept' if m.get(key + '__kept') else 'not kept'}"))
        elif name == "Repair" and m.get("closer__repair__rounds"):
            rows.append(_note(f"Repair ({m['closer__repair__rounds']} rounds, {m.get('closer__repair__kept')} kept)",
                              f"{_problems(seen)} → {_problems(m)}"))
        elif name == "Antenna" and (m.get("closer__antenna__violating_nets_before_repair") or m.get("closer__antenna__repair_rounds")):
            skipped = m.get("closer__antenna__repair_skipped")  # no round while nets are unrouted
            why = f"; repair skipped: {m.get('closer__antenna__repair_skipped_unrouted_nets')} {skipped}" if skipped else ""
            rows.append(_note(f"Antenna ({m.get('closer__antenna__repair_rounds')} diode rounds{why})",
                              f"nets {m.get('closer__antenna__violating_nets_before_repair')} → "
                              f"{m.get('detailedroute__antenna__violating__nets')}, diodes "
                              f"{m.get('detailedroute__antenna_diodes_count')}"))
        elif name == "Sta" and i < routed_at:
            routed_runs += 1
            rows.append(_sta_line(f"STA on the routed layout before sign-off ({routed_runs})", m))
            for c in CORNERS:
                key = f"closer__routed_setup_repair__round{routed_runs}__{c}"
                if f"{key}__resized" in routed:
                    rows.append(_sizing_row(f"RoutedSetupRepair round {routed_runs} at {c.split('_')[0]} (OpenSTA on "
                                            "the router's SPEF", routed, key,
                                            f"; {routed.get(key + '__rerouted_nets', 0)} nets rerouted held"))
        elif name == "Sta":
            if sta_runs:
                for c in CORNERS:
                    key = f"closer__setup_repair__round{sta_runs}__{c}"
                    if f"{key}__resized" in setup:
                        rows.append(_sizing_row(f"SetupRepair round {sta_runs} at {c.split('_')[0]} (OpenSTA on its SPEF",
                                                setup, key, f", buffers {setup.get(key + '__buffers', 0)}"))
            sta_runs += 1
            rows.append(_sta_line("**sign-off STA**" + (f" after SetupRepair round {sta_runs - 1}'s reroute"
                                                        if sta_runs > 1 else ""), m))
        seen.update(m)
    return rows


def timing_section(rows: list[dict]) -> list[str]:
    lines = ["", "## Timing before and after each repair step (ns; each cell ss / tt / ff)", "",
             "Per design, the steps of `steps.json` in the order they ran (only the repair steps that did "
             "something, and every sign-off STA). Sign-off STA: OpenSTA with the routed SPEF, clocks propagated "
             "through the built tree, after all repairs and again after every setup-repair round's reroute. "
             "HoldRepair and each SetupRepair round: their own OpenSTA before → after (no wires for hold; the "
             "round's SPEF for setup). Repair, Replace and Antenna change the wiring, not the timing; their "
             "counts are shown, and the sign-off STA after them is the timing. slew,cap: max-slew and "
             "max-capacitance violating pins. Skew / insertion delay: `report_clock_skew` with the SPEF "
             "(– without a clock tree)."]
    for r in rows:
        if not r.get("steps"):
            continue
        lines += ["", f"### {r['design']}", "",
                  "| point | setup WS | setup TNS | hold WS | hold TNS | slew,cap | skew | insertion delay |",
                  "|---|---|---|---|---|---|---|---|", *step_points(r["steps"])]
    return lines


def _rules(m: dict, prefix: str, skip: tuple[str, ...]) -> str:
    found = {k.removeprefix(prefix): v for k, v in m.items()
             if k.startswith(prefix) and k.removeprefix(prefix) not in skip and not isinstance(v, (bool, str)) and v}
    return ", ".join(f"{k} {v}" for k, v in sorted(found.items(), key=lambda kv: -kv[1])) or "none"


def _lvs(m: dict) -> str:
    return ("clean" if m.get("closer__signoff__lvs__clean") else
            f"{m.get('closer__signoff__lvs__opens')} open / {m.get('closer__signoff__lvs__shorts')} short")


def summary_section(rows: list[dict]) -> list[str]:
    lines = ["| design | shape | clock ns | cells | area µm² | verdict | unrouted | official deck | antenna nets "
             "(before → after, diodes) | LVS | setup WS ss / tt / ff | hold WS ss / tt / ff | wall s | CPU s | measured |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = r.get("metrics")
        if not m:
            lines.append(f"| {r['design']} | {r.get('shape', '')} | {r.get('clock_ns')} | | | error: "
                         f"{r.get('error', '')[:120]} | | | | | | | {_fmt(r.get('wall_s'), 0)} | "
                         f"{_fmt(r.get('cpu_s'), 0)} | {r.get('measured', '')} |")
            continue
        v = verdict(m)
        failed = [c.name for c in v.checks if not c.passed]
        word = "PASS" if v.passed else "FAIL (" + ", ".join(failed) + ")"
        lines.append(
            f"| {r['design']} | {r['shape']} | {r['clock_ns']} | {m.get('finish__design__instance__count')} "
            f"| {_fmt(m.get('finish__design__instance__area'), 1)} | {word} | {m.get('closer__route__unrouted_nets')} "
            f"| {m.get('closer__signoff__official_drc__errors')} "
            f"| {m.get('closer__antenna__violating_nets_before_repair', '–')} → "
            f"{m.get('detailedroute__antenna__violating__nets')}, {m.get('detailedroute__antenna_diodes_count')} "
            f"| {_lvs(m)} | {_corner_triplet(m, 'finish__timing__setup__ws__corner__{c}')} "
            f"| {_corner_triplet(m, 'finish__timing__hold__ws__corner__{c}')} "
            f"| {_fmt(r['wall_s'], 0)} | {_fmt(r['cpu_s'], 0)} | {r['measured']} |")
    return lines


def signoff_section(rows: list[dict]) -> list[str]:
    lines = ["", "## Official deck per rule, Closer's deck, routing and repairs", "",
             "Official deck: sky130A_mr.drc (FEOL, BEOL, off-grid) on the final GDS, the drc gate's checker; "
             "Closer's deck: the repair loop's checker. Synthesis: the ABC script kept (closer.flow.synth_choice).",
             "", "| design | official rules checked | official rules with markers | Closer deck | router passes "
             "(failed nets) | route variants | Replace / ReplaceAfterRepair | repair rounds (kept) | clock buffers "
             "(levels) | hold cells | setup repair rounds / resized / buffers | ABC script (ps vs target) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = r.get("metrics")
        if not m:
            continue
        rep = " / ".join(
            (f"{m.get(k + '__problems_before')} → {m.get(k + '__problems_after')} "
             f"({'kept' if m.get(k + '__kept') else 'not kept'})") if m.get(k + "__ran") else "not run"
            for k in ("closer__replace", "closer__replace_signoff"))
        lines.append(
            f"| {r['design']} | {m.get('closer__signoff__official_drc__rules')} "
            f"| {_rules(m, 'closer__signoff__official_drc__', ('errors', 'rules', 'wall_s'))} "
            f"| {_rules(m, 'closer__signoff__drc__', ('errors',))} | {m.get('closer__route__passes')} "
            f"| {m.get('closer__route__variant_best_failed_nets', '–')} | {rep} "
            f"| {m.get('closer__repair__rounds')} ({m.get('closer__repair__kept')}) "
            f"| {m.get('closer__cts__buffers')} ({m.get('closer__cts__levels')}) "
            f"| {m.get('cts__design__instance__count__hold_buffer')} "
            f"| {m.get('closer__setup_repair__rounds')} / {m.get('closer__setup_repair__resized')} / "
            f"{m.get('closer__setup_repair__buffers')} "
            f"| {m.get('closer__synth__abc_script')} ({m.get('closer__synth__abc_delays_ps_tried')} vs "
            f"{m.get('closer__synth__abc_target_ps')}) |")
    return lines


def time_section(rows: list[dict]) -> list[str]:
    """Wall / CPU per closer.physical step as steps.json has it: a step nested in another (the
    reroute's steps inside SetupRepair or Antenna) is listed where it ran and counted in its parent."""
    lines = ["", "## Time per step (s, wall / CPU)", "",
             "Flow nodes from flow.json (wall); closer.physical steps from steps.json in the order they "
             "finished (a step nested in another, e.g. the Route, Sta and Antenna of a setup-repair round, "
             "comes before its parent and is included in the parent's time; `×n`: it ran n times)."]
    for r in rows:
        if not r.get("steps"):
            continue
        nodes = ", ".join(f"{n.get('name', n.get('step'))} {_fmt(n.get('wall_s'), 1)}" for n in r.get("nodes", [])
                          if isinstance(n, dict))
        merged: dict[str, list[float]] = {}
        for s in r["steps"]:
            w = merged.setdefault(s["step"], [0.0, 0.0, 0])
            w[0] += s["wall_s"]
            w[1] += s.get("cpu_s") or 0.0
            w[2] += 1
        parts = ", ".join(f"{k} {w:.1f} / {c:.1f}" + (f" ×{n}" if n > 1 else "") for k, (w, c, n) in merged.items())
        lines += ["", f"- **{r['design']}** nodes: {nodes or '–'}", f"  - physical: {parts}"]
    return lines


def provenance(rows: list[dict]) -> list[str]:
    m = next((r["metrics"] for r in rows if r.get("metrics")), {})
    return ["Provenance (from the runs' metadata.json): tools "
            f"`{m.get('run__closer__tool_versions', '–')}`; physical `{m.get('run__flow__physical__tools', '–')}`; "
            f"corners `{m.get('run__closer__pdk_corner', '–')}`; SiliconCompiler {m.get('run__flow__siliconcompiler_version', '–')}. "
            "Each row's `measured` column is the Closer commit and time it was measured at; its design revision "
            "(`run__closer__design_revision`) is in docs/flow-scaling.json. Machine: 2 cores shared with other "
            "jobs (load average 3-12), so CPU is the comparable time."]


def write_report(rows: list[dict], out_md: Path, out_json: Path) -> None:
    out_json.write_text(json.dumps(rows, indent=1, default=str))
    lines = ["# Flow scaling and unseen designs: `closer flow run` at the default settings", "",
             "Generated by `bench/flow_scaling.py` (do not edit by hand). Each row is one `closer flow run` of a "
             "design folder from an empty run directory; every number is read from what the flow wrote "
             "(metadata.json, steps.json, flow.json). Verdict: `closer.flow.verdict` (route, official-deck DRC, "
             "LVS, antenna, setup/hold/slew/cap at ss, tt, ff).", "", *provenance(rows), "",
             *summary_section(rows), *timing_section(rows), *signoff_section(rows), *time_section(rows),
             *congestion_section(rows)]
    missing = [d for d in DESIGNS if d not in {r["design"] for r in rows}]
    if missing:
        lines += ["", f"Defined in the bench but not in this report (no finished run on this flow; see docs/flow.md for runs stopped unfinished): {', '.join(missing)} "
                  "(`.venv/bin/python bench/flow_scaling.py " + " ".join(missing) + "`)."]
    out_md.write_text("\n".join(lines) + "\n")


def _store(row: dict, out_md: Path, out_json: Path) -> None:
    """Merge one row into the report under a lock (two bench processes may finish at once)."""
    with open(Path(tempfile.gettempdir()) / "closer-flow-scaling.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows = json.loads(out_json.read_text()) if out_json.is_file() else []
        # rows of an earlier bench (no `measured` label) are dropped, not shown as today's
        rows = [r for r in rows if r["design"] != row["design"] and r["design"] in DESIGNS and "measured" in r] + [row]
        rows.sort(key=lambda r: list(DESIGNS).index(r["design"]))
        write_report(rows, out_md, out_json)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("designs", nargs="*", default=DEFAULT_ROWS)
    ap.add_argument("--work", type=Path, default=Path("/tmp/closer-flow-scaling"))
    ap.add_argument("--report-only", action="store_true", help="rewrite the page from docs/flow-scaling.json")
    args = ap.parse_args()
    out_md, out_json = ROOT / "docs" / "flow-scaling.md", ROOT / "docs" / "flow-scaling.json"
    unknown = [d for d in args.designs if d not in DESIGNS]
    if unknown:
        sys.exit(f"error: unknown design {', '.join(unknown)} (known: {', '.join(DESIGNS)})")
    if args.report_only:
        rows = json.loads(out_json.read_text()) if out_json.is_file() else []
        for row in rows:  # pictures redrawn from runs still on disk
            if row.get("congestion_png") and "run_dir" in row and "metrics" in row:
                design = row["metrics"].get("run__flow__design") or row["design"]
                _draw_congestion(row, FlowPaths(Path(row["run_dir"]), design))
        write_report([r for r in rows if r["design"] in DESIGNS and "measured" in r], out_md, out_json)
        return
    for name in args.designs:
        row = run_one(name, args.work / name)
        _store(row, out_md, out_json)
        print(name, row.get("last_line") or row.get("error"), f"wall {row['wall_s']} s, CPU {row['cpu_s']} s", flush=True)


if __name__ == "__main__":
    main()
