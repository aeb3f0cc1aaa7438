"""Typed records of the mutant store (`manifest.json`) and of a scoring run (`score.json`).

The JSON Schemas in `closer/schemas/mutants-{manifest,score}.schema.json` are exported from these
models (`closer mutants schema`), never written by hand.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

SCHEMA_VERSION = 1


class MutantSetName(StrEnum):
    PUBLIC = "public"
    HIDDEN = "hidden"


class Family(StrEnum):
    YOSYS = "yosys"    # netlist-level, Yosys `mutate` on the `prep`ed design
    SOURCE = "source"  # text-level edit of one RTL expression


class Operator(StrEnum):
    # Yosys `mutate` modes
    INV = "inv"
    CONST0 = "const0"
    CONST1 = "const1"
    CNOT0 = "cnot0"
    CNOT1 = "cnot1"
    # source-level operators for bug classes Yosys does not model
    OFF_BY_ONE = "off_by_one"        # integer constant +1 / -1
    SWAP_OPERANDS = "swap_operands"  # a - b -> b - a, c ? x : y -> c ? y : x
    WRONG_COMPARISON = "wrong_comparison"  # < <-> <=, > <-> >=, == <-> !=
    WRONG_OPERATOR = "wrong_operator"      # + <-> -, && <-> ||, & <-> |
    DROP_CONDITION = "drop_condition"      # if (c) -> if (1'b1); a && b -> a


YOSYS_MODES = (Operator.INV, Operator.CONST0, Operator.CONST1, Operator.CNOT0, Operator.CNOT1)


class Location(BaseModel):
    file: str = Field(description="Source file, relative to the design folder")
    line: int = Field(description="1-based line of the mutated construct")
    column: int = Field(description="1-based column")
    end_line: int | None = None
    end_column: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}.{self.column}"


class Provenance(BaseModel):
    closer_version: str
    tools: dict[str, str] = Field(description="tool name -> version string")
    design_revision: str = Field(description="sha256 over the design's source files and config")
    created_utc: str


class Mutant(BaseModel):
    id: str = Field(description="Stable id: a hash of the family, operator, location and edit")
    family: Family
    operator: Operator
    location: Location
    description: str = Field(description="What was changed, for a person")
    sources: list[str] = Field(description="The buildable file set, relative to the mutant's folder, in compile order")
    yosys_command: str | None = Field(None, description="The `mutate -mode ...` line (yosys family)")


class ExcludedMutant(BaseModel):
    id: str
    family: Family
    operator: Operator
    location: Location
    description: str
    reason: str = Field(description="'netlist_identical' (optimised netlist equals the golden one: "
                                    "equivalent), 'survives_reference_oracle' (likely equivalent) or "
                                    "'does_not_build'")


class MutantManifest(BaseModel):
    schema_version: int = SCHEMA_VERSION
    design: str
    config: str
    top: str
    parameters: dict[str, int | str | float] = Field(default_factory=dict)
    set: MutantSetName
    seed: int
    n: int = Field(description="Number of mutants in the set: the fixed denominator of a score")
    oracle: str = Field(description="Reference testbench that every kept mutant was checked against")
    oracle_testcase: str | None = None
    oracle_env: dict[str, str] = Field(default_factory=dict)
    simulator: str
    mutants: list[Mutant]
    excluded: list[ExcludedMutant] = Field(default_factory=list, description="Candidates tried and left out, with why")
    candidates_tried: int
    notes: list[str] = Field(default_factory=list)
    provenance: Provenance


class Outcome(StrEnum):
    KILLED = "killed"            # the testbench failed
    TIMEOUT = "timeout"          # ran past the per-mutant limit: counts as killed
    SURVIVED = "survived"
    BUILD_ERROR = "build_error"  # the mutant did not compile: stays in N, not killed
    NOT_RUN = "not_run"          # the golden gate closed, so no mutant ran


class MutantResult(BaseModel):
    id: str
    operator: Operator
    location: str
    outcome: Outcome
    killed: bool
    tests: int
    failed: int
    wall_s: float
    log: str


class GoldenResult(BaseModel):
    passed: bool
    tests: int
    failed: int
    build_ok: bool
    wall_s: float
    log: str


class ScoreReport(BaseModel):
    schema_version: int = SCHEMA_VERSION
    design: str
    config: str
    set: MutantSetName
    testbench: str
    testbench_sha256: str
    simulator: str
    timeout_s: float = Field(description="Per-mutant wall-clock limit")
    golden: GoldenResult
    golden_alarm: bool = Field(description="The testbench failed on the golden design: score is 0")
    n: int
    killed: int
    survived: int
    build_errors: int
    timeouts: int
    resumed: int = Field(0, description="Results reused from an earlier, interrupted run")
    score: float = Field(description="killed / n, or 0 on a golden alarm")
    mutants: list[MutantResult]
    provenance: Provenance
