"""The synthesis Liberty, prepared once per Liberty file and cached by its SHA-256.

SiliconCompiler's Yosys synthesis rewrites every synthesis-corner Liberty for Yosys and ABC
(`prepareLib.process_liberty_file`: regexes over the whole file) and writes the result into each
synth node folder: 11 MB and about 0.55 s per node for sky130hd. The same preparation is kept here
in closer.flow.cache, keyed by the source's SHA-256 and the preparation's version (SiliconCompiler's
version, as the rewrite is its own), and the node reads the cached file.
"""

from __future__ import annotations

from pathlib import Path

from closer.flow import cache

PREP_REVISION = "1"   # bump when the way the prepared file is produced changes


def preparation_version() -> str:
    import siliconcompiler

    return f"siliconcompiler-{siliconcompiler.__version__}-closer-{PREP_REVISION}"


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
        cache.write_atomic(entry, lambda tmp: tmp.write_text(_prepare(source)))
    return entry


def _prepare(source: Path) -> str:
    from siliconcompiler.tools.yosys.prepareLib import process_liberty_file

    return process_liberty_file(str(source))
