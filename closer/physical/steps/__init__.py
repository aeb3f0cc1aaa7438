"""The physical flow's steps by stage (closer.physical.flow runs them in its order):

    base            PhysicalConfig, PhysicalPaths, Context, Step, run_steps
    build           netlist -> placed layout: ReadNetlist ... PinAccess
    routing         Route, Replace, ReplaceAfterRepair
    checks          Gds, Drc, Lvs, Repair, Cleanup, SignoffDrc
    reroute         changed cells into the routed layout, every other wire kept
    antenna_repair  Antenna and its LayoutCheckpoint
    timing          Sta, RoutedSetupRepair, SetupRepair
"""
