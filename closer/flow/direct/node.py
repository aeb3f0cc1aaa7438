"""One node of the direct engine: its reuse key, its record, and reuse.

A node folder (`FlowPaths.node_dir(step)`, the same layout as SiliconCompiler's: `inputs/`,
`outputs/`, `reports/`, `<step>.log`) holds `node.json` (`NodeRecord`) once the node finished.
The next run reuses the node when the record's key equals the key of what the node would read
now: the step, the engine's own code, the platform files, the node's settings, the tool's version
and the content of every input file (`node_key`). Anything else wipes the folder and runs the node
again, so a folder never mixes two runs.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from closer.flow.cache import file_sha256

NODE_RECORD = "node.json"
RECORD_FORMAT = 1


@dataclass(frozen=True)
class NodeRecord:
    step: str
    key: str
    tool: str
    tool_version: str | None
    wall_s: float               # the node's own time: preparation, the tool, collecting results
    exe_s: float | None         # the tool's wall time
    exe_cpu_s: float | None     # the tool's CPU time (its process and what it waited for)
    peak_mem_mb: float | None   # the tool's peak resident memory
    format: int = RECORD_FORMAT


@lru_cache(maxsize=1)
def engine_revision() -> str:
    """SHA-256 (16 hex) over the direct engine's code and the flow's Tcl scripts: a change to how
    a node runs reruns it."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for path in sorted([*here.glob("*.py"), *(here.parent / "scripts").glob("*")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def node_key(step: str, settings: dict, inputs: dict[str, Path], tool_version: str | None,
             platform_revision: str) -> str:
    """The reuse key: everything the node's result depends on. `inputs` maps a name to a file
    (hashed by content) or a folder (every file under it, by relative path and content)."""
    digests = {name: _digest(path) for name, path in sorted(inputs.items())}
    text = json.dumps({"step": step, "engine": engine_revision(), "platform": platform_revision,
                       "settings": settings, "inputs": digests, "tool": tool_version},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _digest(path: Path) -> str:
    if path.is_dir():
        digest = hashlib.sha256()
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(str(file.relative_to(path)).encode() + b"\0" + file_sha256(file).encode())
        return digest.hexdigest()
    return file_sha256(path) if path.is_file() else "absent"


def read_record(node: Path) -> NodeRecord | None:
    """The node's record; None when absent, unreadable or of another format (then it reruns)."""
    try:
        data = json.loads((node / NODE_RECORD).read_text())
        record = NodeRecord(**data)
    except (OSError, ValueError, TypeError):
        return None
    return record if record.format == RECORD_FORMAT else None


def reusable(node: Path, key: str, outputs: list[Path]) -> bool:
    record = read_record(node)
    return record is not None and record.key == key and all(p.is_file() for p in outputs)


def fresh_node(node: Path) -> None:
    """An empty node folder with SiliconCompiler's subfolders."""
    shutil.rmtree(node, ignore_errors=True)
    for sub in ("inputs", "outputs", "reports"):
        (node / sub).mkdir(parents=True)


def write_record(node: Path, record: NodeRecord) -> None:
    """Written last, after every output: a node without it is never reused."""
    (node / NODE_RECORD).write_text(json.dumps(asdict(record), indent=1, sort_keys=True) + "\n")
