create_clock -name core_clock -period 20.0 [get_ports clk]
set_input_delay 1.0 -clock core_clock [delete_from_list [all_inputs] [get_ports clk]]
set_output_delay 1.0 -clock core_clock [all_outputs]
set_load 0.005 [all_outputs]
