"""`closer design new NAME`: a complete design folder from closer/designs/scaffold/, every
`__NAME__` (in file names and text) replaced by NAME. The example it holds (a saturating
accumulator with its oracle, weak variant and tasks) passes `closer design check` once
`closer design calibrate` has written its targets; an author replaces it piece by piece."""

from __future__ import annotations

import re
from pathlib import Path

from closer.errors import InputError

TEMPLATE = Path(__file__).resolve().parent / "scaffold"
TOKEN = "__NAME__"
# a Verilog identifier that is also a safe folder and Python module name
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def new_design(name: str, parent: Path) -> Path:
    """Write the scaffold as parent/NAME and return the folder; refuses an existing one."""
    if not NAME_PATTERN.match(name):
        raise InputError(f"design name {name!r}: use lower-case letters, digits and _ "
                         "(a letter first, at most 40): it names the folder, the top module and the oracle")
    dest = parent / name
    if dest.exists():
        raise InputError(f"{dest} already exists: choose another name or --in folder")
    for src in sorted(p for p in TEMPLATE.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        rel = src.relative_to(TEMPLATE).as_posix().replace(TOKEN, name)
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(src.read_text().replace(TOKEN, name))
    return dest
