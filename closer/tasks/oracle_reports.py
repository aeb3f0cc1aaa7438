"""The oracle's per-test reports, read strictly.

Each cocotb test of an oracle writes `<report dir>/<test>.json` (`{"test": <name>, "cycles": N,
...}`); the scoring config's counts are summed into `closer__sim__cycles`. The report folder gets
a fresh random name per run (`report_dir`), passed only to the testbench through its environment,
and the RTL policy (closer.tasks.rtl_policy) refuses file I/O from the design; on top of that the
reading is strict:

* the folder holds only regular `<name>.json` files: no other file, no folder, no symlink;
* at most one report per test of results.xml and at least one per passing test (a failing test
  may stop before it writes; then the cycles are not summed);
* each file is at most `MAX_REPORT_BYTES`, parses as JSON and validates as `CycleReport`
  (`test` equal to the file's name, `cycles` a non-negative integer).

Any problem is a `ReportError` (the evaluator records it as a verifier failure); nothing is
summed from a folder that has one.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

MAX_REPORT_BYTES = 1 << 20


class ReportError(Exception):
    """The oracle's reports are not what the oracle writes."""


class CycleReport(BaseModel):
    """One test's report (oracle-specific extra keys are kept, not read)."""

    model_config = ConfigDict(extra="allow")
    test: str = Field(description="the report's name (the oracle's name for its test); equals the file name "
                                  "without .json")
    cycles: StrictInt = Field(ge=0, description="workload cycles the testbench observed")


def report_dir(build: Path) -> Path:
    """A fresh report folder name for one simulation run (created by the testbench)."""
    return build / f"reports-{secrets.token_hex(8)}"


def testcase_outcomes(results_xml: Path) -> dict[str, bool]:
    """cocotb's results.xml: test name -> passed."""
    try:
        root = ElementTree.parse(results_xml).getroot()
    except (ElementTree.ParseError, OSError) as exc:
        raise ReportError(f"{results_xml}: does not parse: {exc}") from exc
    out = {}
    for case in root.iter("testcase"):
        name = case.get("name")
        if not name:
            raise ReportError(f"{results_xml}: a testcase has no name")
        out[name] = case.find("failure") is None and case.find("error") is None
    return out


def read_cycles(folder: Path, outcomes: dict[str, bool]) -> int | None:
    """The sum of the tests' cycles; None when a test did not report (a failing test may stop
    before its report). Raises ReportError unless the folder holds only valid `<name>.json`
    reports, at most one per test and at least one per passing test."""
    if os.path.lexists(folder) and (folder.is_symlink() or not folder.is_dir()):
        raise ReportError(f"{folder}: not a folder")
    names = sorted(os.listdir(folder)) if folder.is_dir() else []
    unexpected = [n for n in names if not n.endswith(".json") or n.startswith(".")]
    if unexpected:
        raise ReportError(f"{folder}: unexpected entries {', '.join(unexpected[:5])} (the oracle writes only "
                          "<test>.json files)")
    reports = [_read_one(folder / name, name[:-len(".json")]) for name in names]
    passed = sum(outcomes.values())
    if len(names) > len(outcomes):
        raise ReportError(f"{folder}: {len(names)} reports for {len(outcomes)} tests")
    if len(names) < passed:
        raise ReportError(f"{folder}: {len(names)} reports, but {passed} tests passed (each passing test "
                          "writes one)")
    total = sum(report.cycles for report in reports)
    return total if len(names) == len(outcomes) else None


def _read_one(path: Path, test: str) -> CycleReport:
    st = os.stat(path, follow_symlinks=False)
    if not stat.S_ISREG(st.st_mode):
        raise ReportError(f"{path}: not a regular file")
    if st.st_size > MAX_REPORT_BYTES:
        raise ReportError(f"{path}: {st.st_size} bytes, over {MAX_REPORT_BYTES}")
    try:
        report = CycleReport.model_validate(json.loads(path.read_text()))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        where = f"key {'.'.join(str(p) for p in first['loc'])}: {first['msg']}" if first else str(exc).splitlines()[0]
        raise ReportError(f"{path}: {where}") from exc
    if report.test != test:
        raise ReportError(f"{path}: key test: {report.test!r}, expected {test!r}")
    return report
