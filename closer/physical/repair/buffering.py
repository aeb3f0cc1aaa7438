"""Setup repair by buffering: isolating a critical net's off-path loads behind a buffer.

After sizing, a driver on a worst path may still be slow because it also drives loads that are
not on that path. OpenSTA tries, in its own network (`make_instance`, `connect_pin`), a buffer
(`buf_1`, then `buf_2`, `buf_4`) that takes over every load of the driver's net except the next
pin of the path and the loads on paths with less than `min_slack_ns` of slack (the buffer and the
wires the reroute gives it must not make them critical), and keeps it when the worst setup slack does not get worse and the total
negative slack gets better (the sizing criterion); a net is isolated at most once, and nets with
a top-level port or a register clock pin, and the clock network of a path (its pins up to the
launching flop's clock pin), are left alone. The kept buffers go into the netlist, the layout (beside the
driver) and the Verilog; the reroute and sign-off that follow are what counts.

The Tcl runs in the sizing script, after the sizing passes (closer.physical.repair.sizing), so
it sees the sized gates. With the sign-off SPEF read, the new net has no wires in OpenSTA's view
and the old one keeps its wiring: the in-tool gain is an estimate the reroute then checks.
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

# smallest input capacitance first: the lightest load on the critical net
BUFFER_CELLS = ("sky130_fd_sc_hd__buf_1", "sky130_fd_sc_hd__buf_2", "sky130_fd_sc_hd__buf_4")
PREFIX = "setup_iso_"  # instances (and, with `_net`, nets) the repair adds
_ISOLATE = re.compile(r"^CLOSER_ISOLATE (\S+) (\S+) ((?:\S+ ?)+)$", re.M)


@dataclass(frozen=True)
class Isolation:
    master: str
    driver: tuple[str, str]              # (instance, output pin) of the net, netlist names
    sinks: tuple[tuple[str, str], ...]   # the loads moved behind the buffer


# after the sizing passes: closer_best, closer_score and closer_fh are the sizing script's
ISOLATE_TCL = """\
set closer_bufs {{{cells}}}
set closer_nb 0
set closer_iso {{}}
proc closer_ours {{name}} {{ return [string match {prefix}* $name] }}
# register clock pins: a path's pins up to its launching one are the clock network, never buffered
set closer_ck [dict create]
foreach pin [all_registers -clock_pins] {{ dict set closer_ck [get_full_name $pin] 1 }}
proc closer_through_slack {{name}} {{
  set ends [find_timing_paths -path_delay max -through [get_pins $name]]
  if {{[llength $ends] == 0}} {{ return 1.0 }}
  return [[lindex $ends 0] slack]
}}
for {{set pass 0}} {{$pass < {passes}}} {{incr pass}} {{
  if {{[lindex $closer_best 0] >= 0.0}} {{ break }}
  # (driver pin, next pin of the path) by name: a network edit leaves path objects dangling
  set pairs {{}}
  foreach end [find_timing_paths -path_delay max -group_count {paths} -endpoint_count 1 -slack_max 0.0] {{
    # OpenSTA lists a path's pins from the endpoint back to the clock source
    set pins [lreverse [[$end path] pins]]
    set first 0
    for {{set i 0}} {{$i < [llength $pins]}} {{incr i}} {{
      if {{[dict exists $closer_ck [get_full_name [lindex $pins $i]]]}} {{ set first [expr {{$i + 1}}] }}
    }}
    for {{set i $first}} {{$i + 1 < [llength $pins]}} {{incr i}} {{
      set p [lindex $pins $i]
      if {{![$p is_driver] || [$p instance] == "NULL"}} {{ continue }}
      set pair [list [get_full_name $p] [get_full_name [lindex $pins [expr {{$i + 1}}]]]]
      if {{[lsearch -exact $pairs $pair] < 0}} {{ lappend pairs $pair }}
    }}
  }}
  set improved 0
  foreach pair $pairs {{
    lassign $pair drv keep
    if {{[closer_ours $drv]}} {{ continue }}
    set net [get_full_name [get_nets -of_objects [get_pins $drv]]]
    if {{[llength [get_ports -quiet -of_objects [get_nets $net]]]}} {{ continue }}
    set off {{}}
    set ours 0
    foreach pin [get_pins -of_objects [get_nets $net]] {{
      set name [get_full_name $pin]
      if {{[closer_ours $name] || [dict exists $closer_ck $name]}} {{ set ours 1 }}
      if {{[$pin is_driver] || $name == $keep || [closer_through_slack $name] < {min_slack}}} {{ continue }}
      lappend off $name
    }}
    if {{$ours || [llength $off] == 0}} {{ continue }}
    # the new net's wires, for OpenSTA (it has no parasitics yet): the moved loads' share of the
    # old net's wire capacitance (farads; set_load takes the Liberty's picofarads)
    set wire [[get_nets $net] wire_capacitance rise [sta::cmd_corner] max]
    set share [expr {{1e12 * $wire * [llength $off] / ([llength $off] + 1.0)}}]
    foreach cell $closer_bufs {{
      set inst "{prefix}try_$closer_nb"
      incr closer_nb
      make_instance $inst [get_lib_cells */$cell]
      make_net "${{inst}}_o"
      foreach pin $off {{
        disconnect_pin $net [get_pins $pin]
        connect_pin "${{inst}}_o" [get_pins $pin]
      }}
      connect_pin $net [get_pins $inst/A]
      connect_pin "${{inst}}_o" [get_pins $inst/X]
      set_load $share [get_nets "${{inst}}_o"]
      set score [closer_score]
      if {{[lindex $score 0] >= [lindex $closer_best 0] && [lindex $score 1] > [lindex $closer_best 1]}} {{
        set closer_best $score
        lappend closer_iso [list $cell $drv $off]
        incr improved
        break
      }}
      # refused: disconnected and left floating (delete_instance crashes OpenSTA 2.0.17)
      disconnect_pin $net [get_pins $inst/A]
      disconnect_pin "${{inst}}_o" [get_pins $inst/X]
      foreach pin $off {{
        disconnect_pin "${{inst}}_o" [get_pins $pin]
        connect_pin $net [get_pins $pin]
      }}
    }}
  }}
  if {{$improved == 0}} {{ break }}
}}
foreach iso $closer_iso {{
  puts $closer_fh "CLOSER_ISOLATE [lindex $iso 0] [lindex $iso 1] [join [lindex $iso 2]]"
}}
"""


def isolate_tcl(passes: int, paths: int, min_slack_ns: float) -> str:
    return ISOLATE_TCL.format(cells=" ".join(BUFFER_CELLS), prefix=PREFIX, passes=passes, paths=paths,
                              min_slack=f"{min_slack_ns * 1e-9:.6g}")


def parse_isolations(text: str, netlist: Netlist, log: Path) -> list[Isolation]:
    """The kept buffers under the netlist's own names (raises ToolError on a pin the netlist does
    not have, a sink not on the driver's net, or a master outside BUFFER_CELLS)."""
    by_original = {netlist.original.get(name, name): name for name in netlist.instances}

    def pin(full: str) -> tuple[str, str]:
        inst, _, name = full.rpartition("/")
        safe = by_original.get(inst)
        if safe is None or name not in netlist.instances[safe].pins:
            raise ToolError(f"{log}: buffered pin {full!r} is not a pin of the netlist")
        return safe, name

    out = []
    for m in _ISOLATE.finditer(text):
        if m.group(1) not in BUFFER_CELLS:
            raise ToolError(f"{log}: isolation buffer {m.group(1)!r} is not one of {BUFFER_CELLS}")
        driver = pin(m.group(2))
        net = netlist.instances[driver[0]].pins[driver[1]]
        sinks = tuple(pin(p) for p in m.group(3).split())
        if any(netlist.instances[i].pins[p] != net for i, p in sinks):
            raise ToolError(f"{log}: a buffered load of {m.group(2)} is not on its net")
        out.append(Isolation(m.group(1), driver, sinks))
    return out


