"""File formats the physical steps read and write: gate netlist (Yosys JSON), LEF, DEF."""
