"""The layout of a metered task workspace. No other module builds these paths by hand."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from closer.errors import InputError
from closer.toolclass import ToolClass

CONTROL_DIR = ".closer"
RESULTS_DIR = "results"


@dataclass(frozen=True)
class WorkspacePaths:
    """A task workspace and its run (control) directory. Standalone, the control dir is the
    workspace's `.closer/`; under `closer task run` it is a directory outside the workspace (the
    agent's sandbox never sees it) and only the broker writes it (`control_dir`)::

        <root>/
          <edit surface>             what the agent edits (rtl/, constraints/, floorplan/, flow/, ...)
          results/<seq>_<tool>/      public feedback of each call: cmd<N>.log, metrics.json, reports
          .closer/                   control dir (not part of the edit surface)
            tools.toml               tool configuration: commands as data, surface, layers, budget
            run.json                 RunInfo: run id, start time, budget numbers, provenance
            trajectory.jsonl         one TrajectoryRecord per call (append-only)
            lock                     flock'd while a call runs (calls are serialized)
            inflight.json            the running call's partial record (left behind if it was killed)
            status-cache.json        what `status` last read from run.json + the trajectory, keyed by
                                     their SHA-256 (closer.metered.status_view; never the ledger)
            objects/<aa>/<sha256>    content-addressed blobs of edit-surface files
            snapshots/<sha256>.json  manifests: relative path -> blob digest
            versions/                logs of the tool --version probes
            pristine/                the workspace as the run started (the base every call's
                                     tree is built on: locked files always come from here)
            calls/<seq>_<tool>/      a call's tree (<root name>/: pristine + the call's snapshot), its
                                     results before they are delivered to <root>/results/
    """

    root: Path
    control_dir: Path | None = None

    @property
    def control(self) -> Path:
        return self.control_dir if self.control_dir is not None else self.root / CONTROL_DIR

    @property
    def brokered(self) -> bool:
        """The control dir lives outside the workspace (a broker serves the agent's calls)."""
        return self.control_dir is not None

    @property
    def tools_config(self) -> Path:
        return self.control / "tools.toml"

    @property
    def run_info(self) -> Path:
        return self.control / "run.json"

    @property
    def trajectory(self) -> Path:
        return self.control / "trajectory.jsonl"

    @property
    def lock(self) -> Path:
        return self.control / "lock"

    @property
    def inflight(self) -> Path:
        return self.control / "inflight.json"

    @property
    def status_cache(self) -> Path:
        return self.control / "status-cache.json"

    @property
    def objects(self) -> Path:
        return self.control / "objects"

    @property
    def snapshots(self) -> Path:
        return self.control / "snapshots"

    @property
    def versions(self) -> Path:
        return self.control / "versions"

    @property
    def pristine(self) -> Path:
        return self.control / "pristine"

    @property
    def results(self) -> Path:
        return self.root / RESULTS_DIR

    def call_dir(self, seq: int, tool: ToolClass) -> Path:
        return self.control / "calls" / f"{seq:04d}_{tool.value}"

    def call_tree(self, seq: int, tool: ToolClass) -> Path:
        """Named like the workspace: a design folder used as a workspace keeps its name."""
        return self.call_dir(seq, tool) / self.root.name

    def call_staging(self, seq: int, tool: ToolClass) -> Path:
        """Where a brokered call's tool writes its results before delivery into the workspace."""
        return self.call_dir(seq, tool) / "results"

    def object(self, digest: str) -> Path:
        return self.objects / digest[:2] / digest

    def snapshot(self, digest: str) -> Path:
        return self.snapshots / f"{digest}.json"

    def call_results(self, seq: int, tool: ToolClass) -> Path:
        return self.results / f"{seq:04d}_{tool.value}"

    def is_valid(self) -> bool:
        return self.tools_config.is_file()

    def check_layout(self) -> None:
        """InputError naming the first control path of the wrong kind (a directory where a file
        belongs, a file where a directory belongs, a symlink or special file): a damaged control
        dir is refused before any call reads or writes it."""
        if self.control.exists() and (self.control.is_symlink() or not self.control.is_dir()):
            raise InputError(f"{self.control}: damaged run directory: expected a directory")
        for path in (self.tools_config, self.run_info, self.trajectory, self.lock, self.inflight):
            if path.is_symlink() or (path.exists() and not path.is_file()):
                raise InputError(f"{path}: damaged run directory: expected a regular file")
        dirs = [self.objects, self.snapshots, self.versions, self.pristine, self.control / "calls"]
        if not self.brokered:
            dirs.append(self.results)
        for path in dirs:
            if path.is_symlink() or (path.exists() and not path.is_dir()):
                raise InputError(f"{path}: damaged run directory: expected a directory")

    @classmethod
    def locate(cls, path: Path) -> WorkspacePaths:
        """The workspace from its root, its control dir, its trajectory file, or any folder inside it."""
        path = path.resolve()
        if path.is_file() and path.parent.name == CONTROL_DIR:
            return cls(path.parent.parent)
        if path.name == CONTROL_DIR:
            return cls(path.parent)
        for candidate in (path, *path.parents):
            if (candidate / CONTROL_DIR / "tools.toml").is_file():
                return cls(candidate)
        raise InputError(f"{path} is not inside a metered workspace (no {CONTROL_DIR}/tools.toml found)")
