"""The sandbox the harness's own tools run in when they process an agent's files: the metered
tools the broker runs on a call's tree, and the evaluator.

Unlike the agent's sandbox, it sees the host's file system (the EDA tools, the venv, the PDK,
the repository) but read-only, and runs without capabilities, in its own pid, network and IPC
namespaces: the only writable paths are the ones it is given (a call's folder, an evaluation's
output), and `masked` paths (the suite's hidden part, for a metered tool) are replaced by an empty
folder. Whatever an agent's RTL or constraints make a tool do, it can write nothing else, reach
no network and leave no process behind.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from closer.sandbox.bwrap import require_programs, require_sources
from closer.sim import CCACHE_ENV

NAMESPACES = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
              "--new-session", "--cap-drop", "ALL"]


# set by a trusted caller for its own processes, never inherited by sandboxed tools: a compiler
# cache the next build links from (closer.sim)
TRUSTED_CALLER_ENV = (CCACHE_ENV,)


@dataclass(frozen=True)
class ToolSandbox:
    writable: tuple[Path, ...]
    masked: tuple[Path, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    readable: tuple[Path, ...] = ()  # bound again after the private /tmp (inputs that live in /tmp)

    def with_writable(self, *paths: Path) -> ToolSandbox:
        return replace(self, writable=(*self.writable, *paths))

    def wrap(self, argv: list[str], cwd: Path | None = None) -> list[str]:
        bwrap = require_programs()["bwrap"]
        require_sources(self.readable)
        out = [bwrap, *NAMESPACES, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for path in self.readable:
            out += ["--ro-bind", str(path), str(path)]
        for path in self.writable:
            path.mkdir(parents=True, exist_ok=True)
            out += ["--bind", str(path), str(path)]
        for path in self.masked:
            if path.exists():
                out += ["--tmpfs", str(path), "--remount-ro", str(path)]
        for key in TRUSTED_CALLER_ENV:
            out += ["--unsetenv", key]
        for key, value in sorted(self.env.items()):
            out += ["--setenv", key, value]
        if cwd is not None:
            out += ["--chdir", str(cwd)]
        return [*out, "--", *argv]


def for_call(call_dir: Path, masked: tuple[Path, ...] = ()) -> ToolSandbox:
    """A metered call's tools: its own folder (tree, staged results, a HOME) is all they write."""
    return ToolSandbox(writable=(call_dir,), masked=masked, env={"HOME": str(_home(call_dir))})


def for_evaluation(out: Path, inputs: tuple[Path, ...]) -> ToolSandbox:
    """The evaluator: reads the candidate workspace and the suite, writes its output folder."""
    return ToolSandbox(writable=(out,), readable=inputs, env={"HOME": str(_home(out))})


def _home(folder: Path) -> Path:
    home = folder / "home"
    home.mkdir(parents=True, exist_ok=True)
    return home
