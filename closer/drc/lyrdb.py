"""Reading a KLayout report database (`.lyrdb`): violation items per category."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

MAX_LYRDB_BYTES = 64 * 1024 * 1024


class ReportError(ValueError):
    """The report database is missing, oversized or not a KLayout report database."""


def category_counts(path: Path) -> dict[str, int]:
    """Items per category name (nested categories as `parent.child`, quotes removed)."""
    if not path.is_file():
        raise ReportError(f"{path.name}: no report database")
    if path.stat().st_size > MAX_LYRDB_BYTES:
        raise ReportError(f"{path.name}: report database over {MAX_LYRDB_BYTES // 2**20} MiB")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ReportError(f"{path.name}: not XML ({exc})") from exc
    if root.tag != "report-database":
        raise ReportError(f"{path.name}: root element is <{root.tag}>, not <report-database>")
    counts: Counter[str] = Counter()
    for item in root.iterfind("items/item"):
        counts[_category_name(item.findtext("category", default=""))] += 1
    return dict(counts)


def _category_name(text: str) -> str:
    return ".".join(part.strip("'") for part in text.strip().split("'.'"))
