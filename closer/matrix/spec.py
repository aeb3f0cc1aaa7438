"""The matrix spec (`closer matrix run SPEC.toml`): what to run and where. Errors name the file and
the field (exit 2). Relative paths are relative to the spec file's folder.

    designs = ["gcd"]              # names on the design search path, or folders
    kinds = ["A", "B", "C"]
    budgets = ["low"]
    trials = 2
    wall_s = 1800                  # optional: each trial's wall clock, if shorter than the tier's
    compose = true                 # A+B composed trials (needs A, B and C)
    unchecked = false              # generate tasks of a design without a passing design check

    [[agents]]                     # one table per agent
    agent = "sweep"                # null | oracle | sweep | a command line with {workspace}
    label = "sweep"                # optional; backend, model, quantization, network as `closer task run`

    [cluster]                      # where trials run (default: a LocalCluster)
    kind = "local"                 # local | address | slurm | pbs | lsf
    workers = 2                    # local: worker processes; HPC: jobs to scale to
    address = "tcp://host:8786"    # kind = "address": an existing Dask scheduler
    options = {}                   # HPC: keyword arguments of dask-jobqueue's cluster class
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from closer.agents import AgentSpec, resolve_agent
from closer.errors import InputError
from closer.tasks.models import BUDGET_TIERS, TaskKind
from closer.tomlio import load_toml_model


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ClusterKind(StrEnum):
    LOCAL = "local"
    ADDRESS = "address"
    SLURM = "slurm"
    PBS = "pbs"
    LSF = "lsf"


class ClusterSpec(_Strict):
    kind: ClusterKind = ClusterKind.LOCAL
    workers: int = Field(2, ge=1, le=4096, description="local: worker processes; HPC: jobs to scale to")
    address: str | None = Field(None, description="kind = address: the scheduler, e.g. tcp://host:8786")
    options: dict[str, object] = Field(default_factory=dict, description="HPC: dask-jobqueue cluster arguments")

    @model_validator(mode="after")
    def _address_only_for_address(self) -> ClusterSpec:
        if (self.kind is ClusterKind.ADDRESS) != (self.address is not None):
            raise ValueError("address is required for kind = 'address' and allowed only there")
        if self.options and self.kind in (ClusterKind.LOCAL, ClusterKind.ADDRESS):
            raise ValueError("options are for the HPC kinds (slurm, pbs, lsf)")
        return self


class AgentEntry(_Strict):
    agent: str = Field(min_length=1, description="null | oracle | sweep | a command line with {workspace}")
    label: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    backend: str | None = None
    model: str | None = None
    quantization: str | None = None
    network: list[str] = Field(default_factory=list, description="host:port endpoints the sandbox may reach")

    def resolve(self) -> AgentSpec:
        return resolve_agent(self.agent, label=self.label, backend=self.backend, model=self.model,
                             quantization=self.quantization, network=self.network)

    def run_options(self) -> list[str]:
        """The `closer task run` options that select this agent."""
        spec = self.resolve()
        argv = ["--agent", self.agent, "--label", spec.label]
        for option, value in (("--backend", self.backend), ("--model", self.model),
                              ("--quantization", self.quantization)):
            if value is not None:
                argv += [option, value]
        for endpoint in self.network:
            argv += ["--network", endpoint]
        return argv


class MatrixSpec(_Strict):
    designs: list[str] = Field(min_length=1)
    kinds: list[TaskKind] = Field(min_length=1)
    budgets: list[Literal[BUDGET_TIERS]] = Field(min_length=1)  # type: ignore[valid-type]
    trials: int = Field(ge=1, le=1000)
    agents: list[AgentEntry] = Field(min_length=1)
    wall_s: float | None = Field(None, gt=0, description="each trial's wall clock, if shorter than the tier's")
    compose: bool = Field(True, description="run the A+B composition (needs kinds A, B and C)")
    unchecked: bool = Field(False, description="generate tasks of designs without a passing design check")
    cluster: ClusterSpec = ClusterSpec()

    @field_validator("designs", "kinds", "budgets")
    @classmethod
    def _no_repeats(cls, values: list) -> list:
        if len(set(values)) != len(values):
            raise ValueError("an entry is repeated")
        return values

    @model_validator(mode="after")
    def _composable_and_labeled(self) -> MatrixSpec:
        if self.compose and not {TaskKind.A, TaskKind.B, TaskKind.C} <= set(self.kinds):
            raise ValueError("compose = true needs kinds A, B and C (or set compose = false)")
        labels = []
        for n, entry in enumerate(self.agents):
            try:
                labels.append(entry.resolve().label)
            except InputError as exc:
                raise ValueError(f"agents[{n}]: {exc}") from None
        if len(set(labels)) != len(labels):
            raise ValueError(f"agents: two agents share a label ({', '.join(labels)}); give each a label")
        return self


def load_spec(path: Path) -> MatrixSpec:
    return load_toml_model(path, MatrixSpec, "matrix spec {path} does not exist")
