"""The flow as data: an ordered list of steps per backend. The direct engine runs a step by its
name (closer.flow.direct.specs); the SiliconCompiler engine as the task `make_task` returns.

`--to STEP` cuts the list after STEP. The physical steps (closer.physical) append to these lists
with `register_steps`; each step names the step before it through the list order, so the graph
stays a chain and any prefix of it is a valid flow.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from closer.errors import InputError


class Backend(StrEnum):
    AUTO = "auto"
    CLASSIC = "classic"    # Verilator, pyslang, Yosys (pyosys launcher), Debian OpenSTA
    OPENROAD = "openroad"  # SiliconCompiler's OpenROAD tasks; needs `openroad` on PATH


@dataclass(frozen=True)
class Step:
    name: str                          # node name in the flowgraph and the value of --to
    tool: str                          # the executable, for people and provenance
    summary: str
    make_task: Callable[[], object]    # returns a fresh siliconcompiler Task (the sc engine's)
    # the tool's version when SiliconCompiler has none to record (a Python task runs no exe)
    version: Callable[[], str] | None = None


def _lint():
    from closer.flow.lint_task import QuotedParamLintTask
    return QuotedParamLintTask()


def _elaborate():
    from siliconcompiler.tools.slang.elaborate import Elaborate
    return Elaborate()


def _synth():
    from closer.flow.synth_task import CloserSynthesis
    return CloserSynthesis()


def _sta_classic():
    from closer.flow.sta_task import ClassicStaTask
    return ClassicStaTask()


FRONT_STEPS: list[Step] = [
    Step("lint", "verilator", "Verilator --lint-only on the RTL", _lint),
    Step("elaborate", "pyslang", "slang elaboration to one Verilog file (SystemVerilog in)", _elaborate),
    Step("synth", "yosys", "SiliconCompiler ASIC synthesis with Yosys on the slow corner, ABC script from the flow settings", _synth),
    Step("sta", "sta", "OpenSTA setup (ss, tt), hold (ff, tt) and power (tt)", _sta_classic),
]


def _qrouter_version() -> str:
    from closer.physical.route.route import QROUTER_VERSION
    return QROUTER_VERSION


def _pnr():
    from closer.flow.pnr_task import PnrTask
    return PnrTask()


# closer.physical: placement, qrouter routing, GDS, KLayout DRC/LVS, OpenSTA with parasitics
PHYSICAL_STEPS: list[Step] = [
    Step("pnr", "qrouter", "closer.physical: place, route (qrouter), GDS, DRC and LVS (KLayout), "
         "post-route OpenSTA", _pnr, _qrouter_version),
]

STEPS: dict[Backend, list[Step]] = {
    Backend.CLASSIC: [*FRONT_STEPS, *PHYSICAL_STEPS],
}


def register_steps(backend: Backend, steps: list[Step]) -> None:
    """Append steps (e.g. place and route) after the existing ones of `backend`."""
    existing = {s.name for s in STEPS.setdefault(backend, [])}
    clash = existing & {s.name for s in steps}
    if clash:
        raise ValueError(f"steps already registered for {backend}: {sorted(clash)}")
    STEPS[backend].extend(steps)


def resolve_backend(requested: Backend | str) -> Backend:
    backend = Backend(requested)
    if backend is Backend.AUTO:
        return Backend.OPENROAD if shutil.which("openroad") else Backend.CLASSIC
    return backend


def steps_until(backend: Backend, to: str | None) -> list[Step]:
    if backend not in STEPS:
        raise InputError(f"backend {backend.value!r} has no steps on this machine yet: the OpenROAD "
                         f"tasks come with the physical flow; use --backend classic")
    steps = STEPS[backend]
    if to is None:
        return list(steps)
    names = [s.name for s in steps]
    if to not in names:
        raise InputError(f"--to {to!r}: unknown step; steps of the {backend.value} backend: "
                         f"{', '.join(names)}")
    return steps[: names.index(to) + 1]
