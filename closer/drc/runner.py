"""Running DRC scripts on layouts with the real KLayout (`klayout -b`), in the tool sandbox.

A DRC script is Ruby code, so every run is treated as hostile: it runs in `closer.sandbox.tools`
(read-only host, no network, own pid namespace) with the problem folders masked, address-space and
file-size limits, a wall-clock timeout per group, and sees only copies of the layouts under
neutral names (`layout_003.gds`), never a label, a gold script or a pass/fail folder name.

A group is one KLayout process running its jobs in fresh DRC engines (`data/batch.rb`). Agent
candidates run one group per script; only scripts the harness itself wrote (gold and its
perturbations) may share a process, which keeps verifying a whole suite affordable.
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from closer.drc.lyrdb import ReportError, category_counts
from closer.errors import ToolTimeout
from closer.procs import Command, run
from closer.sandbox.tools import ToolSandbox

BATCH_RB = Path(__file__).parent / "data" / "batch.rb"
MEMORY_BYTES = 4 * 2**30
FILE_BYTES = 256 * 2**20


class JobStatus(StrEnum):
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class Job:
    key: str  # the caller's name for this (script, layout) pair
    script: Path
    layout: Path


@dataclass(frozen=True)
class JobResult:
    status: JobStatus
    counts: dict[str, int] = field(default_factory=dict)  # report items per category
    message: str = ""

    @property
    def flagged(self) -> bool:
        return any(self.counts.values())


@dataclass(frozen=True)
class RunSettings:
    timeout_s: float = 120.0  # per group: one candidate script on all its layouts
    workers: int = 1
    masked: tuple[Path, ...] = ()  # folders a script must not read (problem sets, labels, gold)


def run_groups(groups: list[list[Job]], workdir: Path, settings: RunSettings,
               scripts_per_group: list[int] | None = None) -> dict[str, JobResult]:
    """Run each group in its own KLayout process; results by job key. A group holding several
    scripts (`scripts_per_group`) gets the per-script timeout once per script."""
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, JobResult] = {}
    folders = [workdir / f"group_{index:04d}" for index in range(len(groups))]
    limits = [settings.timeout_s * max(1, count) for count in (scripts_per_group or [1] * len(groups))]
    with ThreadPoolExecutor(max_workers=max(1, settings.workers)) as pool:
        for part in pool.map(lambda args: _run_group(*args), zip(groups, folders, limits, [settings] * len(groups))):
            results.update(part)
    return results


def _run_group(jobs: list[Job], folder: Path, timeout_s: float, settings: RunSettings) -> dict[str, JobResult]:
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "out").mkdir(parents=True)
    staged = _stage(jobs, folder)
    sandbox = ToolSandbox(writable=(folder,), masked=settings.masked, env={"HOME": str(folder / "out")})
    argv = ["prlimit", f"--as={MEMORY_BYTES}", f"--fsize={FILE_BYTES}", "--",
            "klayout", "-b", "-r", str(BATCH_RB), "-rd", f"jobs={folder / 'jobs.tsv'}"]
    timed_out = False
    try:
        run(Command(sandbox.wrap(argv, cwd=folder / "out"), timeout_s=timeout_s),
            folder / "klayout.log", check=False)
    except ToolTimeout:
        timed_out = True
    return {job.key: _read_result(output, status, timed_out) for job, (output, status) in zip(jobs, staged)}


def _stage(jobs: list[Job], folder: Path) -> list[tuple[Path, Path]]:
    """Copy scripts and layouts under neutral names; write jobs.tsv; return (output, status)."""
    names: dict[Path, Path] = {}

    def staged(source: Path, stem: str, suffix: str) -> Path:
        if source not in names:
            names[source] = folder / f"{stem}_{len(names):03d}{suffix}"
            shutil.copyfile(source, names[source])
        return names[source]

    lines, paths = [], []
    for index, job in enumerate(jobs):
        script = staged(job.script, "script", ".drc")
        layout = staged(job.layout, "layout", ".gds")
        output, status = folder / "out" / f"job_{index:04d}.lyrdb", folder / "out" / f"job_{index:04d}.status"
        lines.append("\t".join(str(p) for p in (script, layout, output, status)))
        paths.append((output, status))
    (folder / "jobs.tsv").write_text("\n".join(lines) + "\n")
    return paths


def _read_result(output: Path, status: Path, timed_out: bool) -> JobResult:
    if not status.is_file():
        return JobResult(JobStatus.TIMEOUT if timed_out else JobStatus.ERROR,
                         message="ran past its time limit" if timed_out else "KLayout stopped before this job")
    text = status.read_text(errors="replace")[:1000]
    if text != "ok":
        return JobResult(JobStatus.ERROR, message=text.removeprefix("error\t"))
    try:
        return JobResult(JobStatus.OK, counts=category_counts(output))
    except ReportError as exc:
        return JobResult(JobStatus.ERROR, message=str(exc))
