"""The synthesis Liberty, prepared once per Liberty file and cached by its SHA-256.

SiliconCompiler's Yosys synthesis rewrites every synthesis-corner Liberty for Yosys and ABC
(`prepareLib.process_liberty_file`: regexes over the whole file) and writes the result into each
synth node folder: 11 MB and about 0.55 s per node for sky130hd. The same preparation is kept here
in closer.flow.cache, keyed by the source's SHA-256 and the preparation's version (SiliconCompiler's
version, as the rewrite is its own), and the node reads the cached file. The Liberty's cell names
(the platform's dont-use globs are expanded against them) are kept the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from closer.flow import cache

PREP_REVISION = "1"   # bump when the way the prepared file is produced changes
CELLS_REVISION = "1"  # bump when the cell-name scan changes


def preparation_version() -> str:
    from closer.flow.tool_versions import siliconcompiler_version

    return f"siliconcompiler-{siliconcompiler_version()}-closer-{PREP_REVISION}"


def prepared_liberty(source: Path, name: str) -> Path | None:
    """The prepared copy of `source`, in the cache as `name` (SiliconCompiler's Yosys script
    picks the main library's files by their name), built now if absent; None without a cache."""
    root = cache.cache_root()
    if root is None:
        return None
    source_sha = cache.file_sha256(source)
    version = cache.key_digest(preparation_version())[:12]
    entry = root / "liberty" / f"{source_sha[:32]}-{version}" / name
    if not entry.is_file():
        cache.write_atomic(entry, lambda tmp: tmp.write_text(prepare(source)))
    return entry


def prepare(source: Path) -> str:
    """SiliconCompiler's rewrite (`prepareLib.process_liberty_file`), loaded from its file: the
    module needs only the standard library (closer.flow.sc_files)."""
    from closer.flow.sc_files import load_file

    prepare_lib = load_file("_closer_sc_preparelib", "tools/yosys/prepareLib.py")
    return prepare_lib.process_liberty_file(str(source))


def cached_liberty_cells(liberty: Path, scan: Callable[[Path], list[str]]) -> tuple[str, ...]:
    """`scan(liberty)`, kept in the cache by the file's SHA-256 (scanned each call without one)."""
    root = cache.cache_root()
    if root is None:
        return tuple(scan(liberty))
    entry = root / "liberty-cells" / f"{cache.file_sha256(liberty)[:32]}-{CELLS_REVISION}.json"
    stored = cache.read_json(entry)
    if isinstance(stored, list) and all(isinstance(name, str) for name in stored):
        return tuple(stored)
    cells = scan(liberty)
    cache.write_json(entry, cells)
    return tuple(cells)
