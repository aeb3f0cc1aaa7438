"""The sky130A PDK, found through PDK_ROOT in open_pdks layout; never copied into the repository.

`PdkPaths` is the one class that knows the layout::

    $PDK_ROOT/sky130A/libs.ref/sky130_fd_sc_hd/
        lib/sky130_fd_sc_hd__{tt_025C_1v80,ss_100C_1v60,ff_n40C_1v95}.lib
        techlef/sky130_fd_sc_hd__nom.tlef   lef/sky130_fd_sc_hd.lef
        gds/sky130_fd_sc_hd.gds             verilog/{primitives,sky130_fd_sc_hd}.v
    $PDK_ROOT/sky130A/libs.ref/sky130_sram_macros/{lef,lib}/...
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import click

from closer.errors import InputError
from closer.paths import default_pdk_root
from closer.toolchain import search_path

LIBRARY = "sky130_fd_sc_hd"
CORNERS = ("tt_025C_1v80", "ss_100C_1v60", "ff_n40C_1v95")
# further Liberty corners the PDK may carry (../shared/pdk does): STA-only corners, e.g. the hidden
# PVT corners of a task's physical conditions; synthesis and `closer pdk check` use CORNERS
EXTRA_CORNERS = ("tt_100C_1v80", "ff_100C_1v95")
ALL_CORNERS = CORNERS + EXTRA_CORNERS
CELL_COUNT_PER_CORNER = 428  # timing cells in each Liberty file (physical-only cells have none)


@dataclass(frozen=True)
class PdkPaths:
    root: Path

    @property
    def tree(self) -> Path:
        """The open_pdks tree (`sky130A`): every file below lies in it."""
        return self.root / "sky130A"

    @property
    def lib_ref(self) -> Path:
        return self.tree / "libs.ref" / LIBRARY

    def liberty(self, corner: str) -> Path:
        if corner not in ALL_CORNERS:
            raise InputError(f"unknown corner {corner!r}; known: {', '.join(ALL_CORNERS)}")
        return self.lib_ref / "lib" / f"{LIBRARY}__{corner}.lib"

    @property
    def tech_lef(self) -> Path:
        return self.lib_ref / "techlef" / f"{LIBRARY}__nom.tlef"

    @property
    def cell_lef(self) -> Path:
        return self.lib_ref / "lef" / f"{LIBRARY}.lef"

    @property
    def gds(self) -> Path:
        return self.lib_ref / "gds" / f"{LIBRARY}.gds"

    @property
    def verilog_models(self) -> list[Path]:
        return [self.lib_ref / "verilog" / "primitives.v", self.lib_ref / "verilog" / f"{LIBRARY}.v"]

    @property
    def signoff_drc_deck(self) -> Path:
        """The Efabless MPW-precheck KLayout manufacturing-rules deck, where open_pdks installs it."""
        return self.tree / "libs.tech" / "klayout" / "drc" / "sky130A_mr.drc"

    @property
    def sram_macros(self) -> Path:
        return self.tree / "libs.ref" / "sky130_sram_macros"

    def macro_names(self) -> list[str]:
        """The hard macros the PDK has abstracts for (a LEF in sky130_sram_macros/lef/)."""
        return sorted(p.stem for p in (self.sram_macros / "lef").glob("*.lef"))

    def macro(self, name: str) -> MacroAbstract | None:
        """The abstract views of macro `name` (its LEF and at least one Liberty), or None."""
        lef = self.sram_macros / "lef" / f"{name}.lef"
        libs = {}
        for path in sorted((self.sram_macros / "lib").glob(f"{name}_*.lib")):
            stem, corner = _liberty_name(path.name)
            if stem == name and corner is not None:  # not a longer macro name's file
                libs[corner] = path
        if not lef.is_file() or not libs:
            return None
        return MacroAbstract(name, lef, libs)

    def required_files(self) -> dict[str, Path]:
        files = {f"liberty {c}": self.liberty(c) for c in CORNERS}
        files |= {"tech LEF": self.tech_lef, "cell LEF": self.cell_lef, "GDS": self.gds}
        files |= {f"Verilog {p.name}": p for p in self.verilog_models}
        return files


# a Liberty file name's corner: OpenRAM's `<macro>_TT_1p8V_25C.lib`, the library's `<lib>__tt_025C_1v80.lib`
_OPENRAM_CORNER = re.compile(r"(?:(.*)_)?(TT|SS|FF)_(\d+)p(\d+)V_(n?)(\d+)C\.lib")
_LIBRARY_CORNER = re.compile(r"(?:(.*)__)?([a-z]{2}_(?:\d{3}|n\d{2})C_\dv\d\d)\.lib")


def liberty_corner(file_name: str) -> str | None:
    """The corner a Liberty file was characterized at, in this module's naming, from its name:
    `sky130_fd_sc_hd__ss_100C_1v60.lib` -> ss_100C_1v60, OpenRAM's `<macro>_TT_1p8V_25C.lib` ->
    tt_025C_1v80; None when the name does not say."""
    return _liberty_name(file_name)[1]


def _liberty_name(file_name: str) -> tuple[str | None, str | None]:
    """(the cell or library name before the corner, the corner) of a Liberty file name."""
    if match := _LIBRARY_CORNER.fullmatch(file_name):
        return match.group(1), match.group(2)
    if match := _OPENRAM_CORNER.fullmatch(file_name):
        stem, process, volts, fraction, minus, degrees = match.groups()
        millivolts = f"{fraction}00"[:2]
        temperature = minus + str(int(degrees)).zfill(3 - len(minus))  # 025, 100, n40
        return stem, f"{process.lower()}_{temperature}C_{volts}v{millivolts}"
    return None, None


@dataclass(frozen=True)
class MacroAbstract:
    """A hard macro's abstract views in the PDK: the LEF and the Liberty files by the corner each
    was characterized at (the SKY130 SRAMs have a TT one only)."""

    name: str
    lef: Path
    liberty_files: dict[str, Path]

    def liberty_corner_for(self, corner: str) -> str:
        """The characterization corner of the Liberty that times the macro at `corner`: that
        corner when the PDK has it, else the typical one (tt_025C_1v80), else the first."""
        if corner in self.liberty_files:
            return corner
        return "tt_025C_1v80" if "tt_025C_1v80" in self.liberty_files else next(iter(self.liberty_files))

    def liberty_for(self, corner: str) -> Path:
        """The Liberty that times the macro at `corner` (`liberty_corner_for`)."""
        return self.liberty_files[self.liberty_corner_for(corner)]

    @property
    def area_um2(self) -> float:
        """The macro's Liberty `area` (µm²: the library's unit, as Yosys `stat -liberty` counts it)."""
        text = next(iter(self.liberty_files.values())).read_text(errors="replace")
        match = re.search(r"\barea\s*:\s*([0-9.eE+-]+)\s*;", text)
        if match is None:
            raise InputError(f"{next(iter(self.liberty_files.values()))}: no cell area")
        return float(match.group(1))


def pdk() -> PdkPaths:
    """The resolved PDK; raises InputError naming what is missing."""
    paths = PdkPaths(default_pdk_root())
    missing = [f"{what} ({p})" for what, p in paths.required_files().items() if not p.is_file()]
    if not paths.root.is_dir():
        raise InputError(f"PDK_ROOT {paths.root} does not exist; set PDK_ROOT to an open_pdks tree")
    if missing:
        raise InputError(f"PDK at {paths.root} is missing: " + "; ".join(missing))
    return paths


@dataclass(frozen=True)
class CheckResult:
    item: str
    ok: bool
    detail: str


def check_pdk(paths: PdkPaths) -> list[CheckResult]:
    """Check that every required file exists and that a real tool parses it."""
    results = []
    for what, path in paths.required_files().items():
        if not path.is_file():
            results.append(CheckResult(what, False, f"missing: {path}"))
            continue
        if what.startswith("liberty"):
            results.append(_check_liberty(what, path))
        elif what == "GDS":
            results.append(_check_gds(path))
        elif what == "cell LEF":
            results.append(_check_lef(paths.tech_lef, path))
        else:
            results.append(CheckResult(what, True, str(path)))
    if all(r.ok for r in results if r.item.startswith("Verilog")):
        results.append(_check_verilog(paths.verilog_models))
    return results


def _check_liberty(what: str, path: Path) -> CheckResult:
    yosys = shutil.which("yosys", path=search_path())
    if yosys is None:
        return CheckResult(what, False, "no yosys to parse it (run scripts/bootstrap.sh)")
    proc = subprocess.run([yosys, "-p", f"read_liberty -lib {path}"], capture_output=True, text=True)
    cells = re.search(r"Imported (\d+) cell types from liberty file", proc.stdout)
    if proc.returncode != 0 or not cells:
        return CheckResult(what, False, f"does not parse: {(proc.stdout + proc.stderr)[-300:]}")
    n = int(cells.group(1))
    return CheckResult(what, n == CELL_COUNT_PER_CORNER, f"{n} cells, {path}")


def _check_gds(path: Path) -> CheckResult:
    import klayout.db as kdb

    layout = kdb.Layout()
    try:
        layout.read(str(path))
    except RuntimeError as exc:
        return CheckResult("GDS", False, f"does not parse: {exc}")
    return CheckResult("GDS", layout.cells() > 0, f"{layout.cells()} cells, {path}")


def _check_lef(tech_lef: Path, cell_lef: Path) -> CheckResult:
    import klayout.db as kdb

    opts = kdb.LoadLayoutOptions()
    opts.lefdef_config.macro_resolution_mode = 1
    layout = kdb.Layout()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            # KLayout picks its reader by file extension; the tech LEF ends in .tlef.
            tech_link = Path(tmp) / "tech.lef"
            tech_link.symlink_to(tech_lef)
            layout.read(str(tech_link), opts)
            layout.read(str(cell_lef), opts)
    except RuntimeError as exc:
        return CheckResult("cell LEF", False, f"does not parse: {exc}")
    return CheckResult("cell LEF", layout.cells() > 0, f"{layout.cells()} macros, {cell_lef}")


def _check_verilog(models: list[Path]) -> CheckResult:
    iverilog = shutil.which("iverilog")
    if iverilog is None:
        return CheckResult("Verilog models compile", False, "iverilog not installed")
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([iverilog, "-g2012", "-DFUNCTIONAL", "-o", f"{tmp}/a.out", *map(str, models)],
                              capture_output=True, text=True)
    ok = proc.returncode == 0
    return CheckResult("Verilog models compile", ok,
                       "iverilog -DFUNCTIONAL ok" if ok else proc.stderr[-300:])


@click.group("pdk")
def pdk_group() -> None:
    """Inspect the PDK found through PDK_ROOT."""


@click.command("check")
def pdk_check_command() -> None:
    """Verify the Liberty, LEF, GDS and Verilog files exist and parse."""
    from rich.console import Console
    from rich.table import Table

    paths = PdkPaths(default_pdk_root())
    console = Console()
    if not paths.root.is_dir():
        console.print(f"[red]PDK_ROOT {paths.root} does not exist[/]: set PDK_ROOT to an open_pdks "
                      f"tree holding sky130A/libs.ref/{LIBRARY}")
        raise SystemExit(1)
    results = check_pdk(paths)
    table = Table(title=f"PDK {paths.root}")
    for col in ("item", "status", "detail"):
        table.add_column(col)
    for r in results:
        table.add_row(r.item, "[green]ok[/]" if r.ok else "[red]FAIL[/]", r.detail)
    console.print(table)
    failed = [r.item for r in results if not r.ok]
    if failed:
        console.print(f"[red]PDK check failed:[/] {', '.join(failed)}")
        raise SystemExit(1)


pdk_group.add_command(pdk_check_command)
