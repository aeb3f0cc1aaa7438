"""Windowed DRC (the repair's rounds on large designs): checking only where a round changed metal,
the markers elsewhere taken from the round it started from, gives the whole-chip answer."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from closer.errors import InputError
from closer.physical.flow import PhysicalConfig
from closer.physical.io.defio import net_segment_boxes
from closer.physical.signoff import drc
from closer.physical.signoff.gds import LAYERS
from tests.conftest import counter_through_physical


@pytest.fixture(scope="module")
def routed(tmp_path_factory, pdk_paths):
    """The counter through closer.physical (real Yosys, qrouter, KLayout): its GDS and final DEF."""
    work = tmp_path_factory.mktemp("drcwin")
    result = counter_through_physical(work, pdk_paths, PhysicalConfig(clock_port="clk", clock_period_ns=5.0))
    return result.gds, result.def_


def _with_rectangles(gds: Path, out: Path, rects_um: list[tuple[float, float, float, float]]) -> Path:
    """A copy of `gds` with met1 rectangles added to the top cell."""
    import klayout.db as kdb

    layout = kdb.Layout()
    layout.read(str(gds))
    top = layout.top_cell()
    layer = layout.layer(*LAYERS["met1"])
    for x1, y1, x2, y2 in rects_um:
        top.shapes(layer).insert(kdb.DBox(x1, y1, x2, y2))
    layout.write(str(out))
    return out


def test_net_segment_boxes_cover_each_nets_wiring(routed):
    _, final_def = routed
    segments = net_segment_boxes(final_def, {"clk", "no_such_net"})
    boxes = {n: (min(b[0] for b in bs), min(b[1] for b in bs), max(b[2] for b in bs), max(b[3] for b in bs))
             for n, bs in segments.items()}
    assert set(boxes) == {"clk"}
    x1, y1, x2, y2 = boxes["clk"]
    assert 0 <= x1 < x2 and 0 <= y1 < y2


def test_windowed_drc_equals_the_whole_chip_check(routed, tmp_path):
    gds, _ = routed
    base = drc.run_drc(gds)
    # two tiny met1 islands 0.1 um apart (m1.2 spacing, m1.6 area) in one window, one in another
    changed = _with_rectangles(gds, tmp_path / "changed.gds", [(20.0, 20.0, 20.2, 20.2), (20.3, 20.0, 20.5, 20.2),
                                                              (30.0, 25.0, 30.2, 25.2)])
    whole = drc.run_drc(changed)
    assert whole.total > base.total
    windows = [(19.5, 19.5, 21.0, 21.0), (29.5, 24.5, 30.7, 25.7)]
    windowed = drc.run_drc(changed, tmp_path / "win", windows=windows, base=base)
    assert windowed.windows == 2
    assert windowed.counts == whole.counts
    assert sorted(b for v in windowed.boxes.values() for b in v) == sorted(b for v in whole.boxes.values() for b in v)


def test_windows_that_miss_the_change_miss_its_markers(routed, tmp_path):
    """The other way: the windows decide what is checked; a change outside them is not seen."""
    gds, _ = routed
    base = drc.run_drc(gds)
    changed = _with_rectangles(gds, tmp_path / "changed.gds", [(20.0, 20.0, 20.2, 20.2), (20.3, 20.0, 20.5, 20.2)])
    assert drc.run_drc(changed).total > base.total
    missed = drc.run_drc(changed, windows=[(5.0, 5.0, 6.0, 6.0)], base=base)
    assert missed.counts == base.counts


def test_windowed_drc_needs_its_base(routed):
    gds, _ = routed
    with pytest.raises(InputError, match="needs both"):
        drc.run_drc(gds, windows=[(0.0, 0.0, 1.0, 1.0)])


def test_more_windows_than_the_limit_check_the_whole_chip(routed, tmp_path, monkeypatch):
    """Past MAX_WINDOWS a windowed check would cost more than the whole one: the whole chip is
    checked (windows 0), so even windows that miss the change find it."""
    gds, _ = routed
    base = drc.run_drc(gds)
    changed = _with_rectangles(gds, tmp_path / "changed.gds", [(20.0, 20.0, 20.2, 20.2), (20.3, 20.0, 20.5, 20.2)])
    monkeypatch.setattr(drc, "MAX_WINDOWS", 1)
    many = drc.run_drc(changed, windows=[(5.0, 5.0, 6.0, 6.0), (7.0, 7.0, 8.0, 8.0)], base=base)
    assert many.windows == 0 and many.counts == drc.run_drc(changed).counts != base.counts
    assert drc.run_drc(changed, windows=[(5.0, 5.0, 6.0, 6.0)], base=base).counts == base.counts  # within the limit
