"""Shared helpers of the PicoRV32 tests: the fetched source, or a skip that says why not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from closer.designs.fetch import fetch_design, load_fetch_spec, local_source_available, unavailable_reason

DESIGN = "picorv32"


def mirror_path() -> Path | None:
    env = os.environ.get(load_fetch_spec(DESIGN).source_env or "")
    return Path(env) if env and Path(env).exists() else None


def picorv32_source() -> Path:
    """The fetched upstream tree; fetches from $CLOSER_PICORV32_SRC when only that exists; skips
    the test with the reason otherwise (CI has no GitHub access and no mirror)."""
    if local_source_available(DESIGN) is None and mirror_path() is None:
        pytest.skip(unavailable_reason(DESIGN))
    return fetch_design(DESIGN, from_path=mirror_path())
