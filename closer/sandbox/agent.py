"""The sandbox an agent runs in during `closer task run`.

Inside, the agent sees::

    /workspace                 its workspace (the only writable host path; owned by its uid)
    /task/instruction.md       the task's instruction (read-only)
    /task/solution             the reference solution, for the oracle baseline only (read-only)
    /run/closer/broker.sock    the metering broker: `closer-tool` talks to it
    <venv>, <closer package>   the interpreter (and its base installation) and Closer's client,
                               read-only, at their host paths
    <PDK_ROOT>                 the PDK, read-only

and not: the suite's hidden part, the run directory (ledger, trajectory, budget), other trials,
the repository's designs and oracles, the host's processes, the network (unless the agent's
configuration names endpoints: then only those, through the runner's proxy), and the EDA programs
(`closer.sandbox.hide`): the metered tools are the only way to run them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from closer.paths import repo_paths
from closer.pdk import default_pdk_root
from closer.sandbox.hide import eda_paths
from closer.sandbox.netproxy import proxy_env
from closer.sandbox.spec import Bind, Endpoint, Limits, SandboxSpec

WORKSPACE = Path("/workspace")
TASK = Path("/task")
INSTRUCTION = TASK / "instruction.md"
SOLUTION = TASK / "solution"
BROKER_SOCKET = Path("/run/closer/broker.sock")
PROXY_SOCKET = Path("/run/closer/proxy.sock")


def agent_sandbox(workspace: Path, broker_socket: Path, instruction: Path, uid: int,
                  solution: Path | None = None, env: dict[str, str] | None = None,
                  network: list[Endpoint] | None = None, proxy_socket: Path | None = None,
                  limits: Limits | None = None) -> SandboxSpec:
    repo = repo_paths()
    venv = repo.venv.resolve()
    package = Path(__file__).resolve().parents[1]
    interpreter = Path(sys.base_prefix).resolve()  # the venv's python links into it
    pdk_root = default_pdk_root().resolve()
    binds = [Bind(source=workspace, target=WORKSPACE, writable=True),
             Bind(source=instruction, target=INSTRUCTION),
             Bind(source=broker_socket, target=BROKER_SOCKET),
             Bind(source=venv, target=venv),
             Bind(source=interpreter, target=interpreter),
             Bind(source=package, target=package)]
    if repo.venv.absolute() != venv:  # a linked venv (a git worktree's): its own path works inside too
        binds.append(Bind(source=venv, target=repo.venv.absolute()))
    if pdk_root.is_dir():
        binds.append(Bind(source=pdk_root, target=pdk_root))
    if solution is not None:
        binds.append(Bind(source=solution, target=SOLUTION))
    if network and proxy_socket is not None:
        binds.append(Bind(source=proxy_socket, target=PROXY_SOCKET))
    hidden = eda_paths(venv)
    inside_env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
                  "PYTHONDONTWRITEBYTECODE": "1", "CLOSER_BROKER": str(BROKER_SOCKET),
                  "CLOSER_WORKSPACE": str(WORKSPACE), "PDK_ROOT": str(pdk_root),
                  # the bound package, not whatever checkout the venv's editable install names
                  "PYTHONPATH": str(package.parent)}
    if network:
        inside_env.update(proxy_env())
    return SandboxSpec(uid=uid, gid=uid, binds=binds, hidden_files=hidden.files, hidden_dirs=hidden.dirs,
                       chdir=WORKSPACE, env={**inside_env, **(env or {})}, limits=limits or Limits(),
                       network=network or [])


def agent_command(argv: list[str], network: list[Endpoint] | None) -> list[str]:
    """The agent's argv, behind the in-sandbox forwarder when it may reach endpoints."""
    if not network:
        return argv
    python = str(repo_paths().venv / "bin" / "python")
    return [python, "-m", "closer.sandbox.inside", "--proxy-socket", str(PROXY_SOCKET), "--", *argv]
