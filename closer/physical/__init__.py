"""Placement, routing and signoff for sky130_fd_sc_hd (the back half of Closer's flow).

Entry point: `run_physical(netlist_v, top, sdc, out_dir, config) -> PhysicalResult`.
See docs/physical.md.
"""

from closer.physical.flow import PhysicalConfig, PhysicalResult, run_physical

__all__ = ["PhysicalConfig", "PhysicalResult", "run_physical"]
