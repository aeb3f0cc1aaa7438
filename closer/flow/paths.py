"""The layout of one flow run; no other module builds these paths."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from closer.paths import repo_paths


ATTEMPTS_ASIDE = Path("sc") / "attempts"  # relative to a run directory
JOB_NAME = "job"                          # SiliconCompiler's job name: the node folders' parent


@dataclass(frozen=True)
class FlowPaths:
    """One run directory (default `runs/<design>/<config>/` in the checkout)::

        <root>/
          sc/<design>/job/<step>/0/   the node folders (inputs/, outputs/, reports/, <step>.log;
                                      SiliconCompiler's layout, for both engines of
                                      closer.flow.runner); node.json is the direct engine's record
                                      of a finished node (closer.flow.direct.node); a node is reused
                                      when its inputs are unchanged
          sc/attempts/<script>/<step>/ the synthesis-and-after node directories of the ABC
                                      attempts not in sc/<design>/job now; sc/attempts/resident
                                      names the one that is (closer.flow.runner._bring_attempt)
          constraints.sdc             the canonical SDC (closer.sdc) every node reads
          metrics/1_synth.json        ORFS-named synthesis metrics (Yosys stat)
          metrics/1_synth_sta.json    ORFS-named timing and power metrics (OpenSTA)
          metadata.json               all stage files merged, plus run__/constraints__ keys
          metadata.previous.json      the last good metadata.json, kept when a later run fails
          flow.json                   the run record: steps, wall time, peak memory, reuse
          sc.log                      SiliconCompiler's own log of the last run (engine `sc`)
          synth/abc_<script>.log      the synthesis log of each ABC script this run tried
                                      (closer.flow.synth_choice); the kept one's node is sc/.../synth
          .lock                       held (flock) while a run uses this directory
          .platform                   hash of the platform files the nodes were built with
    """

    root: Path
    design: str

    @property
    def sc_build(self) -> Path:
        return self.root / "sc"

    def node_dir(self, step: str, job: str = JOB_NAME) -> Path:
        return self.sc_build / self.design / job / step / "0"

    def node_log(self, step: str) -> Path:
        return self.node_dir(step) / f"{step}.log"

    @property
    def attempts_aside(self) -> Path:
        return self.root / ATTEMPTS_ASIDE

    @property
    def synth_attempts(self) -> Path:
        return self.root / "synth"

    def synth_attempt_log(self, script_name: str) -> Path:
        return self.synth_attempts / f"abc_{script_name}.log"

    @property
    def canonical_sdc(self) -> Path:
        return self.root / "constraints.sdc"

    @property
    def metrics_dir(self) -> Path:
        return self.root / "metrics"

    @property
    def synth_json(self) -> Path:
        return self.metrics_dir / "1_synth.json"

    @property
    def sta_json(self) -> Path:
        return self.metrics_dir / "1_synth_sta.json"

    @property
    def metadata(self) -> Path:
        return self.root / "metadata.json"

    @property
    def previous_metadata(self) -> Path:
        return self.root / "metadata.previous.json"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    @property
    def record(self) -> Path:
        return self.root / "flow.json"

    @property
    def platform_stamp(self) -> Path:
        return self.root / ".platform"


def default_run_dir(design: str, config: str) -> Path:
    return repo_paths().root / "runs" / design / config
