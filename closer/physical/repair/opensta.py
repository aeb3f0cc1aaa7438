"""Running one of the repairs' OpenSTA scripts and reading its report: the script writes
`CLOSER_BEFORE <ws> <tns>`, its own result lines, `CLOSER_AFTER <ws> <tns>` (seconds) and a done
mark to a report file; the numbers come from that file, never from the log."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterator

from closer.errors import ToolError
from closer.physical.io.netlist import Netlist
from closer.procs import Command, run

Liberties = Path | tuple[Path, ...] | list[Path]  # the cells' Liberty first, then hard macros'


def liberty_reads(liberty: Liberties) -> list[str]:
    """OpenSTA `read_liberty` lines for one Liberty file or several."""
    return [f"read_liberty {{{lib}}}" for lib in ([liberty] if isinstance(liberty, Path) else liberty)]


def cell_liberty(liberty: Liberties) -> Path:
    """The standard cells' Liberty (the first)."""
    return liberty if isinstance(liberty, Path) else Path(liberty[0])


_SCORE = re.compile(r"^CLOSER_(BEFORE|AFTER) (\S+) (\S+)\s*$", re.M)


def run_script(stem: str, work: Path, script: Callable[[Path], str], done_mark: str, what: str) -> tuple[str, Path]:
    """Write `script(report)` to `<work>/<stem>.tcl`, run OpenSTA on it; (report text, log).
    Raises ToolError when OpenSTA fails, prints an Error, or the report lacks the done mark."""
    work.mkdir(parents=True, exist_ok=True)
    report = work / f"{stem}.rpt"
    report.unlink(missing_ok=True)
    tcl = work / f"{stem}.tcl"
    tcl.write_text(script(report))
    done = run(Command(["sta", "-no_init", "-exit", str(tcl)], cwd=work, timeout_s=900), work / f"{stem}.log",
               check=False)
    text = report.read_text(errors="replace") if report.is_file() else ""
    failed = re.search(r"^Error", done.log.read_text(errors="replace"), re.M)
    if done.returncode != 0 or done_mark not in text or failed:
        raise ToolError(f"OpenSTA {what} failed; log: {done.log}\n{done.log_tail()}")
    return text, done.log


def before_after(text: str, log: Path) -> tuple[tuple[float, float], tuple[float, float]]:
    """((ws, tns) before, (ws, tns) after) in ns (raises ToolError when either line is missing)."""
    scores = {m.group(1): (float(m.group(2)) * 1e9, float(m.group(3)) * 1e9) for m in _SCORE.finditer(text)}
    if set(scores) != {"BEFORE", "AFTER"}:
        raise ToolError(f"{log}: report without CLOSER_BEFORE/CLOSER_AFTER")
    return scores["BEFORE"], scores["AFTER"]


def named_rows(text: str, row: re.Pattern, netlist: Netlist) -> Iterator[tuple[str, re.Match]]:
    """Each `row` match with its first group (an instance as OpenSTA names it, the netlist's own
    name) mapped to the netlist's DEF-safe instance name."""
    safe = {orig: name for name, orig in netlist.original.items()}
    for m in row.finditer(text):
        yield safe.get(m.group(1), m.group(1)), m
