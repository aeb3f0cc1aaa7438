"""Netlist-level mutations with Yosys `mutate` (modes inv, const0, const1, cnot0, cnot1).

`mutate -list N -seed S` samples mutations spread over modules and source lines (Yosys's own
coverage-driven pick); each listed `mutate -mode ...` line is then applied to the `prep`ed design
and written back as one Verilog file, the mutant's whole file set. Yosys runs with the design
folder as its working directory so cell names and `-src` locations hold relative paths, which makes
the listed lines (and so the mutant ids) independent of where the checkout lives.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from closer.errors import ToolError
from closer.mutants.design_input import DesignUnderTest
from closer.mutants.models import YOSYS_MODES, Location, Operator
from closer.procs import Command, run

_SRC = re.compile(r"^(?P<file>.+?):(?P<line>\d+)\.(?P<col>\d+)(?:-(?P<eline>\d+)\.(?P<ecol>\d+))?$")


@dataclass(frozen=True)
class YosysMutation:
    command: str  # one `mutate -mode ...` line as `mutate -list` printed it

    @property
    def id(self) -> str:
        return "y" + hashlib.sha256(f"yosys|{self.command}".encode()).hexdigest()[:11]

    @property
    def options(self) -> dict[str, list[str]]:
        words = self.command.split()[1:]  # Yosys words, not shell words (names hold quotes)
        options: dict[str, list[str]] = {}
        for flag, value in zip(words[::2], words[1::2]):
            options.setdefault(flag.lstrip("-"), []).append(value)
        return options

    @property
    def operator(self) -> Operator:
        return Operator(self.options["mode"][0])

    def location(self) -> Location:
        """The last `-src` is the cell's own source span; earlier ones name the wires it drives."""
        for src in reversed(self.options.get("src", [])):
            match = _SRC.match(src)
            if match:
                return Location(file=match["file"], line=int(match["line"]), column=int(match["col"]),
                                end_line=int(match["eline"]) if match["eline"] else None,
                                end_column=int(match["ecol"]) if match["ecol"] else None)
        return Location(file="?", line=0, column=0)

    def description(self) -> str:
        opts = self.options
        wire = f" (wire {opts['wire'][0]}[{opts['wirebit'][0]}])" if "wire" in opts else ""
        return (f"{self.operator.value} on {opts['module'][0]}/{opts['cell'][0]} port "
                f"{opts['port'][0]}[{opts['portbit'][0]}]{wire}")


def elaboration_script(design: DesignUnderTest) -> list[str]:
    """Read the sources and `prep` the configured top, as every mutation list assumes."""
    incs = " ".join(f"-I{_q(str(p))}" for p in design.include_dirs)
    lines = [f"read_verilog -sv {incs} {_q(src)}".replace("  ", " ") for src in design.sources]
    lines += [f"chparam -set {key} {_param(value)} {design.top}" for key, value in design.parameters.items()]
    lines.append(f"prep -top {design.top}")
    return lines


def list_mutations(design: DesignUnderTest, count: int, seed: int, work: Path) -> list[YosysMutation]:
    """`mutate -list count -seed seed`, filtered to the five modes Closer uses."""
    work.mkdir(parents=True, exist_ok=True)
    listing = work / "mutations.ys"
    script = work / "list.ys"
    script.write_text("\n".join(elaboration_script(design)
                                + [f"mutate -list {count} -seed {seed} -o {_q(str(listing))}"]) + "\n")
    _run_yosys(design, script, work / "list.log")
    commands = [line.strip() for line in listing.read_text().splitlines() if line.startswith("mutate ")]
    modes = {m.value for m in YOSYS_MODES}
    return [m for m in map(YosysMutation, commands) if m.operator.value in modes]


