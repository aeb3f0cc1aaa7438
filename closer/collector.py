"""Python's cyclic garbage collector paused over a hot loop whose objects hold no reference cycles
(decoded records, columns, output lines): its passes over many young objects find nothing there,
and full collections set off by a large batch cost more than the work they interrupt."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
