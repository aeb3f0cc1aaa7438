"""Sign-off under the official SKY130 rules (issue 18): the official KLayout deck as the DRC gate
(two-way, injected FEOL and BEOL violations), the LEF antenna check (two-way, a long stub), the
same-net hole fill for m1.7 (two-way). The checks on the routed counter (official deck two-way,
antenna long stub, pin labels) are in tests/test_physical.py, beside its one counter run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from closer.physical.repair.cleanup import fill_holes
from closer.physical.signoff.drc import run_drc
from closer.physical.io.lef import read_macros, read_tech
from closer.physical.signoff.signoff_drc import read_report, run_signoff_drc

kdb = pytest.importorskip("klayout.db")

MET1 = (68, 20)


def _gds(path: Path, boxes: list[tuple[tuple[int, int], tuple[int, int, int, int]]]) -> Path:
    layout = kdb.Layout()
    layout.dbu = 0.001
    top = layout.create_cell("TOP")
    for (layer, dt), box in boxes:
        top.shapes(layout.layer(layer, dt)).insert(kdb.Box(*box))
    layout.write(str(path))
    return path


# ---- recorded output ---------------------------------------------------------------------

def test_report_counts_every_category_and_item(tmp_path: Path):
    report = tmp_path / "r.lyrdb"
    report.write_text(
        "<?xml version='1.0' encoding='utf-8'?><report-database><categories>"
        "<category><name>m1.7</name><categories/></category>"
        "<category><name>poly.1a</name><categories/></category></categories>"
        "<items><item><category>'m1.7'</category></item><item><category>'m1.7'</category></item></items>"
        "</report-database>")
    assert read_report(report) == {"m1.7": 2, "poly.1a": 0}
    (tmp_path / "bad.lyrdb").write_text("<report-database><categories>")
    with pytest.raises(Exception, match="bad.lyrdb"):
        read_report(tmp_path / "bad.lyrdb")


def test_antenna_limits_from_the_tech_lef(pdk_paths):
    tech = read_tech(pdk_paths.tech_lef)
    met3, via = tech.antenna["met3"], tech.antenna["via"]
    assert met3.thickness == 0.8 and met3.uses_side_area and not via.uses_side_area
    assert met3.limit(0.0) == 400.0              # no diffusion: the PWL's first point
    assert met3.limit(0.0225) == pytest.approx(2609.0)
    assert 2609 < met3.limit(0.4455) < 11600     # a buf_2 output's diffusion
    assert via.limit(0.0) == 6.0
    pins = read_macros(pdk_paths.cell_lef)
    assert pins["sky130_fd_sc_hd__buf_2"].pins["A"].gate_area == pytest.approx(0.159)
    assert pins["sky130_fd_sc_hd__diode_2"].pins["DIODE"].diff_area == pytest.approx(0.4347)


# ---- m1.7: same-net hole fill, two-way ---------------------------------------------------

def _ring(path: Path, inner: list = ()) -> Path:
    """A met1 ring (one net) around a 0.245 x 0.2 um hole (0.049 um^2 < m1.7's 0.14), nm."""
    x0, y0, w = 0, 0, 140
    hole = (x0 + w, y0 + w, x0 + w + 245, y0 + w + 200)
    outer = (x0, y0, hole[2] + w, hole[3] + w)
    boxes = [(MET1, (outer[0], outer[1], outer[2], hole[1])), (MET1, (outer[0], hole[3], outer[2], outer[3])),
             (MET1, (outer[0], outer[1], hole[0], outer[3])), (MET1, (hole[2], outer[1], outer[2], outer[3]))]
    return _gds(path, boxes + [(MET1, b) for b in inner])


@pytest.mark.slow
def test_small_hole_is_filled_unless_something_lies_in_it(tmp_path: Path, pdk_paths):
    """Two rings: an empty hole (filled) and a hole with another polygon inside (left alone:
    filling it would bridge two nets). Closer's m1.7 agrees with the official deck's."""
    empty = _ring(tmp_path / "a.gds")
    busy = _ring(tmp_path / "b.gds", inner=[(200, 200, 260, 260)])
    gds = tmp_path / "rings.gds"
    layout = kdb.Layout()
    layout.read(str(empty))
    other = kdb.Layout()
    other.read(str(busy))
    shapes = kdb.Region(other.top_cell().begin_shapes_rec(other.find_layer(*MET1))).moved(2000, 0)
    layout.top_cell().shapes(layout.find_layer(*MET1)).insert(shapes)
    layout.write(str(gds))
    assert run_drc(gds).counts["m1.7"] == 2
    assert run_signoff_drc(gds, "TOP", tmp_path / "before", pdk_paths.signoff_drc_deck).counts["m1.7"] == 2
    assert fill_holes(gds) == {"met1": 1}
    assert run_drc(gds).counts["m1.7"] == 1
    assert run_signoff_drc(gds, "TOP", tmp_path / "after", pdk_paths.signoff_drc_deck).counts["m1.7"] == 1
