# PicoRV32 timing constraints (ours). The clock period is overridden by the fmax sweep; I/O
# delays are a fixed 20% of a 10 ns period so register-to-register paths dominate.
create_clock -name core_clock -period 10.0 [get_ports clk]
set_input_delay 2.0 -clock core_clock [delete_from_list [all_inputs] [get_ports clk]]
set_output_delay 2.0 -clock core_clock [all_outputs]
set_load 0.01 [all_outputs]
