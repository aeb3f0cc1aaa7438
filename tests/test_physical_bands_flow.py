"""Band routing with the real tools: the counter placed and routed in bands of 4 rows (every net
of it crossing some boundary), merged, and signed off as one layout; qrouter's RC trees of the
merged layout rooted at each net's real driver (qrouter patch 08)."""

from __future__ import annotations

import pytest

from closer.physical import PhysicalConfig
from closer.physical.route.bands import PIN_PREFIX, BandConfig
from closer.physical.signoff.parasitics import parse_rc
from tests.conftest import counter_through_physical


@pytest.fixture(scope="module")
def banded(tmp_path_factory, pdk_paths):
    work = tmp_path_factory.mktemp("banded")
    cfg = PhysicalConfig(clock_port="clk", clock_period_ns=5.0, bands=BandConfig(min_nets=1, rows=4))
    return counter_through_physical(work, pdk_paths, cfg), work / "phys"


def test_a_layout_routed_in_bands_signs_off_as_one(banded):
    result, _ = banded
    m = result.metrics
    assert m["closer__route__bands"] >= 3 and m["closer__route__band_crossings"] > 0
    assert m["closer__route__unrouted_nets"] == 0
    assert m["closer__signoff__drc__errors"] == 0
    assert m["closer__signoff__official_drc__errors"] == 0
    assert m["closer__signoff__lvs__clean"] is True


def test_rc_trees_start_at_the_real_driver_not_a_crossing_pin(banded):
    """Before patch 08 qrouter took the first pin its walk met for the driver of a net with no
    cell output: the counter's clk tree started at a crossing pin and the SPEF writer failed."""
    _, phys = banded
    trees = parse_rc(phys / "route" / "counter.rc")
    assert trees["clk"].driver == "PIN/clk"
    assert not any(PIN_PREFIX in t.driver for t in trees.values())
    rooted = parse_rc(phys / "route" / "bands" / "rc_with_crossings.rc")
    assert rooted["clk"].driver == "PIN/clk"
