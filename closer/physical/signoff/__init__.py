"""Sign-off on the final layout: GDS, DRC (Closer's deck and the official deck), LVS, antenna,
parasitics (SPEF) and STA."""
