"""Shared helpers of the input fuzz tests (tests/test_fuzz_*.py).

`run_closer(args)` runs a `closer` command in this process through the same `run_cli` wrapper
as the console script and returns (exit code, stdout, stderr). An exception that escapes it is
a traceback the user would see, so it fails the test. `assert_refused` is the boundary
contract: exit 2, one line on stderr, naming the file.
"""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass

import click
from hypothesis import HealthCheck, settings

# bounded and fast: these run in CI on every push
FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


def run_closer(args: list[str], command: click.Command | None = None, prog: str = "closer") -> CliResult:
    from closer.cli import cli, run_cli

    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    sys.argv = [prog, *args]
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                run_cli(command or cli, prog)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            else:  # pragma: no cover - run_cli always exits
                code = 0
    finally:
        sys.argv = saved
    return CliResult(code, out.getvalue(), err.getvalue())


def assert_refused(result: CliResult, names: str) -> None:
    """Exit 2, a single error line on stderr that names `names` (a file or an option)."""
    lines = [ln for ln in result.err.splitlines() if ln.strip()]
    assert result.code == 2, f"exit {result.code}, expected 2; stderr: {result.err!r} stdout: {result.out[-300:]!r}"
    assert "Traceback" not in result.err
    assert len(lines) == 1 or lines[0].startswith("Usage:"), f"not one line: {result.err!r}"
    assert names in result.err, f"{names!r} not named in {result.err!r}"


def assert_fast_within_reference(fast, reference, same, raw: bytes) -> None:
    """A fast reader's verdict on `raw` against its reference's: what the fast one accepts, the
    reference accepts too, and `same(fast_result, reference_result)` holds; None means refused."""
    mine = fast(raw)
    if mine is not None:
        theirs = reference(raw)
        assert theirs is not None, f"the fast reader accepted what its reference refuses: {raw[:300]!r}"
        same(mine, theirs)
