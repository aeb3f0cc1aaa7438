"""Reference testbench of PicoRV32 (self-contained): builds our firmware for one configuration and
runs every program of it through the memory model of `firmware_tb`.

The configuration comes from $CLOSER_PICORV32_CONFIG (default "default"); the simulator's
toplevel must have been built with that configuration's parameters. Used as the coverage task's
reference testbench and as the mutation oracle (`closer mutants`' convention
oracles/<design>/test_<design>.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import firmware_tb

from closer.picorv32.firmware import build_programs, config_march, programs_for

CONFIG = os.environ.get("CLOSER_PICORV32_CONFIG", "default")

for _image in build_programs(programs_for(CONFIG), config_march(CONFIG), Path.cwd() / "firmware"):
    globals()[f"test_{_image.name}"] = firmware_tb._make_test(_image.as_job_entry())
