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
from dataclasses import dataclass
from pathlib import Path

from closer import procs
from closer.errors import InputError, ToolError

# the deck's own switches (its header): seal ring and floating-metal checks are for a chip
# top level with a seal ring and for the precheck's density pass, not for a placed block
DECK_OPTIONS = {"feol": "true", "beol": "true", "offgrid": "true", "floating_met": "false",
                "seal": "false", "thr": "2"}
TIMEOUT_S = 1800.0


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


def command(deck: Path, gds: Path, top: str, report: Path) -> procs.Command:
    argv = ["klayout", "-b", "-r", str(deck), "-rd", f"input={gds}", "-rd", f"top_cell={top}",
            "-rd", f"report={report}"]
    for key, value in DECK_OPTIONS.items():
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


def run_signoff_drc(gds: Path, top: str, out_dir: Path, deck: Path) -> SignoffDrcResult:
    """Run the official deck on `gds` (top cell `top`); report and counts in `out_dir`."""
    if not deck.is_file():
        raise InputError(f"official DRC deck {deck} does not exist (PDK_ROOT needs "
                         "sky130A/libs.tech/klayout/drc/sky130A_mr.drc)")
    if not Path(gds).is_file():
        raise InputError(f"DRC input {gds} does not exist")
    out_dir.mkdir(parents=True, exist_ok=True)
    report = out_dir / "signoff_drc.lyrdb"
    report.unlink(missing_ok=True)  # a stale report must never be read as this run's
    done = procs.run(command(deck, Path(gds).resolve(), top, report.resolve()), out_dir / "klayout.log")
    if not report.is_file():
        raise ToolError(f"klayout wrote no report {report}; log: {out_dir / 'klayout.log'}")
    counts = read_report(report)
    if not counts:
        raise ToolError(f"{report}: the deck checked no rule; log: {out_dir / 'klayout.log'}")
    result = SignoffDrcResult(counts, report, done.wall_s)
    (out_dir / "signoff_drc.json").write_text(json.dumps(
        {"gds": str(gds), "top": top, "deck": str(deck), "options": DECK_OPTIONS, "total": result.total,
         "nonzero": result.nonzero(), "counts": counts, "wall_s": round(done.wall_s, 2)}, indent=1))
    return result
