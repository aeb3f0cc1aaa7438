"""Floorplan: die, core rows, tap cells, IO pins and the power grid."""
