"""STA and power with Debian's OpenSTA (`sta`, 2.0.17) as a SiliconCompiler task.

SiliconCompiler's own OpenSTA tasks need OpenSTA >= 2.6 and commands the 2019 build lacks, so the
classic backend runs `scripts/closer_sta.tcl` instead. The corners and their checks come from the
project's timing scenarios (one per Liberty corner); the clock port from the design. The SDC is
read as data (closer.sdc) and only its canonical text (`sdc/<n>.sdc` in the node) is handed to
OpenSTA. The script writes its numbers to `reports/closer_sta.txt` (`metric`/`clock`/`done`
lines, through a file handle: nothing else OpenSTA reads can print into it; the log is not
parsed); `post_process` collects them into `reports/sta.json` and raises (fails the node) if the
script did not finish. Its unconstrained-path audit
(`timing__unconstrained__count`, listed in reports/untimed.rpt) counts endpoints and inputs with
no timed setup or hold check, false-pathed ones included; `timing__check_setup__unconstrained`
keeps OpenSTA's own `check_setup -unconstrained_endpoints` count.

Every ASIC library of the project is read at each corner: the main library's Liberty of that
corner and the macros' (closer.flow.macros), whose PDK may have only a typical-corner file; the
macro files read at each corner go to `reports/sta.json` (`macro_liberty`) and from there to
`closer__sta__macro_liberty_corner` (closer.flow.metrics).
"""

from __future__ import annotations

from pathlib import Path

from siliconcompiler.asic import ASICTask

from closer.flow.direct.sta import STA_SCRIPT, StaCorner, collect_sta, parse_version, write_sta_inputs
from closer.flow.tool_cpu import RecordsToolCpu
from closer.flow.tool_versions import CachedVersion


class ClassicStaTask(RecordsToolCpu, CachedVersion, ASICTask):
    def __init__(self) -> None:
        super().__init__()
        self.add_parameter("clock_port", "str", "top-level clock port that must carry a clock")
        self.add_parameter("sdc_exceptions", "[str]", "timing exceptions the SDC may use (closer.sdc)")

    def tool(self) -> str:
        return "opensta_classic"

    def task(self) -> str:
        return "sta"

    def parse_version(self, stdout: str) -> str:
        return parse_version(stdout)

    def set_clock_port(self, port: str, step: str | None = None, index: str | None = None) -> None:
        self.set("var", "clock_port", port, step=step, index=index)

    def set_sdc_exceptions(self, exceptions, step: str | None = None, index: str | None = None) -> None:
        self.set("var", "sdc_exceptions", [str(e) for e in exceptions], step=step, index=index)

    def setup(self) -> None:
        super().setup()
        self.set_exe("sta", vswitch="-version")
        self.add_version(">=2.0")
        self.set_script(str(STA_SCRIPT), dataroot=None)
        self.add_regex("warnings", r"^Warning")
        self.add_regex("errors", r"^Error")

        self.add_input_file(ext="vg")
        self.add_output_file(ext="vg")
        self.add_required_key("var", "clock_port")
        if self.get("var", "sdc_exceptions"):  # SiliconCompiler refuses an empty required key
            self.add_required_key("var", "sdc_exceptions")
        self.add_required_key("asic", "delaymodel")
        self._add_clock_required_keys()
        for scenario in self._scenarios():
            self.add_required_key(scenario, "libcorner")
            self.add_required_key(scenario, "check")
            for lib, fileset in self._liberty_filesets(scenario):
                self.add_required_key(lib, "asic", "libcornerfileset",
                                      scenario.get_libcorner()[0], self.project.get("asic",
                                                                                    "delaymodel"))
                self.add_required_key(lib, "fileset", fileset, "file", "liberty")

    def _scenarios(self):
        return list(self.project.constraint.timing.get_scenario().values())

    def _liberty_filesets(self, scenario):
        delaymodel = self.project.get("asic", "delaymodel")
        for libname in self.project.get("asic", "asiclib"):
            lib = self.project.get_library(libname)
            for corner in scenario.get_libcorner():
                for fileset in lib.get("asic", "libcornerfileset", corner, delaymodel) or []:
                    yield lib, fileset

    def _sdc_files(self) -> list[str]:
        files: list[str] = []
        for lib, fileset in self.project.get_filesets():
            files.extend(lib.find_files("fileset", fileset, "file", "sdc") or [])
        return files

    def _liberty_files(self, scenario) -> tuple[list[str], list[str]]:
        """(the main library's Liberty files, the other ASIC libraries' (macros')) at the
        scenario's corner."""
        main, macros = [], []
        for lib, fileset in self._liberty_filesets(scenario):
            files = lib.find_files("fileset", fileset, "file", "liberty")
            (main if lib.name == self.project.get("asic", "mainlib") else macros).extend(files)
        return main, macros

    def macro_liberty(self) -> dict[str, list[str]]:
        """{scenario: the macro Liberty files read there} (empty without macros)."""
        out = {}
        for scenario in self._scenarios():
            _, macros = self._liberty_files(scenario)
            if macros:
                out[scenario.name] = macros
        return out

    def pre_process(self) -> None:
        super().pre_process()
        corners = []
        for scenario in self._scenarios():
            main, macros = self._liberty_files(scenario)
            if len(main) != 1:
                raise ValueError(f"scenario {scenario.name}: expected one Liberty file of the main "
                                 f"library, got {main}")
            corners.append(StaCorner(scenario.name, [*main, *macros], list(scenario.get_check())))
        write_sta_inputs(Path("."), self.design_topmodule, corners, self._sdc_files(),
                         self.get("var", "sdc_exceptions") or [], self.get("var", "clock_port"))

    def runtime_options(self):
        return ["-no_init", "-exit", *super().runtime_options()]

    def post_process(self) -> None:
        super().post_process()
        collect_sta(Path("."), self.design_topmodule, self.macro_liberty())
