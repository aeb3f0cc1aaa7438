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

from closer.flow import cache


class CachedVersion:
    """Mixin for a SiliconCompiler Task (before the Task class in the bases)."""

    def get_exe_version(self, workdir: str | None = None) -> str | None:
        switch = self.get("vswitch")
        exe = self.get_exe() if switch else None
        root = cache.cache_root() if exe else None
        if root is None:
            return super().get_exe_version(workdir=workdir)
        key = cache.key_digest(type(self).__qualname__, cache.stat_key(exe), *switch,
                               cache.environment_fingerprint())
        entry = root / "tool-versions" / f"{key}.json"
        stored = cache.read_json(entry)
        if isinstance(stored, dict) and isinstance(stored.get("version"), str):
            self._log_version(exe, stored["version"], "cached for this binary")
            return stored["version"]
        proc = subprocess.run([exe, *switch], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, cwd=workdir)
        if proc.returncode != 0:
            return super().get_exe_version(workdir=workdir)   # SiliconCompiler's own warning
        version = self.parse_version(proc.stdout)
        self._log_version(exe, version, "checked")
        if isinstance(version, str):
            cache.write_json(entry, {"exe": exe, "switch": list(switch), "version": version})
        return version

    def _log_version(self, exe: str, version: str, how: str) -> None:
        self.logger.info(f"Tool '{os.path.basename(exe)}' found with version '{version}' in "
                         f"directory '{os.path.dirname(exe)}' ({how})")
