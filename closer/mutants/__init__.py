"""Mutation-based verification scoring.

`generate` builds a set of faulty designs (Yosys `mutate` plus source-level operators), keeps only
those the reference oracle kills, and stores them with stable ids; `score` runs a testbench on the
golden design (the golden gate) and then on every stored mutant, in parallel and resumably.
"""
