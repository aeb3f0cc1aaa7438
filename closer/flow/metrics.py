"""ORFS-named metrics from the tools' own reports, and the merged metadata.json.

Key scheme as in OpenROAD-flow-scripts: `<stage>__<category>__<metric>[__<qualifier>]`, with `__`
where old ORFS files had `:`. Everything here is timed on the synthesized netlist, so the stage
prefix is `synth` (the physical steps will write `floorplan__`, ..., `finish__`). Units: time ns,
frequency Hz, power W, area µm². `KEY_TABLE` documents every key and the report it comes from;
docs/flow.md shows it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from closer.errors import ToolError
from closer.flow.platform import Platform
from closer.metrics import UNCONSTRAINED_ENDPOINTS

STAGE = "synth"
SDC_EXCEPTIONS = "closer__timing__sdc_exceptions"
MACRO_LIBERTY_CORNER = "closer__sta__macro_liberty_corner"
NS_PER_S = 1e9
INFINITE_SLACK_S = 1e29  # OpenSTA returns 1e30 when no path is checked


@dataclass(frozen=True)
class KeyDoc:
    key: str
    unit: str
    source: str


KEY_TABLE: list[KeyDoc] = [
    KeyDoc("synth__design__instance__area__stdcell", "µm²",
           "Yosys `stat -liberty` (SiliconCompiler reports/stat.json: design.area) less the macros' area"),
    KeyDoc("synth__design__instance__count__stdcell", "count",
           "Yosys `stat` (reports/stat.json: design.num_cells) less the macro instances"),
    KeyDoc("synth__design__instance__area__macros", "µm²",
           "the config's macros (design.toml `macros`): instances in reports/stat.json "
           "(design.num_cells_by_type) × each macro's Liberty `area`; 0 without macros"),
    KeyDoc("synth__design__instance__count__macros", "count",
           "instances of the config's macros in the netlist (reports/stat.json); 0 without macros"),
    KeyDoc("synth__design__instance__area", "µm²", "stdcell + macros (design.area)"),
    KeyDoc("synth__design__instance__count", "count", "stdcell + macros (design.num_cells)"),
    KeyDoc("synth__design__instance__area__sequential", "µm²",
           "Yosys `stat` (reports/stat.json: design.sequential_area)"),
    KeyDoc("synth__design__io", "bits", "Yosys `stat` (reports/stat.json: design.num_port_bits)"),
    KeyDoc("synth__timing__setup__ws", "ns",
           "OpenSTA `sta::worst_slack_corner <c> max`, worst over the setup corners (ss, tt)"),
    KeyDoc("synth__timing__setup__tns", "ns",
           "OpenSTA `sta::total_negative_slack_corner_cmd <c> max`, worst over ss, tt"),
    KeyDoc("synth__timing__hold__ws", "ns",
           "OpenSTA `sta::worst_slack_corner <c> min`, worst over the hold corners (ff, tt)"),
    KeyDoc("synth__timing__hold__tns", "ns",
           "OpenSTA `sta::total_negative_slack_corner_cmd <c> min`, worst over ff, tt"),
    KeyDoc("synth__timing__setup__ws__corner__<corner>", "ns", "as setup__ws, one corner"),
    KeyDoc("synth__timing__setup__tns__corner__<corner>", "ns", "as setup__tns, one corner"),
    KeyDoc("synth__timing__hold__ws__corner__<corner>", "ns", "as hold__ws, one corner"),
    KeyDoc("synth__timing__hold__tns__corner__<corner>", "ns", "as hold__tns, one corner"),
    KeyDoc("synth__timing__fmax", "Hz",
           "1 / (clock period − setup ws); only with exactly one clock (as SiliconCompiler's "
           "sc_metrics.tcl and ORFS do)"),
    KeyDoc("synth__timing__fmax__clock__<clock>", "Hz", "the same, named by clock"),
    KeyDoc("synth__timing__drv__max_slew", "pins",
           "OpenSTA `sta::pin_slew_limit_violations <c> max` (Liberty max_transition), most over "
           "all corners; max_cap is not written: the 2019 OpenSTA has no capacitance-limit check"),
    KeyDoc("synth__timing__drv__max_slew__corner__<corner>", "pins", "the same, one corner"),
    KeyDoc(MACRO_LIBERTY_CORNER, "object",
           "per STA corner, the corner each macro Liberty read there was characterized at (from "
           "its file name, closer.pdk.liberty_corner; reports/sta.json `macro_liberty` has the "
           "files): the SKY130 SRAMs have only a TT Liberty, so ss and ff read `tt_025C_1v80` and "
           "the macro's own arcs are typical-corner timing there; absent without macros"),
    KeyDoc("closer__timing__unconstrained_endpoints", "count",
           "endpoints and loaded non-clock inputs with no finite setup or no finite hold slack at any "
           "corner, false-pathed ones included (reports/untimed.rpt; OpenSTA's `check_setup` misses "
           "those); Closer's key from closer/metrics.py (ORFS has none)"),
    KeyDoc(SDC_EXCEPTIONS, "count",
           "timing-exception commands (set_false_path, set_multicycle_path, ...) in the SDC, which "
           "closer.sdc refuses unless the task's kind allows them (reports/sdc.json lists them)"),
    KeyDoc("closer__synth__abc_script", "text",
           "the ABC script whose netlist synthesis kept: the strategy's name, `balanced+syn2` when "
           "the first `balanced` script's estimate missed the target (closer.flow.synth_choice)"),
    KeyDoc("closer__synth__abc_delay_ps", "ps", "ABC's `stime -p` delay of the kept script (ss Liberty, no wires)"),
    KeyDoc("closer__synth__abc_target_ps", "ps", "ABC's delay target D (`-D`; null without a clock)"),
    KeyDoc("closer__synth__abc_scripts_tried", "list", "the scripts run, in order (synth/abc_<script>.log)"),
    KeyDoc("closer__synth__abc_delays_ps_tried", "list", "ABC's delay of each script run, in the same order"),
    KeyDoc("synth__power__total", "W", "OpenSTA `sta::design_power` at the power corner (tt), "
           "as `report_power` prints it (reports/power.tt_025C_1v80.rpt)"),
    KeyDoc("synth__power__internal__total", "W", "the same, internal column"),
    KeyDoc("synth__power__switching__total", "W", "the same, switching column"),
    KeyDoc("synth__power__leakage__total", "W", "the same, leakage column"),
    KeyDoc("synth__power__nan_instances", "instances",
           "instances whose power OpenSTA 2.0.17 returns as NaN (activity underflow); when > 0 the "
           "power keys are the sum of `sta::instance_power` over the other instances and "
           "report_power (which fails on NaN) is not written; a Closer key"),
    KeyDoc("finish__design__die__area", "µm²", "closer.physical Floorplan (pnr node)"),
    KeyDoc("finish__design__core__area", "µm²", "closer.physical Floorplan (pnr node)"),
    KeyDoc("finish__design__instance__area", "µm²",
           "closer.physical Metrics: LEF area of the netlist's cells (no tap/fill)"),
    KeyDoc("finish__design__instance__count", "count", "closer.physical Metrics"),
    KeyDoc("finish__design__instance__utilization", "ratio", "instance area / core area"),
    KeyDoc("detailedroute__route__wirelength", "µm", "routed DEF (qrouter) wire length"),
    KeyDoc("detailedroute__route__drc_errors", "count",
           "KLayout run of Closer's BEOL deck on the GDS (closer/physical/signoff/drc_deck.py), the repair "
           "loop's fast checker; ORFS counts the router's own DRC here"),
    KeyDoc("closer__signoff__drc_errors", "count",
           "markers of the official deck, `$PDK_ROOT/sky130A/libs.tech/klayout/drc/sky130A_mr.drc` (FEOL, "
           "BEOL, off-grid; Debian KLayout in batch mode) on the final GDS, all rules (the reward `drc` gate; "
           "per rule as `closer__signoff__official_drc__<rule>`)"),
    KeyDoc("detailedroute__antenna__violating__nets", "count",
           "nets with a LEF antenna ratio above its limit on some layer (closer/physical/signoff/antenna.py, "
           "the reward `antenna` gate)"),
    KeyDoc("detailedroute__antenna_diodes_count", "count", "`sky130_fd_sc_hd__diode_2` cells in the layout's netlist"),
    KeyDoc("closer__signoff__lvs_errors", "count",
           "KLayout LVS opens + shorts (at least 1 when LVS is not clean; the reward `lvs` gate)"),
    KeyDoc("closer__route__unrouted_nets", "count", "nets qrouter left unrouted"),
    KeyDoc("closer__route__time_limited", "bool", "the routing time budget (`RouteConfig.pass_budget_s`, 1,200 s; "
           "hard limit `timeout_s`, 1,800 s) ended qrouter's rip-up schedule; the best pass so far is the result"),
    KeyDoc("closer__flow__deadline_cut", "bool", "work the flow's deadline ($CLOSER_FLOW_DEADLINE, closer/physical/deadline.py) "
           "left no time for was not done: a round of Repair, SetupRepair, RoutedSetupRepair or the antenna diodes, a setup "
           "round's full reroute, Replace's second layout, or qrouter's rip-up passes; the layout it had was signed off"),
    KeyDoc("closer__route__guided", "bool", "a global route guided qrouter's stage 1 (`RouteConfig.guides_min_nets`; "
           "closer/physical/route/groute.py, qrouter patch 03)"),
    KeyDoc("closer__groute__overflow", "tracks", "the global route's tracks over capacity, summed over the GCell "
           "boundaries, after its rip-up rounds (only when it ran)"),
    KeyDoc("closer__place__inflation__overflow_after", "ratio", "RUDY overflow over `PlaceConfig.congestion_target` "
           "(sum over GCells) of the placement kept after the cell-inflation rounds (closer/physical/place/inflation.py)"),
    KeyDoc("closer__fanout__removed", "count", "synthesis's buffers taken out before placement "
           "(closer/physical/repair/fanout.py; designs of `FanoutConfig.min_instances`, 3,000, instances and more; 0 below)"),
    KeyDoc("closer__fanout__buffers", "count", "`buf_4` the fanout trees by placement added after it (nets with more "
           "than `FanoutConfig.max_sinks`, 24, sinks; clock nets are the clock tree's)"),
    KeyDoc("finish__timing__setup__ws", "ns",
           "OpenSTA with the routed SPEF at the signoff corner (tt_025C_1v80)"),
    KeyDoc("finish__timing__hold__ws", "ns", "the same, hold"),
    KeyDoc("finish__timing__drv__max_slew", "pins",
           "OpenSTA 2.0.17 `report_check_types -max_transition -all_violators` with the SPEF, "
           "signoff corner (closer/physical/signoff/sta.py)"),
    KeyDoc("finish__timing__drv__max_cap", "pins",
           "driver pins whose net capacitance (OpenSTA, with the SPEF) exceeds the pin's Liberty "
           "max_capacitance, signoff corner (this OpenSTA has no capacitance-limit check)"),
    KeyDoc("finish__timing__setup__ws__corner__<corner>", "ns", "as finish setup__ws, one corner"),
    KeyDoc("finish__timing__hold__ws__corner__<corner>", "ns", "as finish hold__ws, one corner"),
    KeyDoc("finish__timing__setup__tns__corner__<corner>", "ns",
           "OpenSTA `total_negative_slack` (max paths) with the SPEF, one corner (0 when setup is met)"),
    KeyDoc("finish__timing__hold__tns__corner__<corner>", "ns", "the same, min paths (hold)"),
    KeyDoc("finish__timing__drv__max_slew__corner__<corner>", "pins", "the same, one corner"),
    KeyDoc("finish__timing__drv__max_cap__corner__<corner>", "pins", "the same, one corner"),
    KeyDoc("finish__power__total", "W", "OpenSTA `report_power` with the SPEF, signoff corner"),
    KeyDoc("cts__clock__skew__setup__corner__<corner>", "ns",
           "OpenSTA `report_clock_skew` with the SPEF, clocks propagated through the built tree"),
    KeyDoc("cts__design__instance__count__hold_buffer", "count",
           "delay cells the hold repair put before flop pins after the clock tree (closer.physical.repair.hold)"),
    KeyDoc("closer__*", "mixed",
           "the rest of closer.physical's per-step metrics (docs/physical.md): place HPWL, pin "
           "access, route passes, per-rule DRC counts, LVS opens/shorts, per-corner slack and "
           "power without and with parasitics, gate flags"),
    KeyDoc("run__flow__physical__tools", "text",
           "closer.physical's tool versions (router, KLayout, OpenSTA, placer) from "
           "phys/metadata.json"),
    KeyDoc("constraints__clocks__count", "count", "OpenSTA `all_clocks` after read_sdc"),
    KeyDoc("constraints__clocks__details", "list",
           "`<clock>: <period ns>` per clock, from `get_property <clk> period`"),
    KeyDoc("run__closer__design", "text", "design.toml [design] name"),
    KeyDoc("run__closer__design_revision", "text",
           "SHA-256 (16 hex) over design.toml, the RTL files and the SDC, names and contents"),
    KeyDoc("run__closer__pdk_corner", "text",
           "corners and checks, e.g. `setup:ss_100C_1v60,tt_025C_1v80;hold:...;power:tt_025C_1v80`"),
    KeyDoc("run__closer__tool_versions", "text",
           "`step:tool=version` joined by `;`, versions as SiliconCompiler's version check read "
           "them from each tool"),
    KeyDoc("run__flow__*", "text", "the same provenance in ORFS-style run keys: design, variant "
           "(config), backend, platform, library, corners, PDK root and a hash of its "
           "SHA256SUMS, scripts commit, SiliconCompiler and Python versions, one "
           "`run__flow__tool__<step>` per step"),
]


def synth_metrics(stat_json: Path, macro_areas: dict[str, float] | None = None) -> dict[str, float | int]:
    """1_synth.json from SiliconCompiler's Yosys `stat` report; `macro_areas` maps the config's
    macro cell names to their Liberty area (µm²)."""
    try:
        stat = json.loads(stat_json.read_text())
        design = stat["design"]
        area = float(design["area"])
        count = int(design["num_cells"])
        by_type = {str(k): int(v) for k, v in design.get("num_cells_by_type", {}).items()}
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        raise ToolError(f"{stat_json}: no usable Yosys stat report ({exc})") from exc
    macro_count = sum(by_type.get(name, 0) for name in macro_areas or {})
    macro_area = sum(by_type.get(name, 0) * a for name, a in (macro_areas or {}).items())
    return {
        f"{STAGE}__design__instance__area__stdcell": round(area - macro_area, 4) if macro_area else area,
        f"{STAGE}__design__instance__count__stdcell": count - macro_count,
        f"{STAGE}__design__instance__area__macros": round(macro_area, 4),
        f"{STAGE}__design__instance__count__macros": macro_count,
        f"{STAGE}__design__instance__area": area,
        f"{STAGE}__design__instance__count": count,
        f"{STAGE}__design__instance__area__sequential": float(design.get("sequential_area", 0.0)),
        f"{STAGE}__design__io": int(design["num_port_bits"]),
    }


def _ns(seconds: float) -> float | None:
    if abs(seconds) >= INFINITE_SLACK_S:
        return None  # nothing checked at this corner
    return round(seconds * NS_PER_S, 6)


def sta_metrics(sta_json: Path, platform: Platform) -> dict[str, object]:
    """1_synth_sta.json from the STA node's reports/sta.json (raw OpenSTA values)."""
    try:
        raw = json.loads(sta_json.read_text())
        values: dict[str, float] = raw["metrics"]
        clocks: list[dict] = raw["clocks"]
    except (OSError, ValueError, KeyError) as exc:
        raise ToolError(f"{sta_json}: no usable STA result ({exc})") from exc
    out: dict[str, object] = {}
    for check in ("setup", "hold"):
        for kind in ("ws", "tns"):
            per_corner = {}
            for corner in platform.corners_with(check):
                key = f"timing__{check}__{kind}__corner__{corner}"
                if key not in values:
                    raise ToolError(f"{sta_json}: missing {key}")
                per_corner[corner] = _ns(values[key])
                out[f"{STAGE}__{key}"] = per_corner[corner]
            checked = [v for v in per_corner.values() if v is not None]
            out[f"{STAGE}__timing__{check}__{kind}"] = min(checked) if checked else None
    setup_ws = out[f"{STAGE}__timing__setup__ws"]
    if len(clocks) == 1 and setup_ws is not None:
        clock = clocks[0]
        fmax = 1.0 / ((clock["period_ns"] - setup_ws) / NS_PER_S)
        out[f"{STAGE}__timing__fmax"] = round(fmax, 3)
        out[f"{STAGE}__timing__fmax__clock__{clock['name']}"] = round(fmax, 3)
    slew = {c: int(values[f"timing__drv__max_slew__corner__{c}"]) for c in platform.corners}
    for corner, count in slew.items():
        out[f"{STAGE}__timing__drv__max_slew__corner__{corner}"] = count
    out[f"{STAGE}__timing__drv__max_slew"] = max(slew.values())
    out[UNCONSTRAINED_ENDPOINTS] = int(values["timing__unconstrained__count"])
    out[SDC_EXCEPTIONS] = len(raw.get("sdc_exceptions", []))
    for power_corner in platform.corners_with("power")[:1]:
        for part in ("internal", "switching", "leakage"):
            out[f"{STAGE}__power__{part}__total"] = values[f"power__{part}__total__corner__{power_corner}"]
        out[f"{STAGE}__power__total"] = values[f"power__total__corner__{power_corner}"]
        out[f"{STAGE}__power__nan_instances"] = int(
            values[f"power__nan_instances__corner__{power_corner}"])
    bad = [k for k, v in out.items() if isinstance(v, float) and not math.isfinite(v)]
    if bad:
        raise ToolError(f"{sta_json}: OpenSTA gave non-finite values for {', '.join(sorted(bad))}")
    macro_liberty = _macro_liberty_corners(raw.get("macro_liberty") or {}, sta_json)
    if macro_liberty:
        out[MACRO_LIBERTY_CORNER] = macro_liberty
    out["constraints__clocks__count"] = len(clocks)
    out["constraints__clocks__details"] = [f"{c['name']}: {c['period_ns']:.4f}" for c in clocks]
    return out


