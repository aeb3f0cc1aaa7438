"""PicoRV32, the benchmark's second design: firmware oracles (RTL and gate level), synthesis and
STA for the fmax task, and the oracles of the fmax / coverage / debug pilot tasks.

The upstream RTL is fetched by `closer.designs.fetch` and never committed; everything here reads it
from the cache.
"""
