"""`closer-tool status` from the status cache with the standard library alone.

The `closer-tool` launcher (closer.launchers.nosite) runs `main` under `python -SI`: without
site, whose editable-install finder alone imports pathlib and urllib (more than the 50 ms a
status may take here), and without closer's models. It imports os, sys, the C parts of datetime,
hashlib and json (closer.lightjson) and the broker's client (no more than these). Inside a
sandbox it is that client; on a standalone workspace it answers a plain status whose run.json
and trajectory hash to the cached key (closer.metered.status_view explains the cache), sends a
plain tool call to the workspace's daemon (closer.metered.daemon) or else runs it in this process
(closer.metered.quickcall, with site-packages' msgspec on the path: no second interpreter, no
site) and hands everything else, unchanged, to the full
`closer-tool` (`python -m closer.metered`, exec'd: same process, same argv and exit code).

The layout names below are WorkspacePaths' (tests/test_metered_quickstatus.py keeps them equal).
"""

from __future__ import annotations

import os
import sys

try:  # the C classes themselves: the datetime and hashlib modules' Python layers cost ~15 ms to import
    from _datetime import datetime, timezone
except ImportError:  # pragma: no cover - an interpreter without the accelerator
    from datetime import datetime, timezone
try:
    from _sha256 import sha256  # Python 3.11
except ImportError:  # pragma: no cover - 3.12 and later
    from hashlib import sha256

from closer import __version__
from closer import lightjson
from closer.metered.client import TOOLS, broker_path, format_status
from closer.metered.client import main as brokered_main

CACHE_FORMAT = "closer-status-1"  # change when the basis or its derivation changes
CONTROL_DIR = ".closer"
TOOLS_CONFIG = "tools.toml"
RUN_INFO = "run.json"
TRAJECTORY = "trajectory.jsonl"
INFLIGHT = "inflight.json"
STATUS_CACHE = "status-cache.json"
CONTROL_FILES = (TOOLS_CONFIG, RUN_INFO, TRAJECTORY, "lock", INFLIGHT)
CONTROL_DIRS = ("objects", "snapshots", "versions", "pristine", "calls")
RESULTS_DIR = "results"