def write_mutants(design: DesignUnderTest, mutations: list[tuple[YosysMutation, Path]],
                  baseline: Path | None, work: Path) -> None:
    """Apply each mutation to a fresh copy of the elaborated design and write it to its path.

    One Yosys process does all of them (`design -save`/`-load`). `baseline`, when given, receives
    the unmutated netlist, which must pass the oracle for the Yosys family to be meaningful.
    """
    work.mkdir(parents=True, exist_ok=True)
    lines = elaboration_script(design) + ["design -save closer_golden"]
    if baseline is not None:
        baseline.parent.mkdir(parents=True, exist_ok=True)
        lines.append(f"write_verilog -noattr {_q(str(baseline))}")
    for mutation, out in mutations:
        out.parent.mkdir(parents=True, exist_ok=True)
        lines += ["design -load closer_golden", mutation.command,
                  f"write_verilog -noattr {_q(str(out))}"]
    script = work / "apply.ys"
    script.write_text("\n".join(lines) + "\n")
    _run_yosys(design, script, work / "apply.log")


def canonical_netlist(design: DesignUnderTest, folder: Path, out: Path, work: Path) -> None:
    """Elaborate the copy of the design's sources in `folder`, optimise, renumber every name and
    write the netlist to `out`. Two file sets whose outputs are identical (after the header line)
    are structurally equal, hence equivalent. One Yosys process per file set: the renumbering
    order depends on the process's history, so sharing a process breaks the comparison."""
    work.mkdir(parents=True, exist_ok=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    incs = " ".join(f"-I{_q(str(design.source_root / d))}" for d in design.include_dirs)
    lines = [f"read_verilog -sv {incs} {_q(str(folder / src))}".replace("  ", " ") for src in design.sources]
    lines += [f"chparam -set {k} {_param(v)} {design.top}" for k, v in design.parameters.items()]
    lines += [f"prep -top {design.top}", "opt -full", "opt_clean -purge", "rename -enumerate",
              f"write_verilog -noattr {_q(str(out))}"]
    label = hashlib.sha256(str(out).encode()).hexdigest()[:12]  # one script per output: runs overlap
    script = work / f"canonical-{label}.ys"
    script.write_text("\n".join(lines) + "\n")
    _run_yosys(design, script, work / f"canonical-{label}.log")


def netlist_body(path: Path) -> str:
    """The netlist without Yosys's header comment (which names the version)."""
    return path.read_text().split("\n", 1)[1]


def live_source_lines(design: DesignUnderTest, work: Path) -> dict[str, set[int]]:
    """Source lines that the elaborated configuration keeps: the spans of the `src` attributes of
    every wire, cell and process after `hierarchy; proc`. Code outside them (a disabled generate
    branch, a branch on a parameter value not chosen) cannot change behaviour, so a source edit
    there is equivalent without simulation. No `opt` runs first, so logic that constant folding
    would remove (`a | 1'b0`) still counts as live; module spans are skipped (they cover all).
    """
    work.mkdir(parents=True, exist_ok=True)
    rtlil = work / "elaborated.il"
    script = work / "elaborate.ys"
    lines = [line for line in elaboration_script(design) if not line.startswith("prep ")]
    lines += [f"hierarchy -top {design.top}", "proc", f"write_rtlil {_q(str(rtlil))}"]
    script.write_text("\n".join(lines) + "\n")
    _run_yosys(design, script, work / "elaborate.log")
    live: dict[str, set[int]] = {}
    for match in re.finditer(r'^[ \t]+attribute \\src "([^"]*)"', rtlil.read_text(), re.MULTILINE):
        for span in match.group(1).split("|"):
            src = _SRC.match(span)
            if src:
                last = int(src["eline"]) if src["eline"] else int(src["line"])
                live.setdefault(src["file"], set()).update(range(int(src["line"]), last + 1))
    return live


def _run_yosys(design: DesignUnderTest, script: Path, log: Path) -> None:
    try:
        run(Command(["yosys", "-q", "-s", str(script)], cwd=design.source_root, timeout_s=600), log)
    except ToolError as exc:
        raise ToolError(f"Yosys failed on design {design.name} ({script}): {exc}") from exc


def _q(text: str) -> str:
    return f'"{text}"' if any(c.isspace() for c in text) else text


def _param(value: object) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    return str(int(value)) if isinstance(value, bool) else str(value)