def add_isolations(netlist: Netlist, isolations: list[Isolation]) -> cts.ClockTree:
    """The buffers into `netlist` (in place), returned as the buffers of a tree, for
    `cts.write_verilog`."""
    inserted = cts.ClockTree("setup", 0, [])
    taken = sum(1 for name in netlist.instances if name.startswith(PREFIX))
    for k, iso in enumerate(isolations, start=taken):
        net = netlist.instances[iso.driver[0]].pins[iso.driver[1]]
        buf = cts.Buffer(f"{PREFIX}{k}", net, f"{PREFIX}net_{k}", 1, iso.sinks, iso.master)
        cts._insert(netlist, buf, iso.master)
        inserted.buffers.append(buf)
    return inserted


def insert_isolations(netlist: Netlist, layout: Layout, macros: dict[str, Macro],
                      isolations: list[Isolation]) -> cts.ClockTree:
    """`add_isolations`, and each buffer into `layout` beside its driver."""
    inserted = add_isolations(netlist, isolations)
    for buf, iso in zip(inserted.buffers, isolations):
        place_beside(layout, macros, netlist, buf.name, iso.master, iso.driver[0])
    return inserted


def place_beside(layout: Layout, macros: dict[str, Macro], netlist: Netlist, name: str, master: str,
                 anchor: str) -> None:
    """`name` (a new `master` cell) into the nearest free sites to the centre of `anchor`."""
    placed = layout.cells[anchor]
    m = macros[placed.master]
    widths = {n: round(macros[c.master].width * DBU) // SITE_W for n, c in layout.cells.items()}
    width = round(macros[master].width * DBU) // SITE_W
    place_mod._place_spill(layout, widths, [(name, placed.x + m.width * DBU / 2, placed.y + m.height * DBU / 2,
                                             width)], netlist)
