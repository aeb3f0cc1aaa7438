"""Agents a task run can start: the machinery baselines (`null`, `oracle`, `sweep`), labeled as
such in every record, and any command line with `{workspace}` and `{instructions}` placeholders.

Every agent is started as a process in the run's workspace copy with `closer-tool` on PATH; the
baselines are `python -m closer.agents.baselines <name>` so they go through exactly the same
metered tools, wall clock and trajectory as an LLM agent.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from closer.errors import InputError
from closer.sandbox.spec import Endpoint

MACHINERY = ("null", "oracle", "sweep")
SOLUTION_KINDS = {"oracle": ("A", "B", "C"), "sweep": ("C",)}
PLACEHOLDER = re.compile(r"\{(workspace|instructions|solution|[a-z]+)\}")  # other braces are the agent's


@dataclass(frozen=True)
class AgentSpec:
    label: str
    argv_template: list[str]
    machinery_baseline: bool
    backend: str | None = None
    model: str | None = None
    quantization: str | None = None
    # task kinds on which the agent is given the reference solution: the oracle everywhere; the
    # sweep on C only, where the workspace RTL is a skeleton and the sweep closes the reference RTL
    solution_kinds: tuple[str, ...] = ()
    extra: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # set inside the agent's sandbox
    network: tuple[str, ...] = ()  # host:port endpoints the sandbox may reach (none by default)

    def endpoints(self) -> list[Endpoint]:
        return [Endpoint.parse(e) for e in self.network]

    def reads_solution(self, kind: str) -> bool:
        return kind in self.solution_kinds

    def argv(self, workspace: Path, instructions: Path, solution: Path | None) -> list[str]:
        """The command with the placeholders filled (paths as the sandbox shows them); without a
        solution the `--solution {solution}` pair is left out."""
        template = self.argv_template
        if solution is None and "{solution}" in template:
            at = template.index("{solution}")
            flag = at > 0 and template[at - 1].startswith("-")  # `--solution {solution}`: the pair goes
            template = template[:at - 1 if flag else at] + template[at + 1:]
        values = {"{workspace}": str(workspace), "{instructions}": str(instructions),
                  "{solution}": str(solution) if solution else ""}
        return [PLACEHOLDER.sub(lambda m: values.get(m.group(0), m.group(0)), arg) for arg in template]


def resolve_agent(name: str, label: str | None = None, backend: str | None = None, model: str | None = None,
                  quantization: str | None = None, network: list[str] | None = None) -> AgentSpec:
    spec = _resolve(name, label, backend, model, quantization)
    for endpoint in network or []:
        try:
            Endpoint.parse(endpoint)
        except ValueError as exc:
            raise InputError(f"--network: {exc}") from exc
    return replace(spec, network=tuple(network or ()))


def _resolve(name: str, label: str | None, backend: str | None, model: str | None,
             quantization: str | None) -> AgentSpec:
    if name in MACHINERY:
        argv = [sys.executable, "-m", "closer.agents.baselines", name, "--workspace", "{workspace}"]
        kinds = SOLUTION_KINDS.get(name, ())
        if kinds:
            argv += ["--solution", "{solution}"]
        return AgentSpec(label=name, argv_template=argv, machinery_baseline=True, backend="machinery",
                         model=None, quantization=None, solution_kinds=kinds)
    argv = shlex.split(name)
    if not argv:
        raise InputError("--agent is empty")
    if not any("{workspace}" in a or "{instructions}" in a for a in argv):
        raise InputError(f"--agent {name!r}: not a baseline ({', '.join(MACHINERY)}) and the command has no "
                         "{workspace} or {instructions} placeholder")
    for arg in argv:
        unknown = [m.group(0) for m in PLACEHOLDER.finditer(arg) if m.group(0) not in ("{workspace}", "{instructions}")]
        if unknown:
            raise InputError(f"--agent {name!r}: unknown placeholder {unknown[0]}; known: {{workspace}}, {{instructions}}")
    return AgentSpec(label=label or Path(argv[0]).name, argv_template=argv, machinery_baseline=False,
                     backend=backend, model=model, quantization=quantization)
