"""A sandbox whose mount source is missing is refused before bubblewrap runs: bubblewrap's own
exit 1 ("Can't find source path") would otherwise read as the sandboxed program's failure (an
agent "crashed" because the checkout Closer ran from had no .venv)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from closer.errors import SandboxSetupError
from closer.sandbox.bwrap import sandbox_argv
from closer.sandbox.spec import Bind, SandboxSpec
from closer.sandbox.tools import ToolSandbox


def spec_with(source: Path) -> SandboxSpec:
    interpreter = Path(sys.base_prefix).resolve()
    return SandboxSpec(uid=61999, gid=61999, chdir=Path("/"),
                       binds=[Bind(source=interpreter, target=interpreter), Bind(source=source, target=Path("/data"))])


def test_agent_sandbox_runs_with_its_sources_and_is_refused_without_one(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "x.txt").write_text("here\n")
    done = subprocess.run(sandbox_argv(spec_with(data), ["/usr/bin/cat", "/data/x.txt"]),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "here\n", done.stderr

    missing = tmp_path / "no-venv"
    with pytest.raises(SandboxSetupError, match=str(missing)):
        sandbox_argv(spec_with(missing), ["/usr/bin/true"])
    # what the check stands in for: bubblewrap itself fails exactly like a crashing program
    argv = sandbox_argv(spec_with(data), ["/usr/bin/true"])
    argv[argv.index(str(data))] = str(missing)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "source path" in done.stderr


def test_tool_sandbox_refuses_a_missing_input(tmp_path: Path) -> None:
    present = tmp_path / "suite"
    present.mkdir()
    box = ToolSandbox(writable=(tmp_path / "out",), readable=(present,))
    done = subprocess.run(box.wrap(["/usr/bin/ls", str(present)]), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    gone = tmp_path / "gone"
    with pytest.raises(SandboxSetupError, match=str(gone)):
        ToolSandbox(writable=(tmp_path / "out",), readable=(present, gone)).wrap(["/usr/bin/true"])