def cache_key(run_info: str, trajectory: str) -> str:
    """SHA-256 over the format, Closer's version, the trajectory's path and both files' bytes."""
    digest = sha256(f"{CACHE_FORMAT}\0{__version__}\0{trajectory}\0".encode())
    for path in (run_info, trajectory):
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            digest.update(b"absent\0")
            continue
        digest.update(f"{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def checked_basis(data: dict) -> dict:
    """A stored basis, its shape checked (ValueError/KeyError/TypeError when it is not one)."""
    names = list(TOOLS)
    fields = ("run_id", "tier", "caps", "wall_s", "started_at", "used", "best_reward", "calls", "bad_lines")
    if not isinstance(data, dict) or sorted(data) != sorted(fields):
        raise ValueError("not a status basis")
    caps, used, best = data["caps"], data["used"], data["best_reward"]
    shapes = [
        isinstance(data["run_id"], str), isinstance(data["tier"], str), isinstance(data["started_at"], str),
        isinstance(caps, dict) and list(caps) == names and all(c is None or type(c) is int for c in caps.values()),
        isinstance(used, dict) and list(used) == names and all(type(n) is int for n in used.values()),
        type(data["wall_s"]) in (int, float), type(data["calls"]) is int,
        best is None or type(best) in (int, float),
        isinstance(data["bad_lines"], list) and all(isinstance(line, str) for line in data["bad_lines"]),
    ]
    if not all(shapes):
        raise ValueError("not a status basis")
    return {name: data[name] for name in fields} | {"wall_s": float(data["wall_s"])}


def remaining_of(caps: dict[str, int | None], used: dict[str, int], wall_s: float,
                 elapsed_s: float) -> dict[str, float | None]:
    left: dict[str, float | None] = {}
    for tool in TOOLS:
        cap = caps[tool]
        left[tool] = None if cap is None else max(cap - used[tool], 0)
    left["wall_s"] = max(wall_s - elapsed_s, 0.0)
    return left


def status_fields(basis: dict, now: datetime, call_running: bool = False,
                  interrupted_call: int | None = None) -> dict:
    """The fields of a status (closer.metered.status_view.Status, in its order) at `now`."""
    elapsed = (now - datetime.fromisoformat(basis["started_at"])).total_seconds()
    return {
        "run_id": basis["run_id"], "tier": basis["tier"], "caps": dict(basis["caps"]), "used": dict(basis["used"]),
        "remaining": remaining_of(basis["caps"], basis["used"], basis["wall_s"], elapsed), "elapsed_s": elapsed,
        "wall_s": basis["wall_s"], "best_reward": basis["best_reward"], "calls": basis["calls"],
        "bad_lines": list(basis["bad_lines"]), "call_running": call_running, "interrupted_call": interrupted_call,
    }


def workspace_argument(argv: list[str]) -> str | None:
    """The workspace folder of a plain status command line, None for anything else."""
    rest = [a for a in argv if a != "--json"]
    if argv.count("--json") > 1 or (argv.count("--json") == 1 and argv[-1] != "--json"):
        return None
    chosen = _workspace_option(rest)
    if chosen is None or chosen[1] != ["status"]:
        return None
    return chosen[0] if os.path.isdir(chosen[0]) else None


def tool_arguments(argv: list[str]) -> tuple[str, str, list[str]] | None:
    """(workspace folder, tool, the agent's arguments) of a plain tool command line
    (`[-w DIR] sim|synth|pnr|verify [ARGS...]`), None for anything else (the full command
    answers: its options, help, usage errors)."""
    chosen = _workspace_option(argv)
    if chosen is None or not chosen[1] or chosen[1][0] not in TOOLS:
        return None
    folder, (tool, *args) = chosen
    if "--help" in args or "--" in args:  # click's own, even after the tool's name
        return None
    return folder, tool, args


def _workspace_option(argv: list[str]) -> tuple[str, list[str]] | None:
    """(the workspace folder the group's option or $CLOSER_WORKSPACE names, else the current one;
    the rest of the command line) when the option is given in a plain form, None otherwise."""
    chosen = os.environ.get("CLOSER_WORKSPACE")
    rest = argv
    if chosen == "":
        return None
    if rest[:1] in (["-w"], ["--workspace"]) and len(rest) >= 2:
        chosen, rest = rest[1], rest[2:]
    elif rest[:1] and rest[0].startswith("--workspace="):
        chosen, rest = rest[0].removeprefix("--workspace="), rest[1:]
    if chosen == "" or (rest[:1] and rest[0].startswith("-")):
        return None
    return (chosen if chosen is not None else os.getcwd()), rest


def workspace_root(folder: str) -> str | None:
    """WorkspacePaths.locate for a folder: itself or the nearest parent holding .closer/tools.toml."""
    path = os.path.realpath(folder)
    if os.path.basename(path) == CONTROL_DIR:
        return os.path.dirname(path)
    while True:
        if os.path.isfile(os.path.join(path, CONTROL_DIR, TOOLS_CONFIG)):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def layout_is_sound(root: str) -> bool:
    """What WorkspacePaths.check_layout accepts (standalone): no control path of the wrong kind."""
    control = os.path.join(root, CONTROL_DIR)
    if os.path.lexists(control) and (os.path.islink(control) or not os.path.isdir(control)):
        return False
    for name in CONTROL_FILES:
        path = os.path.join(control, name)
        if os.path.islink(path) or (os.path.exists(path) and not os.path.isfile(path)):
            return False
    dirs = [os.path.join(control, name) for name in CONTROL_DIRS] + [os.path.join(root, RESULTS_DIR)]
    return not any(os.path.islink(p) or (os.path.exists(p) and not os.path.isdir(p)) for p in dirs)


def cached_status(argv: list[str]) -> dict | None:
    """The standalone status of `closer-tool [-w DIR] status [--json]` from the cache, or None when
    the strict path must answer (whatever it would say or refuse)."""
    folder = workspace_argument(argv)
    root = workspace_root(folder) if folder is not None else None
    if root is None or not layout_is_sound(root):
        return None
    control = os.path.join(root, CONTROL_DIR)
    run_info, trajectory, cache = (os.path.join(control, name) for name in (RUN_INFO, TRAJECTORY, STATUS_CACHE))
    inflight = os.path.join(control, INFLIGHT)
    if not os.path.isfile(run_info) or os.path.lexists(inflight):
        return None
    if os.path.islink(cache) or not os.path.isfile(cache):
        return None
    try:
        with open(cache, "rb") as handle:
            stored = lightjson.loads(handle.read())
        if stored["key"] != cache_key(run_info, trajectory):
            return None
        return status_fields(checked_basis(stored["basis"]), datetime.now(timezone.utc))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def cached_status_text(argv: list[str]) -> str | None:
    """What `closer-tool status [--json]` prints, from the cache; None: ask the strict path."""
    st = cached_status(argv)
    if st is None:
        return None
    return lightjson.dumps(st, indent=2) if "--json" in argv else format_status(st)


def standalone_tool_call(argv: list[str]) -> int | None:
    """The exit code of a plain tool call on a standalone workspace whose run has started: served
    by the workspace's daemon (closer.metered.daemon) when one takes it, else run in this process
    (closer.metered.quickcall, with site-packages' msgspec on the path), which then starts the
    daemon for the calls after it. None: the full command must answer."""
    from closer.metered import daemon

    parsed = tool_arguments(argv)
    if parsed is None:
        return None
    folder, tool, args = parsed
    root = workspace_root(folder) if os.path.isdir(folder) else None
    control = os.path.join(root, CONTROL_DIR) if root is not None else None
    sock = None
    if control is not None and layout_is_sound(root) and os.path.isfile(os.path.join(control, RUN_INFO)):
        sock = daemon.socket_path(control)
    if sock is not None and (code := daemon.call(sock, tool, args)) is not None:
        return code
    from closer.quickcli import site_packages

    sys.path.extend(site for site in site_packages() if site not in sys.path)
    from closer.metered.quickcall import tool_call

    code = tool_call(argv)
    if code is not None and sock is not None:
        sys.stdout.flush()
        daemon.spawn(root, sock)
    return code


def main() -> None:
    """The `closer-tool` command started without site (the launcher's `python -SI`)."""
    argv = sys.argv[1:]
    if broker_path():
        sys.exit(brokered_main(argv))
    if (text := cached_status_text(argv)) is not None:
        print(text)
        sys.exit(0)
    if (code := standalone_tool_call(argv)) is not None:
        sys.exit(code)
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "closer.metered", *argv])
