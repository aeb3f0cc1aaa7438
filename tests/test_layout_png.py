"""closer.tasks.layout_png with real KLayout: the DRC markers of a report database, whatever
shape they hold, become boxes at their place; a layout with markers renders to a PNG."""

from __future__ import annotations

from pathlib import Path

from closer.tasks import layout_png


def _report(path: Path) -> Path:
    import klayout.db as kdb
    import klayout.rdb as rdb

    db = rdb.ReportDatabase("drc")
    cell = db.create_cell("top")
    category = db.create_category("m1.2")
    for shape in (kdb.DBox(1.0, 2.0, 1.5, 2.25), kdb.DPolygon(kdb.DBox(10.0, 10.0, 10.2, 10.4)),
                  kdb.DEdgePair(kdb.DEdge(20.0, 20.0, 20.0, 21.0), kdb.DEdge(20.1, 20.0, 20.1, 21.0))):
        db.create_item(cell.rdb_id(), category.rdb_id()).add_value(shape)
    db.save(str(path))
    return path


def test_every_marker_shape_becomes_its_box(tmp_path: Path) -> None:
    boxes = layout_png.drc_boxes(_report(tmp_path / "drc.lyrdb"))
    expected = [(1.0, 2.0, 1.5, 2.25), (10.0, 10.0, 10.2, 10.4), (20.0, 20.0, 20.1, 21.0)]
    assert sorted(tuple(round(v, 6) for v in box) for box in boxes) == expected
    assert layout_png.drc_boxes(tmp_path / "absent.lyrdb") == []


def test_a_layout_with_markers_renders(tmp_path: Path) -> None:
    import klayout.db as kdb

    layout = kdb.Layout()
    layout.dbu = 0.001
    top = layout.create_cell("top")
    top.shapes(layout.layer(68, 20)).insert(kdb.Box(0, 0, 30000, 30000))
    layout.write(str(tmp_path / "top.gds"))
    png = layout_png.render(tmp_path / "top.gds", tmp_path / "top.png",
                            layout_png.drc_boxes(_report(tmp_path / "drc.lyrdb")), [(5.0, 5.0)], size_px=200)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not (tmp_path / "top.marked.gds").exists()
