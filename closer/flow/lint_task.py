"""Verilator lint as SiliconCompiler's task, with string parameters passed intact and black boxes
for the design's hard macros.

SiliconCompiler 0.38 escapes the quotes of a string parameter for a shell (`-GP=\\"v\\"`) but
runs Verilator without one, so `-GMEM_STYLE="macro"` reached Verilator as `\\"macro\\"` and failed.

A config with `macros` instantiates modules no RTL file defines (Verilator: MODMISSING); the node
writes a black-box module per MACRO of each `macro_lef` file (closer.flow.macros.blackbox_verilog)
to `macros/<name>.v` and lints with them.
"""

from __future__ import annotations

from pathlib import Path

from siliconcompiler.tools.verilator.lint import LintTask

from closer.flow.tool_cpu import RecordsToolCpu
from closer.flow.tool_versions import CachedVersion

BLACKBOX_DIR = "macros"


class QuotedParamLintTask(RecordsToolCpu, CachedVersion, LintTask):
    def __init__(self) -> None:
        super().__init__()
        self.add_parameter("macro_lef", "[file]", "LEF files of the design's hard macros (black boxes)")

    def set_macro_lefs(self, lefs: list[Path], step: str, index: str) -> None:
        self.set("var", "macro_lef", [str(p) for p in lefs], step=step, index=index)

    def setup(self) -> None:
        super().setup()
        if self.get("var", "macro_lef"):  # SiliconCompiler refuses an empty required key
            self.add_required_key("var", "macro_lef")

    def pre_process(self) -> None:
        super().pre_process()
        if not self.get("var", "macro_lef"):
            return
        from closer.flow.macros import blackbox_verilog
        from closer.physical.io.lef import read_macros

        for lef in self.find_files("var", "macro_lef"):
            for name in read_macros(Path(lef)):
                path = Path(BLACKBOX_DIR) / f"{name}.v"
                path.parent.mkdir(exist_ok=True)
                path.write_text(blackbox_verilog(name, Path(lef)))

    def _blackboxes(self) -> list[str]:
        if not self.get("var", "macro_lef"):
            return []
        from closer.physical.io.lef import read_macros

        return [str(Path(BLACKBOX_DIR) / f"{name}.v")
                for lef in self.find_files("var", "macro_lef") for name in read_macros(Path(lef))]

    def runtime_options(self):
        options = [opt.replace('\\"', '"') if opt.startswith("-G") else opt
                   for opt in super().runtime_options()]
        return [*options, *self._blackboxes()]
