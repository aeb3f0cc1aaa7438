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

import json
import re
import shutil
from pathlib import Path

from siliconcompiler.asic import ASICTask

from closer.flow.tool_cpu import RecordsToolCpu
from closer.flow.tool_versions import CachedVersion

SCRIPTS_DIR = Path(__file__).resolve().parent / "scripts"
STA_JSON = "reports/sta.json"
STA_REPORT = "reports/closer_sta.txt"
SDC_JSON = "reports/sdc.json"
SDC_DIR = "sdc"
_METRIC = re.compile(r"metric ([A-Za-z0-9_]+) (\S+)")
_CLOCK = re.compile(r"clock (\S+) (\S+)((?: \S+)*)")


class StaParseError(RuntimeError):
    """The STA report lacks the lines the script writes when it completes, or has others."""


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
        return stdout.strip().split()[0]

    def set_clock_port(self, port: str, step: str | None = None, index: str | None = None) -> None:
        self.set("var", "clock_port", port, step=step, index=index)

    def set_sdc_exceptions(self, exceptions, step: str | None = None, index: str | None = None) -> None:
        self.set("var", "sdc_exceptions", [str(e) for e in exceptions], step=step, index=index)

    def setup(self) -> None:
        super().setup()
        self.set_exe("sta", vswitch="-version")
        self.add_version(">=2.0")
        self.set_script(str(SCRIPTS_DIR / "closer_sta.tcl"), dataroot=None)
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
            libs = " ".join(f"{{{f}}}" for f in [*main, *macros])
            corners.append(f"{{{scenario.name} {{{libs}}} {{{' '.join(scenario.get_check())}}}}}")
        sdc = self._canonical_sdc()
        Path(STA_REPORT).unlink(missing_ok=True)
        lines = [
            f"set closer_top {{{self.design_topmodule}}}",
            f"set closer_netlist {{inputs/{self.design_topmodule}.vg}}",
            f"set closer_sdc {{{' '.join('{' + s + '}' for s in sdc)}}}",
            f"set closer_report {{{STA_REPORT}}}",
            f"set closer_corners {{{' '.join(corners)}}}",
            f"set closer_clock_port {{{self.get('var', 'clock_port')}}}",
        ]
        Path("sta_config.tcl").write_text("\n".join(lines) + "\n")

    def _canonical_sdc(self) -> list[str]:
        """Each SDC of the design parsed (closer.sdc) and rewritten as `sdc/<n>.sdc` in the node;
        the exception count goes to reports/sdc.json."""
        from closer.sdc import SdcPolicy, write_canonical

        policy = SdcPolicy(allow=frozenset(self.get("var", "sdc_exceptions") or []))
        out, exceptions = [], []
        for number, source in enumerate(self._sdc_files()):
            dest = Path(SDC_DIR) / f"{number}.sdc"
            sdc = write_canonical(Path(source), dest, policy)
            exceptions += [f"{source}:{c.line}: {c.name}" for c in sdc.exceptions]
            out.append(str(dest))
        Path(SDC_JSON).parent.mkdir(parents=True, exist_ok=True)
        Path(SDC_JSON).write_text(json.dumps({"exceptions": exceptions}, indent=1) + "\n")
        return out

    def runtime_options(self):
        return ["-no_init", "-exit", *super().runtime_options()]

    def post_process(self) -> None:
        super().post_process()
        result = parse_sta_report(Path(STA_REPORT).read_text(errors="replace")
                                  if Path(STA_REPORT).is_file() else "")
        result["sdc_exceptions"] = json.loads(Path(SDC_JSON).read_text())["exceptions"]
        result["macro_liberty"] = self.macro_liberty()
        Path(STA_JSON).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        top = self.design_topmodule
        shutil.copyfile(f"inputs/{top}.vg", f"outputs/{top}.vg")


def parse_sta_report(text: str) -> dict:
    """closer_sta.tcl's report file -> {"metrics", "clocks"}.

    Values stay as OpenSTA reported them: slack in seconds, power in watts, clock period in the
    Liberty time unit (ns). Raises StaParseError when the `done` line is missing or a line is not
    one the script writes.
    """
    metrics: dict[str, float] = {}
    clocks: list[dict] = []
    done = False
    for number, line in enumerate(text.splitlines(), start=1):
        if done:
            raise StaParseError(f"{STA_REPORT}:{number}: a line after 'done'")
        if match := _METRIC.fullmatch(line):
            metrics[match.group(1)] = _float(match.group(2), number)
        elif match := _CLOCK.fullmatch(line):
            clocks.append({"name": match.group(1), "period_ns": _float(match.group(2), number),
                           "sources": match.group(3).split()})
        elif line == "done":
            done = True
        else:
            raise StaParseError(f"{STA_REPORT}:{number}: not a line closer_sta.tcl writes: {line[:80]!r}")
    if not done:
        raise StaParseError(f"closer_sta.tcl did not finish (no 'done' line in {STA_REPORT})")
    return {"metrics": metrics, "clocks": clocks}


def _float(text: str, number: int) -> float:
    try:
        return float(text)
    except ValueError:
        raise StaParseError(f"{STA_REPORT}:{number}: {text!r} is not a number") from None
