"""The layout of an exported Harbor task, on the host and inside its container. No other module
builds these paths by hand.

On the host (`closer task export-harbor`)::

    <root>/                          one task, named like the closer task
      task.toml                      validated against closer/schemas/harbor-task.schema.json
      instruction.md
      environment/Dockerfile         runs closer's scripts/bootstrap.sh (the one list of what is installed)
      environment/closer-src/        closer's checkout (package, designs, oracles, scripts, lock file)
      environment/pdk/               the PDK subset from PDK_ROOT
      environment/workspace/         the task's starting workspace (its .closer/tools.toml included)
      tests/test.sh                  the verifier: always writes reward.json
      tests/installation.sha256      sha256sum lines of closer-src/ (relative to CLOSER_HOME)
      tests/pdk.sha256               sha256sum lines of pdk/ (relative to PDK_ROOT)
      tests/suite/suite.json, tests/suite/tasks/<id>/, tests/suite/hidden/<id>/
      solution/solve.sh, solution/files/

In the container (Harbor's paths; the scripts read each from a variable so a test can map them
onto temporary folders): the workspace is `CLOSER_WORKSPACE` (/workspace), the tests are
`CLOSER_TESTS_DIR` (/tests, uploaded only after the agent finished), the verifier writes into
`CLOSER_VERIFIER_DIR` (/logs/verifier), closer is installed at `CLOSER_HOME` (/opt/closer) and the
PDK at `PDK_ROOT` (/opt/pdk).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CONTAINER_WORKSPACE = "/workspace"
CONTAINER_TESTS = "/tests"
CONTAINER_VERIFIER = "/logs/verifier"
CONTAINER_CLOSER_HOME = "/opt/closer"
CONTAINER_PDK = "/opt/pdk"


@dataclass(frozen=True)
class HarborPaths:
    root: Path

    @property
    def task_toml(self) -> Path:
        return self.root / "task.toml"

    @property
    def instruction(self) -> Path:
        return self.root / "instruction.md"

    @property
    def environment(self) -> Path:
        return self.root / "environment"

    @property
    def dockerfile(self) -> Path:
        return self.environment / "Dockerfile"

    @property
    def closer_src(self) -> Path:
        return self.environment / "closer-src"

    @property
    def pdk(self) -> Path:
        return self.environment / "pdk"

    @property
    def workspace(self) -> Path:
        return self.environment / "workspace"

    @property
    def tests(self) -> Path:
        return self.root / "tests"

    @property
    def test_sh(self) -> Path:
        return self.tests / "test.sh"

    @property
    def installation_sums(self) -> Path:
        return self.tests / "installation.sha256"

    @property
    def pdk_sums(self) -> Path:
        return self.tests / "pdk.sha256"

    @property
    def suite(self) -> Path:
        return self.tests / "suite"

    @property
    def solution(self) -> Path:
        return self.root / "solution"

    @property
    def solve_sh(self) -> Path:
        return self.solution / "solve.sh"

    @property
    def solution_files(self) -> Path:
        return self.solution / "files"