def _macro_liberty_corners(files: dict[str, list[str]], sta_json: Path) -> dict[str, str]:
    """{STA corner: the characterization corner(s) of the macro Liberty files read there}."""
    from closer.pdk import liberty_corner

    out = {}
    for corner, paths in sorted(files.items()):
        used = sorted({liberty_corner(Path(p).name) or f"unknown ({Path(p).name})" for p in paths})
        if not used:
            raise ToolError(f"{sta_json}: macro_liberty.{corner}: no files")
        out[corner] = ",".join(used)
    return out


# ORFS stage order of the physical keys; a key of a later stage wins over an earlier one
PHYSICAL_STAGE_ORDER = ("floorplan", "place", "cts", "globalroute", "detailedroute", "finish",
                        "closer")


def pnr_metrics(pnr_json: Path) -> dict[str, object]:
    """6_pnr.json from the pnr node's reports/pnr.json, keys in ORFS stage order."""
    try:
        raw = json.loads(pnr_json.read_text())
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        raise ToolError(f"{pnr_json}: no usable physical result ({exc})") from exc
    import jsonschema

    from closer.paths import schema_path

    schema = json.loads(schema_path("flow-pnr").read_text())
    problem = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema)
                                               .iter_errors(raw))
    if problem is not None:
        where = ".".join(str(p) for p in problem.absolute_path) or "(top level)"
        raise ToolError(f"{pnr_json}: key {where}: {problem.message}")
    bad = [k for k, v in raw.items() if isinstance(v, float) and not math.isfinite(v)]
    if bad:
        raise ToolError(f"{pnr_json}: non-finite values for {', '.join(sorted(bad))}")

    def rank(key: str) -> int:
        stage = key.split("__", 1)[0]
        return PHYSICAL_STAGE_ORDER.index(stage) if stage in PHYSICAL_STAGE_ORDER else len(
            PHYSICAL_STAGE_ORDER)

    return {k: raw[k] for k in sorted(raw, key=rank)}


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def merge_metadata(stages: list[dict], run_keys: dict[str, object]) -> dict[str, object]:
    """Stage files in flow order, then run/provenance keys (as ORFS genMetrics.py merges)."""
    merged: dict[str, object] = {}
    for stage in stages:
        merged.update(stage)
    merged.update(run_keys)
    return merged


def key_table_markdown() -> str:
    """The key table of docs/flow.md (a test keeps the two equal)."""
    lines = ["| key | unit | comes from |", "| --- | --- | --- |"]
    lines += [f"| `{k.key}` | {k.unit} | {k.source} |" for k in KEY_TABLE]
    return "\n".join(lines) + "\n"
