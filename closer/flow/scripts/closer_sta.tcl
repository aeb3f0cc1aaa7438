# Multi-corner STA and power of a gate netlist with OpenSTA (the Debian 2.0.17 build and newer).
# Reads sta_config.tcl (written by closer.flow.sta_task) and writes one line per value to the
# report file $closer_report (never to the log, which other input could print into):
#   metric <name> <value>             slack in seconds, power in W (OpenSTA's internal SI units)
#   clock <name> <period> <source ports...>   period in the Liberty time unit (ns)
#   done                              last line when every report was made
# The SDC files in $closer_sdc are the canonical ones closer.sdc wrote (data, no Tcl).
# timing__unconstrained__count is the unconstrained-path audit (closer_untimed_pins below), not
# only check_setup's count; reports/untimed.rpt lists the pins it counted.
# Python (closer.flow.metrics) turns these into ORFS-named metrics; readable reports go to reports/.
# This OpenSTA build carries on after `exit` or an error inside a command file, so failures are
# signalled by `Error:` lines (SiliconCompiler fails the node on them) and a missing `done`.

source sta_config.tcl
set closer_report_fh [open $closer_report w]

proc metric { name value } {
    global closer_report_fh
    puts $closer_report_fh "metric $name $value"
}

proc is_nan { value } {
    return [string match -nocase "*nan*" $value]
}

# Design power {internal switching leakage total nan_instances}. This OpenSTA build returns NaN
# internal power for a gate whose input activity underflows (e.g. the upper bits of a 64-bit
# counter's AND chain); its design total is then NaN and report_power fails. In that case the
# totals are the sum of the tool's own per-instance values over the instances it could compute,
# and nan_instances says how many it could not.
proc closer_design_power { corner } {
    set totals [lrange [sta::design_power $corner] 0 3]
    if { ![is_nan $totals] } {
        return [concat $totals 0]
    }
    set sums {0.0 0.0 0.0 0.0}
    set nan_instances 0
    foreach inst [get_cells *] {
        set values [lrange [sta::instance_power $inst $corner] 0 3]
        if { [is_nan $values] } {
            incr nan_instances
            continue
        }
        set next {}
        foreach sum $sums value $values {
            lappend next [expr {$sum + $value}]
        }
        set sums $next
    }
    return [concat $sums $nan_instances]
}

# --- unconstrained-path audit ----------------------------------------------------------------
# `check_setup -unconstrained_endpoints` counts endpoints without a clock only: a false path on
# everything (or on all inputs / all registers) leaves it at 0. The audit asks OpenSTA for the
# slacks at each pin instead (`$vertex slacks rise|fall`: one value per path analysis point, i.e.
# [min max] for each corner in turn; 1e30 = nothing timed there). A pin counts as untimed when no
# corner has a finite setup (max) slack or none has a finite hold (min) slack:
#   * every timing endpoint (register data pins, output ports: `sta::endpoints`), except an
#     instance's output pin that drives nothing (OpenSTA lists those as endpoints too: a macro's
#     unused port, e.g. an SRAM's dout0 when only its read port reads; nothing uses that path);
#   * every input port that is not a clock source and drives at least one load (an unused input
#     has no path to time).
proc closer_pin_timed { pin } {
    set min_ok 0
    set max_ok 0
    foreach vertex [$pin vertices] {
        if { $vertex == "NULL" } {
            continue
        }
        foreach rf {rise fall} {
            set index 0
            foreach slack [$vertex slacks $rf] {
                if { abs($slack) < 1e29 } {
                    if { $index % 2 == 0 } { set min_ok 1 } else { set max_ok 1 }
                }
                incr index
            }
        }
    }
    return [expr { $min_ok && $max_ok }]
}

proc closer_input_has_load { port } {
    set net [get_nets -quiet [get_full_name $port]]
    if { $net == {} } {
        return 0
    }
    return [closer_net_has_load $net]
}

proc closer_net_has_load { net } {
    set loads 0
    set pins [$net pin_iterator]
    while { [$pins has_next] } {
        if { [[$pins next] is_load] } {
            incr loads
        }
    }
    $pins finish
    return [expr { $loads > 0 }]
}

proc closer_dangling_output { pin } {
    if { [$pin is_top_level_port] || ![$pin is_driver] } {
        return 0
    }
    set net [$pin net]
    return [expr { $net == "NULL" || ![closer_net_has_load $net] }]
}

