"""A plain `closer-tool sim|synth|pnr|verify [ARGS...]` on a standalone workspace, without click.

What `closer.metered.cli` does for that command line, in the process that parsed it (the launcher's,
closer.metered.quickstatus, or `python -m closer.metered`): the metered call reads and writes its
files through msgspec views (closer.metered.front), so with click out of the way it imports no
model at all. Anything else — options in other forms, help, the first call of a run that nobody
started (it starts the run and says so) — is left to the full command (`tool_call` returns None).
"""

from __future__ import annotations

import sys
from pathlib import Path

from closer.errors import CloserError
from closer.metered.front import metered_call
from closer.metered.paths import WorkspacePaths
from closer.metered.quickstatus import tool_arguments
from closer.toolclass import ToolClass


def tool_call(argv: list[str]) -> int | None:
    """The exit code of the call `argv` asks for, run here; None: the full command must answer.
    Errors as `closer.cli.run_cli` shows them: one line on stderr, exit 2."""
    parsed = tool_arguments(argv)
    if parsed is None:
        return None
    folder, tool, args = parsed
    try:
        ws = WorkspacePaths.locate(Path(folder))
        ws.check_layout()
        if ws.is_valid() and not (ws.run_info.exists() or ws.run_info.is_symlink()):
            return None  # the first call starts the run (closer.metered.cli.start_if_fresh)
        result = metered_call(ws, ToolClass(tool), args)
    except CloserError as exc:
        print(f"closer-tool: error: {exc}", file=sys.stderr)
        return 2
    print(result.feedback)
    return result.exit_code
