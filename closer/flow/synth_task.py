"""The flow's synthesis node: SiliconCompiler's `yosys/syn_asic` (sc_synth_asic.tcl) driven by
the design's synthesis settings (closer.flow.settings).

SiliconCompiler's `strategy` parameter is an enum of its named scripts; the script runner also
takes an inline ABC script (`+cmd;...`), which is what `closer.flow.settings.abc_script` builds, so
the parameter is redeclared as a string here. The delay target is the SDC clock period derated by
`synth_delay_margin` (SiliconCompiler's `abc_clock_derating`), and the ABC constraint file gets
the platform's driver cell and output load (SiliconCompiler reads the load only from the task's
own `abc_constraint_load`, never from the library). The Liberty files Yosys reads are
prepared once per file and cached (closer.flow.liberty_prep), not rewritten into every node.

Hard macros (design.toml `macros`) are ASIC libraries of the project (closer.flow.macros): the
script reads their Liberty with `read_liberty -lib` like every library's, so each macro stays a
black-box cell, ABC never maps to it, and `stat -liberty` counts its area.

String parameters are left out of the `read_slang` call: SiliconCompiler passes `-G P=<value>`
through Yosys's Tcl command, which quotes an argument holding `"` or `'` (`"P=\"v\""`), and
read_slang then refuses it ("not a valid form of parameter override"); an unsized number wider than
32 bits is refused too. The node reads the `elaborate` node's output, whose top module already has
each overridden parameter's value as its default (SiliconCompiler's slang/elaborate rewrites them),
so the node's manifest for the script simply omits string parameters (`write_task_manifest`).
"""

from __future__ import annotations

from pathlib import Path

from siliconcompiler.schema import EditableSchema, Parameter, PerNode, Scope
from siliconcompiler.tools.yosys.syn_asic import ASICSynthesis

from closer.flow.liberty_prep import prepared_liberty
from closer.flow.settings import HIERARCHY_SEPARATOR, SynthSettings, abc_script
from closer.flow.tool_cpu import RecordsToolCpu
from closer.flow.tool_versions import CachedVersion


class CloserSynthesis(RecordsToolCpu, CachedVersion, ASICSynthesis):
    def __init__(self) -> None:
        super().__init__()
        help_text = "ABC script: a SiliconCompiler strategy name or an inline `+cmd;...` script"
        EditableSchema(self).insert("var", "strategy", Parameter(
            "str", scope=Scope.JOB, pernode=PerNode.OPTIONAL, shorthelp=help_text, help=help_text),
            clobber=True)

    def set_synth(self, settings: SynthSettings, load_ff: float, step: str, index: str) -> None:
        """The ABC script, delay target margin and output load of `settings`; the hierarchy separator."""
        self.set("var", "strategy", abc_script(settings), step=step, index=index)
        self.set("var", "abc_clock_derating", settings.synth_delay_margin, step=step, index=index)
        self.set("var", "abc_constraint_load", load_ff, step=step, index=index)
        self.set("var", "hierarchy_separator", HIERARCHY_SEPARATOR, step=step, index=index)

    def write_task_manifest(self, directory: str, backup: bool = True) -> None:
        """SiliconCompiler's manifest for the Yosys script, without the string parameters (`"v"`)
        when `read_slang` reads the elaborated design (their values are its top's defaults
        already); only in this file: the project keeps them, so node reuse is unchanged."""
        design = self.project.design
        fileset = self.project.get("option", "fileset")[0]
        removed = {}
        if self.get("var", "use_slang") and Path(directory, "inputs", f"{self.design_topmodule}.sv").is_file():
            for key in design.getkeys("fileset", fileset, "param"):
                value = design.get("fileset", fileset, "param", key)
                if isinstance(value, str) and value.startswith('"'):
                    removed[key] = design.get("fileset", fileset, "param", key, field=None)
        schema = EditableSchema(design)
        try:
            for key in removed:
                schema.remove("fileset", fileset, "param", key)
            super().write_task_manifest(directory, backup)
        finally:
            for key, param in removed.items():
                schema.insert("fileset", fileset, "param", key, param)

    def _generate_cell_area_report(self) -> None:
        """Not written: SiliconCompiler's hierarchical cell-area report (reports/
        hierarchical_cell_area.json) loads the whole JSON netlist in Python (picorv32: 0.18-0.27 s
        per synthesis, py-spy) and nothing reads it; the area metrics come from Yosys's stat.json."""

    def _prepare_synthesis_libraries(self) -> None:
        """SiliconCompiler's preparation of the synthesis-corner Liberty files, served from the
        cache under SiliconCompiler's names (`sc_<library>_<file>.lib`); without a usable cache,
        or with two files of one name, SiliconCompiler's own (a copy in the node folder)."""
        named = self._synthesis_liberty_files()
        if len({name for name, _ in named}) != len(named):
            super()._prepare_synthesis_libraries()
            return
        prepared = [prepared_liberty(Path(source), name) for name, source in named]
        if any(path is None for path in prepared):
            super()._prepare_synthesis_libraries()
            return
        self.unset("var", "synthesis_libraries")
        for path in prepared:
            self.add("var", "synthesis_libraries", str(path))

    def _synthesis_liberty_files(self) -> list[tuple[str, str]]:
        """(SiliconCompiler's prepared name, source) of each Liberty file of every library's
        synthesis-corner filesets, in SiliconCompiler's order, each fileset once."""
        delaymodel = self.project.get("asic", "delaymodel")
        named, seen = [], set()
        for name in self.project.get("asic", "asiclib"):
            library = self.project.get_library(name)
            for corner in self.get("var", "synthesis_corner"):
                for fileset in library.get("asic", "libcornerfileset", corner, delaymodel):
                    if (name, fileset) in seen:
                        continue
                    seen.add((name, fileset))
                    named += [(f"sc_{library.name}_{_stem(source)}.lib", source)
                              for source in library.find_files("fileset", fileset, "file",
                                                               "liberty")]
        return named


def _stem(liberty: str) -> str:
    """The file name without `.gz` and `.lib`, as SiliconCompiler names the prepared copy."""
    base = Path(liberty).name
    for suffix in (".gz", ".lib"):
        if base.lower().endswith(suffix):
            base = base[: -len(suffix)]
    return base
