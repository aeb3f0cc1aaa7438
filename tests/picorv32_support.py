"""Shared helpers of the PicoRV32 tests: the fetched source (from the pinned package by default)."""

from __future__ import annotations

import os
from pathlib import Path

from closer.designs.fetch import fetch_design, load_fetch_spec

DESIGN = "picorv32"


def mirror_path() -> Path | None:
    env = os.environ.get(load_fetch_spec(DESIGN).source_env or "")
    return Path(env) if env and Path(env).exists() else None


def picorv32_source() -> Path:
    """The fetched upstream tree: from $CLOSER_PICORV32_SRC when set, else from the pinned
    package that bootstrap installs (a missing package fails the test: it is a set-up error)."""
    return fetch_design(DESIGN, from_path=mirror_path())