proc closer_untimed_pins { clock_sources } {
    sta::find_requireds
    set untimed {}
    foreach pin [sta::endpoints] {
        if { [closer_dangling_output $pin] } {
            continue
        }
        if { ![closer_pin_timed $pin] } {
            lappend untimed "endpoint [get_full_name $pin]"
        }
    }
    foreach port [all_inputs] {
        set name [get_full_name $port]
        if { [lsearch -exact $clock_sources $name] >= 0 || ![closer_input_has_load $port] } {
            continue
        }
        if { ![closer_pin_timed [sta::get_port_pin_error "port" $port]] } {
            lappend untimed "input $name"
        }
    }
    return $untimed
}

proc closer_report_corners { corners } {
    foreach corner $corners {
        lassign $corner name libraries checks
        set c [sta::find_corner $name]
        # max-transition limit violations (this OpenSTA build has no capacitance-limit check)
        metric timing__drv__max_slew__corner__$name [llength [sta::pin_slew_limit_violations $c max]]
        if { [lsearch $checks setup] >= 0 } {
            metric timing__setup__ws__corner__$name [sta::worst_slack_corner $c max]
            metric timing__setup__tns__corner__$name [sta::total_negative_slack_corner_cmd $c max]
            report_checks -path_delay max -corner $name -format full_clock -digits 4 \
                > reports/setup.$name.rpt
        }
        if { [lsearch $checks hold] >= 0 } {
            metric timing__hold__ws__corner__$name [sta::worst_slack_corner $c min]
            metric timing__hold__tns__corner__$name [sta::total_negative_slack_corner_cmd $c min]
            report_checks -path_delay min -corner $name -format full_clock -digits 4 \
                > reports/hold.$name.rpt
        }
        if { [lsearch $checks power] >= 0 } {
            lassign [closer_design_power $c] internal switching leakage total nan_instances
            metric power__internal__total__corner__$name $internal
            metric power__switching__total__corner__$name $switching
            metric power__leakage__total__corner__$name $leakage
            metric power__total__corner__$name $total
            metric power__nan_instances__corner__$name $nan_instances
            if { $nan_instances == 0 } {
                report_power -corner $name > reports/power.$name.rpt
            }
        }
    }
}

set corner_names {}
foreach corner $closer_corners {
    lappend corner_names [lindex $corner 0]
}
define_corners {*}$corner_names
foreach corner $closer_corners {
    lassign $corner name libraries checks
    # the main library's Liberty of this corner, then each macro's (closer.flow.macros)
    foreach liberty $libraries {
        read_liberty -corner $name $liberty
    }
}
read_verilog $closer_netlist
link_design $closer_top
foreach sdc $closer_sdc {
    read_sdc $sdc
}

# --- clocks: the design's clock port must carry a clock --------------------------------------
set clocks [all_clocks]
metric clocks__count [llength $clocks]
set clock_on_port 0
set clock_sources {}
foreach clk $clocks {
    set sources {}
    foreach pin [get_property $clk sources] {
        lappend sources [get_full_name $pin]
    }
    lappend clock_sources {*}$sources
    if { [lsearch -exact $sources $closer_clock_port] >= 0 } {
        set clock_on_port 1
    }
    puts $closer_report_fh "clock [get_property $clk name] [get_property $clk period] $sources"
}
check_setup -verbose -unconstrained_endpoints > reports/unconstrained.rpt
set unconstrained 0
set fh [open reports/unconstrained.rpt r]
regexp {There are (\d+) unconstrained endpoints} [read $fh] -> unconstrained
close $fh
metric timing__check_setup__unconstrained $unconstrained
set untimed [closer_untimed_pins $clock_sources]
set fh [open reports/untimed.rpt w]
puts $fh "There are [llength $untimed] untimed pins (no timed setup or hold check at any corner)."
foreach item $untimed {
    puts $fh "  $item"
}
close $fh
metric timing__unconstrained__count [llength $untimed]

set clock_problem ""
if { [llength $clocks] == 0 } {
    set clock_problem "no clock is defined: the SDC ([join $closer_sdc {, }]) has no create_clock"
} elseif { !$clock_on_port } {
    set clock_problem "clock port $closer_clock_port has no clock in the SDC\
        ([join $closer_sdc {, }])"
}
if { $clock_problem != "" } {
    puts "Error: $clock_problem; $unconstrained endpoints are unconstrained"
} else {
    closer_report_corners $closer_corners
    puts $closer_report_fh "done"
}
close $closer_report_fh
puts "closer_sta: results in $closer_report"
