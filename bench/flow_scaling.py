"""Scaling of the physical back half (closer.physical) with design size.

Synthesizes designs of increasing size with the plain Yosys script of closer.physical.io.netlist,
runs run_physical on each, and writes docs/flow-scaling.md + docs/flow-scaling.json: cells,
time per step, router memory, unrouted nets, DRC by rule, LVS, setup/hold slack before and
after parasitics, WNS/TNS and skew before and after the hold and setup repairs.
Run: .venv/bin/python bench/flow_scaling.py [names...] [--max-passes N]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from closer.errors import CloserError  # noqa: E402
from closer.pdk import pdk  # noqa: E402
from closer.physical import PhysicalConfig, run_physical  # noqa: E402
from closer.physical.floorplan.floorplan import FloorplanConfig  # noqa: E402
from closer.physical.io.netlist import synthesize  # noqa: E402
from closer.physical.route.route import RouteConfig  # noqa: E402

MAC_RTL = """
module mac16 (input wire clk, input wire rst, input wire en,
              input wire [15:0] a, input wire [15:0] b, output reg [39:0] acc);
    reg [15:0] ra, rb;
    always @(posedge clk) begin
        if (rst) begin ra <= 0; rb <= 0; acc <= 0; end
        else begin ra <= a; rb <= b; if (en) acc <= acc + ra * rb; end
    end
endmodule
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

# name -> (rtl files or inline text, top, parameters, clock period ns, placement density).
# The density is the floorplan's cell area / core area, set per design as ORFS designs set
# CORE_UTILIZATION: mac16 at the flow's default 0.30 left 36-47 nets unrouted, at 0.20 qrouter
# completes it (docs/physical.md, "Density").
DESIGNS = {
    "counter8": ("PDK:smoke/counter.v", "counter", {}, 5.0, 0.30),
    "gcd": ("REPO:designs/gcd/rtl/gcd.v", "gcd", {}, 5.0, 0.30),
    "mac16": ("INLINE", "mac16", {}, 10.0, 0.20),
    "mac16x2": ("INLINE", "macN", {"N": 2}, 10.0, 0.20),
    "mac16x4": ("INLINE", "macN", {"N": 4}, 10.0, 0.20),
}


def rtl_files(spec: str, work: Path) -> list[Path]:
    if spec == "INLINE":
        path = work / "mac.v"
        path.write_text(MAC_RTL)
        return [path]
    kind, rel = spec.split(":", 1)
    return [(pdk().root if kind == "PDK" else ROOT) / rel]


