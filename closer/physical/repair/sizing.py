"""Setup and max-slew/max-cap repair by gate sizing on the routed layout's parasitics.

OpenSTA does the work, with the sign-off SPEF read at the failing corner. First the drivers of
the nets with max-transition violations go up their drive-strength ladder to the smallest size
that removes the most violations, and the drivers over their Liberty max_capacitance (which this
OpenSTA build cannot check itself; the flow's sign-off STA finds them) one size up. Then the
driver cells of the worst paths are tried one drive strength up (`replace_cell`, same cell family, `_<n>` suffix) and
a change is kept when OpenSTA's worst setup slack does not get worse and its total negative
slack gets better; the passes stop when setup is met, nothing improved, or `max_passes` is used.
The changed cells are then put into the layout (a wider cell moves to the nearest free sites, the
placer's spill placement) and the Verilog netlist, and the flow routes and signs off again: the
sign-off STA of the new routing is what counts, the in-tool numbers are the repair's own
before/after.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

from closer.errors import ToolError
from closer.physical.floorplan.floorplan import DBU, FILL_MASTERS, SITE_W, Layout
from closer.physical.io.lef import Macro
from closer.physical.io.netlist import Netlist
from closer.physical.place import place as place_mod
from closer.physical.repair.opensta import liberty_reads
from closer.physical.repair import buffering, opensta

DONE_MARK = "CLOSER_SIZING_DONE"
_SIZED = re.compile(r"^(.*)_(\d+)$")
_RESIZE = re.compile(r"^CLOSER_RESIZE (\S+) (\S+) (\S+)\s*$", re.M)


def _platform_dont_use() -> tuple[str, ...]:
    from closer.flow.platform import dont_use_patterns

    return tuple(dont_use_patterns())


@dataclass
class SizingConfig:
    enabled: bool = True
    drv_repair: bool = True      # max-slew / max-cap violations also start a round (drivers upsized)
    max_rounds: int = 2          # size -> route -> sign off, at most this many times
    max_passes: int = 40         # OpenSTA passes over the worst paths per round
    paths_per_pass: int = 20     # worst endpoints whose paths are tried in one pass
    # then passes isolating off-path loads (closer.physical.repair.buffering); off by default: on
    # gcd at 5 ns the rerouted result was worse with them (docs/physical.md, "Timing repair")
    buffer_passes: int = 0
    isolate_min_slack_ns: float = 0.5  # only loads on paths with this much slack go behind a buffer
    # late data-path derate while repairing, for the wires the reroute gives moved and inserted
    # cells (gcd at 5 ns lost 0.2 ns of OpenSTA's in-tool gain to them); 1.0: none
    setup_derate: float = 1.0
    dont_use: tuple[str, ...] = field(default_factory=_platform_dont_use)  # globs never sized to
    # after a round, reroute only the changed cells' nets and the wires near them, the rest kept
    # (closer.physical.repair.incremental); the full reroute when that leaves problems, or always
    # when False
    incremental_reroute: bool = True
    # sizing rounds on the routed layout before its first sign-off (steps.timing.RoutedSetupRepair), from
    # this many instances: there a sign-off (antenna rounds included) costs minutes, and the first
    # one can check the resized cells' reroute with the routing's own
    routed_rounds: int = 2
    routed_min_instances: int = 3000


@dataclass
class SizingResult:
    corner: str
    resized: dict[str, tuple[str, str]]   # instance (netlist name) -> (old master, new master)
    ws_before_ns: float
    ws_after_ns: float
    tns_before_ns: float
    tns_after_ns: float
    log: Path
    isolations: list[buffering.Isolation] = field(default_factory=list)
    drv_resized: int = 0                  # of `resized`, the drivers sized for max slew / max cap


def size_ladders(masters: list[str], dont_use: tuple[str, ...]) -> dict[str, list[str]]:
    """Each usable sized master -> the larger drive strengths of its family, smallest first."""
    families: dict[str, list[tuple[int, str]]] = {}
    for m in masters:
        hit = _SIZED.match(m)
        if hit and not any(fnmatch.fnmatchcase(m, p) for p in dont_use):
            families.setdefault(hit.group(1), []).append((int(hit.group(2)), m))
    ladders = {}
    for members in families.values():
        members.sort()
        for k, (_, m) in enumerate(members):
            ladders[m] = [bigger for _, bigger in members[k + 1:]]
    return ladders


def sizing_script(liberty: Path, netlist_v: Path, top: str, sdc: Path, spef: Path | None, propagated: bool,
                  ladders: dict[str, list[str]], cfg: SizingConfig, out: Path,
                  cap_drivers: Path | None = None) -> str:
    """The OpenSTA script of one sizing round; results go to `out` (CLOSER_* lines). `cap_drivers`:
    a file of the instances (OpenSTA's names, one a line) whose output net exceeds its max
    capacitance; read as data, as the names come from the design's own identifiers."""
    ladder_tcl = " ".join(f"{m} {{{' '.join(up)}}}" for m, up in sorted(ladders.items()) if up)
    lines = [*liberty_reads(liberty), f"read_verilog {{{netlist_v}}}", f"link_design {top}",
             f"read_sdc {{{sdc}}}"]
    if propagated:
        lines.append("set_propagated_clock [all_clocks]")
    if spef is not None:
        lines.append(f"read_spef {{{spef}}}")
    if cfg.setup_derate != 1.0:
        lines.append(f"set_timing_derate -late -data {cfg.setup_derate}")
    lines += [f"array set closer_up {{{ladder_tcl}}}",
              f"set closer_fh [open {{{out}}} w]", _BEFORE_TCL]
    if cfg.drv_repair:
        lines.append("set closer_cap_drivers {}")
        if cap_drivers is not None:
            lines += [f"set closer_cap_fh [open {{{cap_drivers}}} r]",
                      'set closer_cap_drivers [split [string trim [read $closer_cap_fh]] "\\n"]',
                      "close $closer_cap_fh"]
        lines.append(_DRV_TCL)
    lines.append(_SIZING_TCL.format(passes=cfg.max_passes, paths=cfg.paths_per_pass))
    if cfg.buffer_passes:
        lines.append(buffering.isolate_tcl(cfg.buffer_passes, cfg.paths_per_pass, cfg.isolate_min_slack_ns))
    lines += [_SIZING_END,
              f'puts $closer_fh "{DONE_MARK}"', "close $closer_fh", "exit"]
    return "\n".join(lines) + "\n"


# ws/tns in seconds as OpenSTA reports them. Instances are looked up by their exact name
# (sta::find_instance): get_cells would read a name's [ ] * ? (the design's own identifiers) as a pattern
_BEFORE_TCL = """\
proc closer_score {} {
  return [list [sta::worst_slack_cmd max] [sta::total_negative_slack_cmd max]]
}
set closer_best [closer_score]
puts $closer_fh "CLOSER_BEFORE [lindex $closer_best 0] [lindex $closer_best 1]"
"""
# the drivers of max-transition violations (a violating pin's net driver, top-level ports left
# alone) and of max-capacitance ones, in passes: each driver takes the size of its ladder with the
# fewest violations on its own nets, then the fewest in all (every size is tried: one step may
# lower a net's slew without yet clearing a pin). A larger driver loads its input net more, and a
# violation can move there: the next pass takes that net's driver (PicoRV32: a nand4_1 driving three
# buffers and three diodes; nand4_2 cleared its net and put its input net over the limit, one
# violation more in all, so a choice by the total kept nand4_1 and 7 violations). When the
# passes end with no fewer violations than they started with, their slew changes are undone (a
# max-capacitance driver keeps its next size); then the setup passes start from the new score
_DRV_TCL = """\
proc closer_slew_count {} {
  return [llength [sta::pin_slew_limit_violations [sta::cmd_corner] max]]
}
proc closer_own_pins {inst} {
  set out {}
  set it [$inst pin_iterator]
  while {[$it has_next]} {
    set p [$it next]
    if {![$p is_driver]} { continue }
    lappend out [get_full_name $p]
    set ci [$p connected_pin_iterator]
    while {[$ci has_next]} { lappend out [get_full_name [$ci next]] }
    $ci finish
  }
  $it finish
  return $out
}
proc closer_slew_counts {own} {
  set bad [sta::pin_slew_limit_violations [sta::cmd_corner] max]
  set mine 0
  foreach p $bad { if {[lsearch -exact $own [get_full_name $p]] >= 0} { incr mine } }
  return [list $mine [llength $bad]]
}
proc closer_better {a b} {
  return [expr {[lindex $a 0] < [lindex $b 0] || ([lindex $a 0] == [lindex $b 0] && [lindex $a 1] < [lindex $b 1])}]
}
set closer_drv_start [closer_slew_count]
for {set closer_drv_pass 0} {$closer_drv_pass < 4} {incr closer_drv_pass} {
  set closer_drv_names {}
  foreach pin [sta::pin_slew_limit_violations [sta::cmd_corner] max] {
    set it [$pin connected_pin_iterator]
    while {[$it has_next]} {
      set p [$it next]
      if {![$p is_driver] || [$p instance] == "NULL"} { continue }
      set name [get_full_name [$p instance]]
      if {[lsearch -exact $closer_drv_names $name] < 0} { lappend closer_drv_names $name }
    }
    $it finish
  }
  if {$closer_drv_pass == 0} {
    foreach name $closer_cap_drivers {
      if {[lsearch -exact $closer_drv_names $name] < 0} { lappend closer_drv_names $name }
    }
  }
  set closer_drv_changed 0
  foreach name $closer_drv_names {
    set inst [sta::find_instance $name]
    if {$inst == "NULL"} { continue }
    set cell [get_name [get_lib_cells -of_objects $inst]]
    if {![info exists closer_up($cell)] || [llength $closer_up($cell)] == 0} { continue }
    set own [closer_own_pins $inst]
    set fewest [closer_slew_counts $own]
    # a max-capacitance driver takes at least the next size (a larger cell has a larger limit)
    set chosen $cell
    if {$closer_drv_pass == 0 && [lsearch -exact $closer_cap_drivers $name] >= 0} {
      set chosen [lindex $closer_up($cell) 0]
      set closer_cap_sized($name) 1
    }
    foreach bigger $closer_up($cell) {
      if {[catch {replace_cell $inst $bigger}]} { continue }
      set counts [closer_slew_counts $own]
      if {[closer_better $counts $fewest]} {
        set fewest $counts
        set chosen $bigger
      }
    }
    replace_cell $inst $chosen
    if {$chosen != $cell} {
      if {![info exists closer_drv_from($name)]} { set closer_drv_from($name) $cell }
      set closer_sized($name) $chosen
      set closer_drv($name) 1
      incr closer_drv_changed
    }
  }
  if {$closer_drv_changed == 0 || [closer_slew_count] == 0} { break }
}
if {$closer_drv_start > 0 && [closer_slew_count] >= $closer_drv_start} {
  foreach name [array names closer_drv_from] {
    if {[info exists closer_cap_sized($name)]} { continue }
    replace_cell [sta::find_instance $name] $closer_drv_from($name)
    unset closer_sized($name) closer_drv($name)
  }
}
set closer_best [closer_score]
"""
# a trial is one drive strength up for one driver
_SIZING_TCL = """\
for {{set pass 0}} {{$pass < {passes}}} {{incr pass}} {{
  if {{[lindex $closer_best 0] >= 0.0}} {{ break }}
  set drivers {{}}
  foreach end [find_timing_paths -path_delay max -group_count {paths} -endpoint_count 1 -slack_max 0.0] {{
    foreach pin [[$end path] pins] {{
      if {{![$pin is_driver]}} {{ continue }}
      set inst [$pin instance]
      if {{$inst == "NULL" || [lsearch -exact $drivers [get_full_name $inst]] >= 0}} {{ continue }}
      lappend drivers [get_full_name $inst]
    }}
  }}
  set improved 0
  foreach name $drivers {{
    set inst [sta::find_instance $name]
    if {{$inst == "NULL"}} {{ continue }}
    set cell [get_name [get_lib_cells -of_objects $inst]]
    if {{![info exists closer_up($cell)] || [llength $closer_up($cell)] == 0}} {{ continue }}
    set chosen $cell
    foreach bigger [lrange $closer_up($cell) 0 0] {{
      if {{[catch {{replace_cell $inst $bigger}}]}} {{ continue }}
      set score [closer_score]
      if {{[lindex $score 0] >= [lindex $closer_best 0] && [lindex $score 1] > [lindex $closer_best 1]}} {{
        set closer_best $score
        set chosen $bigger
      }}
    }}
    replace_cell $inst $chosen
    if {{$chosen != $cell}} {{
      set closer_sized($name) $chosen
      incr improved
    }}
  }}
  if {{$improved == 0}} {{ break }}
}}
"""
_SIZING_END = """\
foreach name [array names closer_sized] {
  puts $closer_fh "CLOSER_RESIZE $name $closer_sized($name) [expr {[info exists closer_drv($name)] ? "drv" : "-"}]"
}
puts $closer_fh "CLOSER_AFTER [lindex $closer_best 0] [lindex $closer_best 1]"
report_checks -path_delay max -digits 4
"""


def size_for_setup(corner: str, liberty: Path, netlist_v: Path, top: str, sdc: Path, spef: Path | None,
                   propagated: bool, netlist: Netlist, macros: dict[str, Macro], cfg: SizingConfig,
                   work: Path, cap_drivers: tuple[str, ...] = ()) -> SizingResult:
    """One OpenSTA sizing round at `corner`, on `spef` when given (raises ToolError when OpenSTA
    fails); `cap_drivers`: instances over their max capacitance there (the sign-off STA's)."""
    ladders = size_ladders(sorted(macros), cfg.dont_use)
    names = None
    if cap_drivers:
        work.mkdir(parents=True, exist_ok=True)
        names = work / f"sizing_{corner}_cap_drivers.txt"
        names.write_text("".join(f"{name}\n" for name in cap_drivers))
    text, log = opensta.run_script(
        f"sizing_{corner}", work,
        lambda out: sizing_script(liberty, netlist_v, top, sdc, spef, propagated, ladders, cfg, out,
                                  names),
        DONE_MARK, f"sizing at corner {corner}")
    return parse_sizing(text, corner, netlist, log)


def parse_sizing(text: str, corner: str, netlist: Netlist, log: Path) -> SizingResult:
    """The resized instances (under the netlist's own names) and the slack before and after."""
    (ws0, tns0), (ws1, tns1) = opensta.before_after(text, log)
    resized, drv = {}, 0
    for name, m in opensta.named_rows(text, _RESIZE, netlist):
        if name not in netlist.instances:
            raise ToolError(f"{log}: resized instance {m.group(1)!r} is not in the netlist")
        resized[name] = (netlist.instances[name].master, m.group(2))
        drv += m.group(3) == "drv"
    return SizingResult(corner, resized, ws0, ws1, tns0, tns1, log, buffering.parse_isolations(text, netlist, log),
                        drv_resized=drv)


def apply_sizes(netlist: Netlist, layout: Layout, macros: dict[str, Macro],
                resized: dict[str, tuple[str, str]]) -> None:
    """Change the masters in `netlist` and `layout` (in place): a cell that no longer fits its
    sites moves to the nearest free ones; the fill cells are removed (the flow fills again)."""
    fills = {m for m, _ in FILL_MASTERS}
    layout.physical = [p for p in layout.physical if p.master not in fills]
    spill = []
    for name, (_, new) in resized.items():
        netlist.instances[name].master = new
        cell = layout.cells.pop(name)
        old = macros[cell.master]
        width = round(macros[new].width * DBU) // SITE_W
        spill.append((name, cell.x + old.width * DBU / 2, cell.y + old.height * DBU / 2, width))
    widths = {n: round(macros[c.master].width * DBU) // SITE_W for n, c in layout.cells.items()}
    place_mod._place_spill(layout, widths, spill, netlist)


_INSTANCE_LINE = re.compile(r"^(\s*)(sky130_fd_sc_hd__\w+)(\s+)(\\\S+|[A-Za-z_][\w$]*)(\s*\()", re.M)


def write_verilog(source: Path, out: Path, netlist: Netlist, resized: dict[str, tuple[str, str]]) -> Path:
    """The netlist text with the resized instances' cell names changed (raises ToolError when an
    instance is not found exactly once)."""
    by_original = {netlist.original.get(name, name): new for name, (_, new) in resized.items()}
    seen: dict[str, int] = {}

    def swap(m: re.Match) -> str:
        name = m.group(4)[1:] if m.group(4).startswith("\\") else m.group(4)
        if name not in by_original:
            return m.group(0)
        seen[name] = seen.get(name, 0) + 1
        return f"{m.group(1)}{by_original[name]}{m.group(3)}{m.group(4)}{m.group(5)}"

    text = _INSTANCE_LINE.sub(swap, source.read_text())
    missing = [n for n in by_original if seen.get(n) != 1]
    if missing:
        raise ToolError(f"{source}: resized instances not found once: {missing[:5]}")
    out.write_text(text)
    return out
