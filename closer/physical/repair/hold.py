"""Hold repair with delay cells after the clock tree.

OpenSTA does the work at the fastest corner (where hold is tightest), clocks propagated through
the built tree: for each flop data pin with negative hold slack, delay cells
(`sky130_fd_sc_hd__dlygate4sd*`, `clkdlybuf4s*`) are put in front of the pin in OpenSTA's own
network (`make_instance`, `connect_pin`) one at a time, the smallest delay first, until the pin's
hold slack is met; a cell is kept only while the pin's setup slack at that corner stays
non-negative. The chains are then written into the netlist, the layout (beside the flop) and the
Verilog; the final STA at every corner, with parasitics, is the sign-off.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from closer.errors import ToolError
from closer.physical.cts import cts
from closer.physical.floorplan.floorplan import DBU, SITE_W, Layout
from closer.physical.io.lef import Macro
from closer.physical.io.netlist import Netlist
from closer.physical.place import place as place_mod
from closer.physical.repair.opensta import liberty_reads
from closer.physical.repair import opensta

DONE_MARK = "CLOSER_HOLD_DONE"
# smallest delay first (Liberty ss/tt/ff all order them so); the ladder a pin climbs
DELAY_CELLS = ("sky130_fd_sc_hd__clkdlybuf4s15_1", "sky130_fd_sc_hd__dlygate4sd1_1",
               "sky130_fd_sc_hd__dlygate4sd2_1", "sky130_fd_sc_hd__dlygate4sd3_1")
_CHAIN = re.compile(r"^CLOSER_CHAIN (\S+) (\S+) ((?:\S+ ?)+)$", re.M)


@dataclass(frozen=True)
class HoldConfig:
    enabled: bool = True
    max_cells_per_pin: int = 8    # delay cells in one chain
    max_endpoints: int = 500      # violating pins looked at


@dataclass
class HoldResult:
    corner: str
    chains: dict[tuple[str, str], list[str]]   # (flop instance, data pin) -> delay-cell masters
    ws_before_ns: float
    ws_after_ns: float
    tns_before_ns: float
    tns_after_ns: float
    log: Path

    @property
    def cells(self) -> int:
        return sum(len(c) for c in self.chains.values())


def hold_script(liberty: Path, netlist_v: Path, top: str, sdc: Path, propagated: bool,
                cfg: HoldConfig, out: Path) -> str:
    lines = [*liberty_reads(liberty), f"read_verilog {{{netlist_v}}}", f"link_design {top}",
             f"read_sdc {{{sdc}}}"]
    if propagated:
        lines.append("set_propagated_clock [all_clocks]")
    lines += [f"set closer_cells {{{' '.join(DELAY_CELLS)}}}", f"set closer_fh [open {{{out}}} w]",
              _HOLD_TCL.format(cells=cfg.max_cells_per_pin, endpoints=cfg.max_endpoints),
              f'puts $closer_fh "{DONE_MARK}"', "close $closer_fh", "exit"]
    return "\n".join(lines) + "\n"


# slacks in seconds as OpenSTA reports them
_HOLD_TCL = """\
proc closer_score {{}} {{
  return [list [sta::worst_slack_cmd min] [sta::total_negative_slack_cmd min]]
}}
proc closer_pin_slack {{pin kind}} {{
  set ends [find_timing_paths -path_delay $kind -to [get_pins $pin]]
  if {{[llength $ends] == 0}} {{ return 1.0 }}
  return [[lindex $ends 0] slack]
}}
set closer_start [closer_score]
puts $closer_fh "CLOSER_BEFORE [lindex $closer_start 0] [lindex $closer_start 1]"
set closer_k 0
set closer_t 0
# names first: a network edit leaves OpenSTA's path objects dangling
set closer_pins {{}}
foreach end [find_timing_paths -path_delay min -group_count {endpoints} -endpoint_count 1 -slack_max 0.0] {{
  set pin [[$end path] pin]
  if {{[$pin instance] != "NULL"}} {{ lappend closer_pins [get_full_name $pin] }}
}}
foreach pin_name $closer_pins {{
  set slash [string last "/" $pin_name]
  set chain {{}}
  while {{[llength $chain] < {cells} && [closer_pin_slack $pin_name min] < 0.0}} {{
    set kept 0
    foreach cell $closer_cells {{
      set net [get_nets -of_objects [get_pins $pin_name]]
      set name "closer_hold_try_$closer_t"
      incr closer_t
      set lib_cell [get_lib_cells */$cell]
      make_instance $name $lib_cell
      make_net "${{name}}_o"
      disconnect_pin [get_full_name $net] [get_pins $pin_name]
      connect_pin [get_full_name $net] [get_pins $name/A]
      connect_pin "${{name}}_o" [get_pins $name/X]
      connect_pin "${{name}}_o" [get_pins $pin_name]
      if {{[closer_pin_slack $pin_name max] >= 0.0 && ([closer_pin_slack $pin_name min] >= 0.0 || $cell == [lindex $closer_cells end])}} {{
        lappend chain $cell
        incr closer_k
        set kept 1
        break
      }}
      # a refused trial is disconnected and left floating (delete_instance crashes OpenSTA 2.0.17)
      disconnect_pin "${{name}}_o" [get_pins $pin_name]
      disconnect_pin "${{name}}_o" [get_pins $name/X]
      disconnect_pin [get_full_name $net] [get_pins $name/A]
      connect_pin [get_full_name $net] [get_pins $pin_name]
    }}
    if {{!$kept}} {{ break }}
  }}
  if {{[llength $chain]}} {{
    puts $closer_fh "CLOSER_CHAIN [string range $pin_name 0 [expr {{$slash - 1}}]] [string range $pin_name [expr {{$slash + 1}}] end] $chain"
  }}
}}
set closer_end [closer_score]
puts $closer_fh "CLOSER_AFTER [lindex $closer_end 0] [lindex $closer_end 1]"
"""


def repair_hold(corner: str, liberty: Path, netlist_v: Path, top: str, sdc: Path, propagated: bool,
                netlist: Netlist, cfg: HoldConfig, work: Path) -> HoldResult:
    """OpenSTA's hold repair at `corner` (raises ToolError when OpenSTA fails)."""
    text, log = opensta.run_script(f"hold_{corner}", work,
                                   lambda out: hold_script(liberty, netlist_v, top, sdc, propagated, cfg, out),
                                   DONE_MARK, f"hold repair at corner {corner}")
    return parse_hold(text, corner, netlist, log)


