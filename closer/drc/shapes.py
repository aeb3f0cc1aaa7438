"""Layouts as data: polygons in nm on GDS layers, written to GDS with KLayout's database.

The same model carries the generator's private layouts and the layouts a test-generator command
proposes, so a proposed test is parsed and bounded here, never run as code.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

COORD_LIMIT_NM = 10_000_000  # 10 mm: anything larger is not a rule probe
Point = tuple[int, int]


class Shape(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    layer: tuple[int, int]
    points: list[Point] = Field(min_length=3, max_length=256)
    holes: list[list[Point]] = Field(default_factory=list, max_length=16)
    in_subcell: bool = False  # drawn in a child cell placed under the top cell

    @field_validator("layer")
    @classmethod
    def _layer_range(cls, value: tuple[int, int]) -> tuple[int, int]:
        if not all(0 <= part <= 65535 for part in value):
            raise ValueError("GDS layer and datatype must be in 0..65535")
        return value

    @field_validator("points")
    @classmethod
    def _coords_range(cls, value: list[Point]) -> list[Point]:
        if any(abs(c) > COORD_LIMIT_NM for point in value for c in point):
            raise ValueError(f"coordinates beyond ±{COORD_LIMIT_NM} nm")
        return value

    @field_validator("holes")
    @classmethod
    def _holes_bounded(cls, value: list[list[Point]]) -> list[list[Point]]:
        """A hole is bounded like the outline: 3..256 points within the coordinate limit."""
        for hole in value:
            if not 3 <= len(hole) <= 256:
                raise ValueError("a hole needs 3 to 256 points")
            cls._coords_range(hole)
        return value


class Case(BaseModel):
    """One layout with its intended label: True when it violates the rule."""
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9_]{1,64}$")
    violates: bool | None = None  # None: a test without an expected outcome
    shapes: list[Shape] = Field(min_length=1, max_length=512)


def rect(layer: tuple[int, int], x1: int, y1: int, x2: int, y2: int, in_subcell: bool = False) -> Shape:
    return Shape(layer=layer, points=[(x1, y1), (x2, y1), (x2, y2), (x1, y2)], in_subcell=in_subcell)


def write_gds(case: Case, path: Path, rotation: int = 0, offset: Point = (0, 0)) -> None:
    """Write `case` to `path` (dbu 1 nm, top cell TOP, child cell SUB placed at a displacement),
    rotated by `rotation` × 90° and moved by `offset`."""
    import klayout.db as db

    layout = db.Layout()
    layout.dbu = 0.001
    top = layout.create_cell("TOP")
    sub = None
    for shape in case.shapes:
        polygon = db.Polygon([db.Point(x, y) for x, y in shape.points])
        for hole in shape.holes:
            polygon.insert_hole([db.Point(x, y) for x, y in hole])
        layer = layout.layer(*shape.layer)
        if shape.in_subcell:
            sub = sub or layout.create_cell("SUB")
            sub.shapes(layer).insert(polygon.moved(-7000, -3000))
        else:
            top.shapes(layer).insert(polygon)
    if sub is not None:
        top.insert(db.CellInstArray(sub.cell_index(), db.Trans(0, False, 7000, 3000)))
    top.transform(db.Trans(rotation % 4, False, *offset))
    path.parent.mkdir(parents=True, exist_ok=True)
    layout.write(str(path))
