"""Tool versions checked once per executable, not once per node and run.

SiliconCompiler runs each tool with its version switch before the run (all nodes) and again in
every node: about 0.1-0.5 s a call. `CachedVersion` keeps the parsed version in closer.flow.cache,
keyed by the task class, the executable's resolved path, size and mtime, the version switch and
the Python environment's fingerprint (a launcher script in the venv reports the version of the
package behind it), so a replaced binary or an upgraded package is checked again. A failed
version run is never cached.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

from closer.flow import cache


def cached_version(kind: str, exe: str, switch: list[str], parse: Callable[[str], str | None],
                   workdir: str | None = None) -> tuple[str | None, bool]:
    """(the version `parse` reads from `exe switch...`, whether the cache answered); (None, False)
    when the version run fails. Without a usable cache the version is checked every time."""
    root = cache.cache_root()
    entry = None
    if root is not None:
        key = cache.key_digest(kind, cache.stat_key(exe), *switch, cache.environment_fingerprint())
        entry = root / "tool-versions" / f"{key}.json"
        stored = cache.read_json(entry)
        if isinstance(stored, dict) and isinstance(stored.get("version"), str):
            return stored["version"], True
    proc = subprocess.run([exe, *switch], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, cwd=workdir)
    if proc.returncode != 0:
        return None, False
    version = parse(proc.stdout)
    if isinstance(version, str) and entry is not None:
        cache.write_json(entry, {"exe": exe, "switch": list(switch), "version": version})
    return version, False


class CachedVersion:
    """Mixin for a SiliconCompiler Task (before the Task class in the bases)."""

    def get_exe_version(self, workdir: str | None = None) -> str | None:
        switch = self.get("vswitch")
        exe = self.get_exe() if switch else None
        if not exe:
            return super().get_exe_version(workdir=workdir)
        version, cached = cached_version(type(self).__qualname__, exe, list(switch), self.parse_version,
                                         workdir)
        if version is None:
            return super().get_exe_version(workdir=workdir)   # SiliconCompiler's own warning
        self._log_version(exe, version, "cached for this binary" if cached else "checked")
        return version

    def _log_version(self, exe: str, version: str, how: str) -> None:
        self.logger.info(f"Tool '{os.path.basename(exe)}' found with version '{version}' in "
                         f"directory '{os.path.dirname(exe)}' ({how})")


def siliconcompiler_version() -> str:
    """The installed SiliconCompiler's version, without importing it: the SiliconCompiler engine
    runs on it and both engines run its Yosys scripts."""
    from importlib.metadata import version

    return version("siliconcompiler")
