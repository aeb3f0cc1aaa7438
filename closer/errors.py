"""The error hierarchy shared by every Closer module.

`CloserError` carries a message meant for a person; the CLI prints it and exits non-zero.
"""


class CloserError(Exception):
    """Any failure Closer reports to the user with a clear message."""


class InputError(CloserError):
    """Bad input: malformed file, missing key, invalid value. Nothing was written."""


class ToolError(CloserError):
    """An external tool failed (non-zero exit, crash, or unparseable output)."""


class ToolMissing(ToolError):
    """An external tool is not installed or not on PATH."""


class SandboxSetupError(ToolMissing):
    """A sandbox cannot be built: a path it must mount is not there (bubblewrap would fail with
    exit 1, which would read as the sandboxed program's own failure)."""


class ToolTimeout(ToolError):
    """An external tool ran past its time limit and was stopped."""