def parse_hold(text: str, corner: str, netlist: Netlist, log: Path) -> HoldResult:
    """The chains (under the netlist's own instance names) and the hold slack before and after."""
    (ws0, tns0), (ws1, tns1) = opensta.before_after(text, log)
    chains = {}
    for inst, m in opensta.named_rows(text, _CHAIN, netlist):
        cells = m.group(3).split()
        if inst not in netlist.instances or m.group(2) not in netlist.instances[inst].pins:
            raise ToolError(f"{log}: hold chain on {m.group(1)}/{m.group(2)}, not a pin of the netlist")
        if any(c not in DELAY_CELLS for c in cells):
            raise ToolError(f"{log}: hold chain of {m.group(1)} names a cell outside {DELAY_CELLS}")
        chains[(inst, m.group(2))] = cells
    return HoldResult(corner, chains, ws0, ws1, tns0, tns1, log)


def insert_chains(netlist: Netlist, layout: Layout, macros: dict[str, Macro],
                  chains: dict[tuple[str, str], list[str]]) -> cts.ClockTree:
    """The delay cells into `netlist` and `layout` (in place), each chain beside its flop; the
    cells as buffers of a tree, for `cts.write_verilog`."""
    inserted = cts.ClockTree("hold", 0, [])
    for (inst, pin), cells in chains.items():
        sink = (inst, pin)
        for cell in cells:  # the last cell inserted is nearest the driver
            k = sum(1 for i in netlist.instances if i.startswith("hold_dly_"))
            buf = cts.Buffer(f"hold_dly_{k}", netlist.instances[sink[0]].pins[sink[1]], f"hold_net_{k}", 1,
                             (sink,), cell)
            cts._insert(netlist, buf, cell)
            placed = layout.cells[inst]
            m = macros[placed.master]
            widths = {n: round(macros[c.master].width * DBU) // SITE_W for n, c in layout.cells.items()}
            width = round(macros[cell].width * DBU) // SITE_W
            place_mod._place_spill(layout, widths,
                                   [(buf.name, placed.x + m.width * DBU / 2, placed.y + m.height * DBU / 2, width)],
                                   netlist)
            inserted.buffers.append(buf)
            sink = (buf.name, "A")
    return inserted
