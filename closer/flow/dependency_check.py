"""SiliconCompiler's pre-run Python dependency check, once per environment.

Every `Project.run()` calls `siliconcompiler.utils.check_python_dependencies`, an informative
check (it only logs warnings) that an editable install's pyproject.toml matches what is
installed: it reads every installed distribution's metadata, about 0.5-1 s a run. Around our
runs, `dependency_check_once` serves it from closer.flow.cache, keyed by the environment's
fingerprint and closer's own pyproject.toml (path, size, mtime): the check runs when either
changed and its warnings are logged again, word for word, on every run that reuses it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from closer.flow import cache
from closer.paths import repo_paths


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _entry_key() -> str:
    pyproject = repo_paths().root / "pyproject.toml"
    own = cache.stat_key(pyproject) if pyproject.is_file() else "no-pyproject"
    return cache.key_digest(cache.environment_fingerprint(), own)


@contextmanager
def dependency_check_once() -> Iterator[None]:
    """Within the block, SiliconCompiler's dependency check is answered from the cache."""
    import siliconcompiler.utils as sc_utils

    original = sc_utils.check_python_dependencies

    def check(logger: logging.Logger) -> None:
        root = cache.cache_root()
        if root is None:
            original(logger)
            return
        entry = root / "python-dependency-check" / f"{_entry_key()}.json"
        stored = cache.read_json(entry)
        if isinstance(stored, list) and all(isinstance(m, str) for m in stored):
            for message in stored:
                logger.warning(message)
            return
        collect = _Collect()
        logger.addHandler(collect)
        try:
            original(logger)
        finally:
            logger.removeHandler(collect)
        cache.write_json(entry, collect.messages)

    sc_utils.check_python_dependencies = check
    try:
        yield
    finally:
        sc_utils.check_python_dependencies = original
