"""The official sign-off DRC: the Efabless MPW-precheck KLayout manufacturing-rules deck
(`$PDK_ROOT/sky130A/libs.tech/klayout/drc/sky130A_mr.drc`) run by the KLayout executable in batch
mode on the final GDS, FEOL, BEOL and off-grid sections on.

The deck writes a KLayout marker database (`.lyrdb`, XML): one `<category>` per rule it checked,
one `<item>` per marker. `read_report` turns it into per-rule counts (every checked rule listed).
Closer's own deck (`closer.physical.signoff.drc`) stays the fast checker inside the repair loop; this one
is the gate.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from closer import procs
from closer.errors import InputError, ToolError

# the deck's own switches (its header): seal ring and floating-metal checks are for a chip
# top level with a seal ring and for the precheck's density pass, not for a placed block
DECK_OPTIONS = {"feol": "true", "beol": "true", "offgrid": "true", "floating_met": "false",
                "seal": "false", "thr": "2"}
TIMEOUT_S = 1800.0
# with jobs > 1 the deck's sections run in that many processes at once, BEOL alone and FEOL with
# off-grid (PicoRV32's final GDS, one process each: BEOL about 60 s, FEOL 27 s, off-grid 19 s, of
# the 108 s the whole deck took in one), their reports merged into one
PARTS: tuple[dict[str, str], ...] = ({"feol": "false", "beol": "true", "offgrid": "false"},
                                     {"feol": "true", "beol": "false", "offgrid": "true"})


@dataclass
class SignoffDrcResult:
    counts: dict[str, int]   # rule (the deck's category name) -> markers; every checked rule
    report: Path
    wall_s: float

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def nonzero(self) -> dict[str, int]:
        return {k: v for k, v in self.counts.items() if v}


def command(deck: Path, gds: Path, top: str, report: Path, sections: dict[str, str] | None = None) -> procs.Command:
    argv = ["klayout", "-b", "-r", str(deck), "-rd", f"input={gds}", "-rd", f"top_cell={top}",
            "-rd", f"report={report}"]
    for key, value in {**DECK_OPTIONS, **(sections or {})}.items():
        argv += ["-rd", f"{key}={value}"]
    return procs.Command(argv, timeout_s=TIMEOUT_S)


def read_report(lyrdb: Path) -> dict[str, int]:
    """Per-rule marker counts from a KLayout marker database (categories may nest: `a.b`)."""
    try:
        root = ET.parse(lyrdb).getroot()
    except (ET.ParseError, OSError) as exc:
        raise ToolError(f"{lyrdb}: not a readable KLayout marker database ({exc})") from exc
    counts: dict[str, int] = {}

    def walk(node, prefix: str) -> None:
        for cat in node.findall("categories/category"):
            name = prefix + (cat.findtext("name") or "").strip()
            counts[name] = 0
            walk(cat, name + ".")

    walk(root, "")
    items = root.find("items")
    for item in (items if items is not None else []):
        name = (item.findtext("category") or "").strip().strip("'")
        counts[name] = counts.get(name, 0) + 1
    return counts


def merge_reports(parts: list[Path], out: Path) -> None:
    """One marker database of several the deck wrote on the same top cell (categories and items
    of each, in order)."""
    trees = []
    for part in parts:
        try:
            trees.append(ET.parse(part))
        except (ET.ParseError, OSError) as exc:
            raise ToolError(f"{part}: not a readable KLayout marker database ({exc})") from exc
    root = trees[0].getroot()
    for section in ("categories", "items"):
        into = root.find(section)
        if into is None:
            into = ET.SubElement(root, section)
        for tree in trees[1:]:
            more = tree.getroot().find(section)
            into.extend(list(more) if more is not None else [])
    trees[0].write(out, encoding="utf-8", xml_declaration=True)


def run_signoff_drc(gds: Path, top: str, out_dir: Path, deck: Path, jobs: int = 1) -> SignoffDrcResult:
    """Run the official deck on `gds` (top cell `top`); report and counts in `out_dir`; with
    `jobs` > 1 its sections in parallel processes (PARTS)."""
    if not deck.is_file():
        raise InputError(f"official DRC deck {deck} does not exist (PDK_ROOT needs "
                         "sky130A/libs.tech/klayout/drc/sky130A_mr.drc)")
    if not Path(gds).is_file():
        raise InputError(f"DRC input {gds} does not exist")
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / "signoff_drc.lyrdb"
    report.unlink(missing_ok=True)  # a stale report must never be read as this run's
    gds = Path(gds).resolve()
    if jobs > 1:
        parts = [(out_dir / f"signoff_drc.part{k}.lyrdb", out_dir / f"klayout.part{k}.log", sections)
                 for k, sections in enumerate(PARTS, 1)]
        for part, _, _ in parts:
            part.unlink(missing_ok=True)
        with ThreadPoolExecutor(len(parts)) as pool:
            done = list(pool.map(lambda p: procs.run(command(deck, gds, top, p[0].resolve(), p[2]), p[1]), parts))
        missing = [str(log) for part, log, _ in parts if not part.is_file()]
        if missing:
            raise ToolError(f"klayout wrote no report; log: {', '.join(missing)}")
        merge_reports([part for part, _, _ in parts], report)
        wall, log = max(d.wall_s for d in done), ", ".join(str(log) for _, log, _ in parts)
    else:
        log = out_dir / "klayout.log"
        wall = procs.run(command(deck, gds, top, report.resolve()), log).wall_s
        if not report.is_file():
            raise ToolError(f"klayout wrote no report {report}; log: {log}")
    counts = read_report(report)
    if not counts:
        raise ToolError(f"{report}: the deck checked no rule; log: {log}")
    result = SignoffDrcResult(counts, report, wall)
    (out_dir / "signoff_drc.json").write_text(json.dumps(
        {"gds": str(gds), "top": top, "deck": str(deck), "options": DECK_OPTIONS,
         "parts": list(PARTS) if jobs > 1 else None, "total": result.total,
         "nonzero": result.nonzero(), "counts": counts, "wall_s": round(wall, 2)}, indent=1))
    return result
