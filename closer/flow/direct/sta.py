"""The STA node's files without SiliconCompiler: Debian's OpenSTA (`sta`, 2.0.17) runs
`scripts/closer_sta.tcl` in the node folder with `sta_config.tcl`, which names the netlist, the
canonical SDC files (`sdc/<n>.sdc`, each parsed by closer.sdc and rewritten: OpenSTA never reads
a design's own SDC text), the report file and, per corner, its Liberty files and checks.

The script writes its numbers to `reports/closer_sta.txt` (`metric`/`clock`/`done` lines, through
a file handle: nothing else OpenSTA reads can print into it; the log is not parsed);
`collect_sta` reads them into `reports/sta.json` and raises StaParseError when the script did not
finish. Both engines' STA nodes use these functions (closer.flow.sta_task is SiliconCompiler's).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from closer.procs import Command

SCRIPTS_DIR = Path(__file__).resolve().parents[1] / "scripts"
STA_SCRIPT = SCRIPTS_DIR / "closer_sta.tcl"
STA_JSON = "reports/sta.json"
STA_REPORT = "reports/closer_sta.txt"
SDC_JSON = "reports/sdc.json"
SDC_DIR = "sdc"
_METRIC = re.compile(r"metric ([A-Za-z0-9_]+) (\S+)")
_CLOCK = re.compile(r"clock (\S+) (\S+)((?: \S+)*)")


class StaParseError(RuntimeError):
    """The STA report lacks the lines the script writes when it completes, or has others."""


@dataclass(frozen=True)
class StaCorner:
    name: str
    liberty: list[str]      # the main library's file first, then the macros'
    checks: list[str]


def write_sta_inputs(node: Path, top: str, corners: list[StaCorner], sdc_sources: list[str],
                     allowed_exceptions: list[str], clock_port: str) -> None:
    """The node's canonical SDC files, `reports/sdc.json` (the exceptions each uses) and
    `sta_config.tcl`; an old report is removed so a failed run cannot pass for a finished one."""
    from closer.sdc import SdcPolicy, write_canonical

    policy = SdcPolicy(allow=frozenset(allowed_exceptions))
    sdc, exceptions = [], []
    for number, source in enumerate(sdc_sources):
        dest = Path(SDC_DIR) / f"{number}.sdc"
        canonical = write_canonical(Path(source), node / dest, policy)
        exceptions += [f"{source}:{c.line}: {c.name}" for c in canonical.exceptions]
        sdc.append(str(dest))
    (node / SDC_JSON).parent.mkdir(parents=True, exist_ok=True)
    (node / SDC_JSON).write_text(json.dumps({"exceptions": exceptions}, indent=1) + "\n")
    (node / STA_REPORT).unlink(missing_ok=True)
    corner_text = []
    for corner in corners:
        libs = " ".join(f"{{{f}}}" for f in corner.liberty)
        corner_text.append(f"{{{corner.name} {{{libs}}} {{{' '.join(corner.checks)}}}}}")
    lines = [
        f"set closer_top {{{top}}}",
        f"set closer_netlist {{inputs/{top}.vg}}",
        f"set closer_sdc {{{' '.join('{' + s + '}' for s in sdc)}}}",
        f"set closer_report {{{STA_REPORT}}}",
        f"set closer_corners {{{' '.join(corner_text)}}}",
        f"set closer_clock_port {{{clock_port}}}",
    ]
    (node / "sta_config.tcl").write_text("\n".join(lines) + "\n")


def parse_version(stdout: str) -> str:
    """`sta -version` prints the version alone: `2.0.17`."""
    return stdout.strip().split()[0]


def sta_command(node: Path, timeout_s: float | None = None) -> Command:
    return Command(["sta", "-no_init", "-exit", str(STA_SCRIPT)], cwd=node, timeout_s=timeout_s)


def collect_sta(node: Path, top: str, macro_liberty: dict[str, list[str]]) -> None:
    """`reports/sta.json` from the script's report (StaParseError when it did not finish), and
    the netlist passed on as the node's output."""
    report = node / STA_REPORT
    result = parse_sta_report(report.read_text(errors="replace") if report.is_file() else "")
    result["sdc_exceptions"] = json.loads((node / SDC_JSON).read_text())["exceptions"]
    result["macro_liberty"] = macro_liberty
    (node / STA_JSON).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    shutil.copyfile(node / "inputs" / f"{top}.vg", node / "outputs" / f"{top}.vg")


def parse_sta_report(text: str) -> dict:
    """closer_sta.tcl's report file -> {"metrics", "clocks"}.

    Values stay as OpenSTA reported them: slack in seconds, power in watts, clock period in the
    Liberty time unit (ns). Raises StaParseError when the `done` line is missing or a line is not
    one the script writes.
    """
    metrics: dict[str, float] = {}
    clocks: list[dict] = []
    done = False
    for number, line in enumerate(text.splitlines(), start=1):
        if done:
            raise StaParseError(f"{STA_REPORT}:{number}: a line after 'done'")
        if match := _METRIC.fullmatch(line):
            metrics[match.group(1)] = _float(match.group(2), number)
        elif match := _CLOCK.fullmatch(line):
            clocks.append({"name": match.group(1), "period_ns": _float(match.group(2), number),
                           "sources": match.group(3).split()})
        elif line == "done":
            done = True
        else:
            raise StaParseError(f"{STA_REPORT}:{number}: not a line closer_sta.tcl writes: {line[:80]!r}")
    if not done:
        raise StaParseError(f"closer_sta.tcl did not finish (no 'done' line in {STA_REPORT})")
    return {"metrics": metrics, "clocks": clocks}


def _float(text: str, number: int) -> float:
    try:
        return float(text)
    except ValueError:
        raise StaParseError(f"{STA_REPORT}:{number}: {text!r} is not a number") from None
