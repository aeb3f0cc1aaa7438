"""The provenance line of a task's metered public tools (their tools.toml `version` command):

    python -m closer.tasks.public_versions sim|synth|pnr|verify

Separate from closer.tasks.public_check so the probe imports only the tool table: a metered run
probes every tool before its clock starts.
"""

from __future__ import annotations

import sys
from importlib.metadata import version

from closer import __version__
from closer.toolchain import tool_versions

USES = {"sim": ("iverilog",), "synth": ("yosys", "sta"),
        "pnr": ("yosys", "iverilog", "sta", "qrouter"), "verify": ("yosys", "iverilog", "sta", "qrouter")}


def line(tool: str) -> str:
    tools = tool_versions()
    parts = [f"{name} {tools.get(name, 'not found')}" for name in USES.get(tool, ())]
    parts.append(f"cocotb {version('cocotb')}")
    if tool in ("pnr", "verify"):
        parts.append(f"klayout {version('klayout')} (PyPI)")
    return f"closer public checks {__version__}: " + ", ".join(parts)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in USES:
        print(f"usage: python -m closer.tasks.public_versions {'|'.join(USES)}", file=sys.stderr)
        return 2
    print(line(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
