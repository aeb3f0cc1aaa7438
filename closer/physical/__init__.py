"""Placement, routing and signoff for sky130_fd_sc_hd (the back half of Closer's flow).

Entry point: `run_physical(netlist_v, top, sdc, out_dir, config) -> PhysicalResult`.
See docs/physical.md.

The names are loaded on first use: the front half imports light submodules (closer.physical.io.lef
for a macro's pins) and must not pay for the whole back half (placer, router, numpy) in every
metered synthesis call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["PhysicalConfig", "PhysicalResult", "run_physical"]

if TYPE_CHECKING:
    from closer.physical.flow import PhysicalConfig, PhysicalResult, run_physical


def __getattr__(name: str):
    if name in __all__:
        from closer.physical import flow

        return getattr(flow, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
