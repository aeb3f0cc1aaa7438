# crc_lfsr: one clock on port clk, 200 MHz; the period is the design.toml [clock] period_ns.
# rst_n is an asynchronous reset, timed as an input like the others (recovery/removal checks).
create_clock -name core_clock -period 5.0 [get_ports clk]
set_input_delay 1.0 -clock core_clock [delete_from_list [all_inputs] [get_ports clk]]
set_output_delay 1.0 -clock core_clock [all_outputs]
set_load 0.005 [all_outputs]
