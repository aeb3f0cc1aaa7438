"""Agents a task run can start: the machinery baselines (`null`, `oracle`, `sweep`), labeled as
such in every record, and any command line with `{workspace}` and `{instructions}` placeholders.

Every agent is started as a process in the run's workspace copy with `closer-tool` on PATH; the
baselines are `python -m closer.agents.baselines <name>` so they go through exactly the same
metered tools, wall clock and trajectory as an LLM agent.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from closer.errors import InputError

MACHINERY = ("null", "oracle", "sweep")


@dataclass(frozen=True)
class AgentSpec:
    label: str
    argv_template: list[str]
    machinery_baseline: bool
    backend: str | None = None
    model: str | None = None
    quantization: str | None = None
    needs_solution: bool = False  # only the oracle baseline reads the reference solution
    extra: dict[str, str] = field(default_factory=dict)

    def argv(self, workspace: Path, instructions: Path, solution: Path | None) -> list[str]:
        values = {"workspace": str(workspace), "instructions": str(instructions),
                  "solution": str(solution) if solution else ""}
        return [arg.format(**values) if "{" in arg else arg for arg in self.argv_template]


def resolve_agent(name: str, label: str | None = None, backend: str | None = None, model: str | None = None,
                  quantization: str | None = None) -> AgentSpec:
    if name in MACHINERY:
        argv = [sys.executable, "-m", "closer.agents.baselines", name, "--workspace", "{workspace}"]
        if name == "oracle":
            argv += ["--solution", "{solution}"]
        return AgentSpec(label=name, argv_template=argv, machinery_baseline=True, backend="machinery",
                         model=None, quantization=None, needs_solution=name == "oracle")
    argv = shlex.split(name)
    if not argv:
        raise InputError("--agent is empty")
    if not any("{workspace}" in a or "{instructions}" in a for a in argv):
        raise InputError(f"--agent {name!r}: not a baseline ({', '.join(MACHINERY)}) and the command has no "
                         "{workspace} or {instructions} placeholder")
    for arg in argv:
        stripped = arg.replace("{workspace}", "").replace("{instructions}", "")
        if "{" in stripped and "}" in stripped:
            raise InputError(f"--agent {name!r}: unknown placeholder in {arg!r}; known: {{workspace}}, {{instructions}}")
    return AgentSpec(label=label or Path(argv[0]).name, argv_template=argv, machinery_baseline=False,
                     backend=backend, model=model, quantization=quantization)
