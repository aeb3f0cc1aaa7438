"""Where a run's flow cache lives (closer.flow.reuse keeps the entries; this module only names the
folder, so a metered call finds it without importing the reuse machinery).

`$CLOSER_FLOW_CACHE` when set (`off` disables reuse; a folder shared by several runs: only for
runs whose agents are trusted, e.g. machinery baselines and CI), else the run's control directory
(`<trial>/run/flowcache`, outside the agent's reach; the runner removes it after the evaluation).
`closer task run` gives only the machinery baselines (deterministic: their repeated trials are
identical runs) the shared folder; a trial of an agent under test keeps its own, so its repeated
trials stay independent measurements. Budget rule (docs/tasks.md): a call served from the cache
is charged like any other call and recorded with `cost.reused = true`.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "CLOSER_FLOW_CACHE"
DISABLED = "off"
RUN_CACHE = "flowcache"  # the run-local cache, under a run's control directory
FLOW_REUSED = "closer__flow__reused"  # the metric: 1 when the call's flow run was served from the cache


def cache_dir(control: Path | None, shared_ok: bool = True) -> Path | None:
    """The cache a run's flows use: $CLOSER_FLOW_CACHE, else `control`/flowcache (None: no reuse).
    `shared_ok=False` (a trial of an agent under test: its repeated trials must be independent, and
    a cache shared across them would make a later trial's calls faster than the first's) keeps the
    run's own cache even when a shared one is set; `off` still disables reuse."""
    shared = os.environ.get(CACHE_ENV)
    if shared == DISABLED:
        return None
    if shared and shared_ok:
        return Path(shared).resolve()
    return None if control is None else control / RUN_CACHE
