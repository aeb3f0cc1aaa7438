"""A damaged run directory (standalone `closer-tool` on a workspace's `.closer/`) is refused with
exit 2 and one line naming the damaged path; the ledger fails closed (a trajectory overwritten
with random bytes never restarts the count at call 1); nothing is run or recorded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from closer.metered.cli import tool_group
from closer.metered.paths import WorkspacePaths
from tests.conftest import require_tool
from tests.fuzz_support import FUZZ, assert_refused, run_closer
from tests.metered_helpers import make_workspace, tool_config


def _tool(ws: WorkspacePaths, *args: str):
    return run_closer(["-w", str(ws.root), *args], command=tool_group, prog="closer-tool")


@pytest.fixture(scope="module")
def started(tmp_path_factory) -> WorkspacePaths:
    """A run with one recorded sim call (real iverilog/vvp)."""
    require_tool("iverilog")
    ws = make_workspace(tmp_path_factory.mktemp("ctl") / "ws", tool_config(None))
    assert _tool(ws, "sim").code == 0
    return ws


def _copy(started: WorkspacePaths, dest: Path) -> WorkspacePaths:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(started.root, dest, symlinks=True)
    return WorkspacePaths(dest)


def _as_dir(path: Path) -> None:
    if path.exists():
        path.unlink()
    path.mkdir()


def _as_file(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.write_text("x")


DAMAGES = {
    "trajectory.jsonl": _as_dir, "inflight.json": _as_dir, "lock": _as_dir, "run.json": _as_dir,
    "tools.toml": _as_dir, "objects": _as_file, "snapshots": _as_file, "pristine": _as_file,
    "../results": _as_file, "../results/0002_sim": _as_file,
    "run.json@binary": lambda p: p.write_bytes(b"\xff\xfe\x00garbage"),
    "tools.toml@binary": lambda p: p.write_bytes(b"\x80\x81 = 1"),
    "inflight.json@garbage": lambda p: p.write_text("[1, 2"),
    "run.json@wall_s": lambda p: p.write_text(
        json.dumps({**json.loads(p.read_text()), "budget": {
            **json.loads(p.read_text())["budget"], "wall_s": -5}})),
    "trajectory.jsonl@symlink": lambda p: (p.unlink(), p.symlink_to("/etc/passwd")),
}


STATUS_IGNORES = {"tools.toml@binary", "../results/0002_sim"}


# status reads neither tools.toml nor the results folders: those damages are sim's cases only
CASES = [(d, c) for d in sorted(DAMAGES) for c in ("sim", "status") if not (c == "status" and d in STATUS_IGNORES)]


@pytest.mark.parametrize(("damage", "command"), CASES)
def test_damaged_control_path_is_refused(started, tmp_path, damage: str, command: str):
    ws = _copy(started, tmp_path / "ws")
    name = damage.split("@")[0]
    target = (ws.control / name).resolve() if name.startswith("..") else ws.control / name
    DAMAGES[damage](target)
    before = _trajectory_bytes(ws)
    result = _tool(ws, command)
    assert_refused(result, target.name)
    assert _trajectory_bytes(ws) == before


def _trajectory_bytes(ws: WorkspacePaths) -> bytes | None:
    return ws.trajectory.read_bytes() if ws.trajectory.is_file() and not ws.trajectory.is_symlink() else None


@FUZZ
@given(noise=st.binary(min_size=1, max_size=300), keep=st.booleans())
def test_trajectory_overwritten_with_noise_fails_closed(started, tmp_path, noise: bytes, keep: bool):
    ws = _copy(started, tmp_path / "noise")
    noise = b"\x00" + noise  # random bytes: never an empty line or a record's start
    original = ws.trajectory.read_bytes()
    ws.trajectory.write_bytes((original if keep else b"") + noise + b"\n" + original)
    result = _tool(ws, "status")
    assert_refused(result, "trajectory.jsonl")