def run_one(name: str, work: Path, max_passes: int) -> dict:
    spec, top, params, period, density = DESIGNS[name]
    work.mkdir(parents=True, exist_ok=True)
    lib = pdk().liberty("tt_025C_1v80")
    t0 = time.monotonic()
    netlist = synthesize(rtl_files(spec, work), top, lib, work / f"{top}_netlist.v", work / "synth.log", params)
    synth_s = time.monotonic() - t0
    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=period, floorplan=FloorplanConfig(density=density),
                         route=RouteConfig(max_passes=max_passes, timeout_s=1800))
    row: dict = {"design": name, "top": top, "clock_ns": period, "density": density, "synth_s": round(synth_s, 1)}
    try:
        result = run_physical(netlist, top, None, work / "phys", cfg)
        row["metrics"] = result.metrics
        row["steps"] = result.steps
    except CloserError as exc:
        row["error"] = str(exc)[:500]
    row["bench_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return row


def _fmt(v, nd=3):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


CORNERS = ("tt_025C_1v80", "ss_100C_1v60", "ff_n40C_1v95")


def _arrow(before, after, nd=3) -> str:
    return "–" if before is None and after is None else f"{_fmt(before, nd)} → {_fmt(after, nd)}"


def _repair_table(rows: list[dict]) -> list[str]:
    """WNS/TNS and skew before and after each repair step: HoldRepair (OpenSTA's hold slack per
    corner before/after the delay cells, no wires), SetupRepair (sign-off setup WS per corner before
    and after; OpenSTA's own WS/TNS of each sizing round on its SPEF), clock skew per corner."""
    lines = ["", "## Timing repair (ns): hold repair after CTS, setup repair after sign-off", "",
             "| design | hold cells | hold WS/TNS ff (before → after) | setup repair rounds / resized | "
             "setup WS tt | setup WS ss | setup WS ff | sizing rounds (corner: WS, TNS before → after) | "
             "skew tt / ss / ff |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = r.get("metrics", {})
        if "closer__setup_repair__rounds" not in m:
            continue
        ff = "closer__hold_repair__ff_n40C_1v95"
        hold = (f"{_arrow(m.get(ff + '__ws_before'), m.get(ff + '__ws_after'))}, "
                f"{_arrow(m.get(ff + '__tns_before'), m.get(ff + '__tns_after'))}")
        ws = [_arrow(m.get(f"closer__setup_repair__ws_before__{c}"), m.get(f"closer__setup_repair__ws_after__{c}"))
              for c in CORNERS]
        rounds = []
        for k in range(1, m["closer__setup_repair__rounds"] + 1):
            for c in CORNERS:
                key = f"closer__setup_repair__round{k}__{c}"
                if f"{key}__resized" in m:
                    rounds.append(f"{k} {c.split('_')[0]}: {_arrow(m[key + '__ws_before'], m[key + '__ws_after'])}, "
                                  f"{_arrow(m[key + '__tns_before'], m[key + '__tns_after'])} ({m[key + '__resized']} cells)")
        skew = " / ".join(_fmt(m.get(f"cts__clock__skew__setup__corner__{c}"), 4) for c in CORNERS)
        lines.append(f"| {r['design']} | {m.get('cts__design__instance__count__hold_buffer', '–')} | {hold} | "
                     f"{m['closer__setup_repair__rounds']} / {m['closer__setup_repair__resized']} | "
                     + " | ".join(ws) + f" | {'; '.join(rounds) or '–'} | {skew} |")
    return lines


def _lvs(m: dict) -> str:
    return ("clean" if m.get("closer__signoff__lvs__clean") else
            f"{m.get('closer__signoff__lvs__opens')} open / {m.get('closer__signoff__lvs__shorts')} short")


def write_report(rows: list[dict], out_md: Path, out_json: Path) -> None:
    out_json.write_text(json.dumps(rows, indent=1, default=str))
    lines = ["# Flow scaling: closer.physical on sky130_fd_sc_hd", "",
             "Generated by `bench/flow_scaling.py` (do not edit by hand). Real tools: Yosys (pyosys 0.70) "
             "synthesis, Closer's placer, qrouter 1.4.88 (+ Closer patches), KLayout 0.30 GDS/DRC/LVS/antenna, "
             "the official deck sky130A_mr.drc on Debian's KLayout 0.28.5, "
             "OpenSTA 2.0.17; PDK sky130A sky130_fd_sc_hd, signoff corner tt_025C_1v80. "
             "Machine: 2 shared cores.", "",
             "| design | cells | density | die µm² | place s | pin access s | route s | router peak MB | repair rounds (kept) | "
             "repair s | unrouted | DRC | LVS | setup WS tt ns (no RC → RC) | hold WS tt ns (no RC → RC) | total s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = r.get("metrics", {})
        if not m:
            lines.append(f"| {r['design']} |" + " – |" * 14 + f" error: {r.get('error', '')[:80]} |")
            continue
        st: dict[str, float] = {}
        for s in r["steps"]:  # a step run again (antenna repair) counts with both runs
            st[s["step"]] = st.get(s["step"], 0.0) + s["wall_s"]
        tt = "tt_025C_1v80"
        lvs = _lvs(m)
        lines.append(
            f"| {r['design']} | {m.get('finish__design__instance__count')} | {_fmt(r.get('density'), 2)} "
            f"| {_fmt(m.get('finish__design__die__area'), 0)} "
            f"| {_fmt(st.get('Place'), 1)} | {_fmt(st.get('PinAccess'), 1)} | {_fmt(st.get('Route'), 1)} "
            f"| {_fmt(m.get('closer__route__peak_rss_mb'), 0)} "
            f"| {m.get('closer__repair__rounds', '–')} ({m.get('closer__repair__kept', '–')}) | {_fmt(st.get('Repair'), 1)} "
            f"| {m.get('closer__route__unrouted_nets')} "
            f"| {m.get('detailedroute__route__drc_errors')} | {lvs} "
            f"| {_fmt(m.get(f'closer__timing__setup__ws__{tt}__nospef'))} → {_fmt(m.get(f'closer__timing__setup__ws__{tt}__spef'))} "
            f"| {_fmt(m.get(f'closer__timing__hold__ws__{tt}__nospef'))} → {_fmt(m.get(f'closer__timing__hold__ws__{tt}__spef'))} "
            f"| {_fmt(sum(st.values()) + r['synth_s'], 1)} |")
    lines += _repair_table(rows)
    lines += ["", "## DRC by rule", "", "| design | " + " | ".join(["rules with violations"]) + " |", "|---|---|"]
    for r in rows:
        m = r.get("metrics", {})
        rules = {k.removeprefix("closer__signoff__drc__"): v for k, v in m.items()
                 if k.startswith("closer__signoff__drc__") and k != "closer__signoff__drc__errors"
                 and not isinstance(v, bool) and v}
        lines.append(f"| {r['design']} | " + (", ".join(f"{k} {v}" for k, v in sorted(rules.items(), key=lambda kv: -kv[1])) or "none") + " |")
    lines += ["", "## Official deck (sky130A_mr.drc: FEOL, BEOL, off-grid) and antenna, final GDS", "",
              "The drc gate reads the official deck (`closer.physical.signoff.signoff_drc`); Closer's deck above is the "
              "repair loop's checker. Antenna: LEF ratios per net and layer (`closer.physical.signoff.antenna`), "
              "violations before and after diode insertion.", "",
              "| design | official total | rules checked | official rules with markers | deck s | "
              "antenna nets before repair | diodes | antenna nets after | antenna checks | worst ratio/limit | LVS |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = r.get("metrics", {})
        if "closer__signoff__official_drc__errors" not in m:
            lines.append(f"| {r['design']} | not run with the official deck |" + " – |" * 9)
            continue
        official = {k.removeprefix("closer__signoff__official_drc__"): v for k, v in m.items()
                    if k.startswith("closer__signoff__official_drc__")
                    and k.rsplit("__", 1)[1] not in ("errors", "rules", "wall_s") and v}
        lines.append(f"| {r['design']} | {m['closer__signoff__official_drc__errors']} "
                     f"| {m.get('closer__signoff__official_drc__rules', '–')} | "
                     + (", ".join(f"{k} {v}" for k, v in sorted(official.items(), key=lambda kv: -kv[1])) or "none")
                     + f" | {_fmt(m.get('closer__signoff__official_drc__wall_s'), 1)}"
                     f" | {m.get('closer__antenna__violating_nets_before_repair', '–')}"
                     f" | {m.get('detailedroute__antenna_diodes_count', '–')}"
                     f" | {m.get('detailedroute__antenna__violating__nets', '–')}"
                     f" | {m.get('closer__signoff__antenna__checks', '–')}"
                     f" | {_fmt(m.get('closer__signoff__antenna__worst_margin'), 3)} | {_lvs(m)} |")
    # step names over every row, in first-seen order (rows from older reports have fewer steps; a
    # step run twice, as after an antenna repair, is summed for time and maxed for memory)
    names = list(dict.fromkeys(s["step"] for r in rows for s in r.get("steps", [])))
    header = ["| design | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    lines += ["", "## Time per step (s)", "", *header]
    for r in rows:
        if r.get("steps"):
            wall = {n: sum(s["wall_s"] for s in r["steps"] if s["step"] == n) for n in names}
            seen = {s["step"] for s in r["steps"]}
            lines.append(f"| {r['design']} | " + " | ".join(_fmt(wall[n], 1) if n in seen else "–" for n in names) + " |")
    lines += ["", "## Memory (MB, high-water marks after each step: Python process / largest external tool)", "", *header]
    for r in rows:
        if r.get("steps"):
            last = {s["step"]: s for s in r["steps"]}
            lines.append(f"| {r['design']} | " + " | ".join(
                f"{_fmt(last[n].get('python_peak_rss_mb'), 0)} / {_fmt(last[n].get('tools_peak_rss_mb'), 0)}"
                if n in last else "–" for n in names) + " |")
    lines += ["", "Router passes (failed nets after stage1 and each stage2 pass; `capped` = rerun stopped at the best pass):", ""]
    for r in rows:
        m = r.get("metrics", {})
        if m:
            lines.append(f"- {r['design']}: {m.get('closer__route__passes')} capped at {m.get('closer__route__capped_at_pass')}")
    missing = [d for d in DESIGNS if d not in {r["design"] for r in rows}]
    if missing:
        lines += ["", f"Defined in the bench but not in this report (not run yet): {', '.join(missing)} "
                  "(`.venv/bin/python bench/flow_scaling.py " + " ".join(missing) + "`)."]
    out_md.write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("designs", nargs="*", default=list(DESIGNS))
    ap.add_argument("--max-passes", type=int, default=RouteConfig().max_passes,
                    help="stage2 passes of the first routing run (default: the flow's)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/closer-flow-scaling"))
    ap.add_argument("--report-only", action="store_true", help="rewrite the report from docs/flow-scaling.json")
    args = ap.parse_args()
    out_md, out_json = ROOT / "docs" / "flow-scaling.md", ROOT / "docs" / "flow-scaling.json"
    # rows of designs not rerun now are kept from the last report
    rows = json.loads(out_json.read_text()) if out_json.is_file() else []
    order = list(DESIGNS)
    if args.report_only:
        write_report(rows, out_md, out_json)
        return
    for name in args.designs:
        row = run_one(name, args.work / name, args.max_passes)
        rows = sorted([r for r in rows if r["design"] != name] + [row], key=lambda r: order.index(r["design"]))
        m = row.get("metrics", {})
        print(name, m.get("finish__design__instance__count"), "unrouted", m.get("closer__route__unrouted_nets"),
              "drc", m.get("detailedroute__route__drc_errors"), "official drc",
              m.get("closer__signoff__official_drc__errors"), "antenna nets",
              m.get("detailedroute__antenna__violating__nets"), "lvs", m.get("closer__signoff__lvs__clean"),
              "error" if "error" in row else "", flush=True)
        write_report(rows, out_md, out_json)


if __name__ == "__main__":
    main()
