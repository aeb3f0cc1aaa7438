"""The flow's synthesis node: SiliconCompiler's `yosys/syn_asic` (sc_synth_asic.tcl) driven by
the design's synthesis settings (closer.flow.settings).

SiliconCompiler's `strategy` parameter is an enum of its named scripts; the script runner also
takes an inline ABC script (`+cmd;...`), which is what `closer.flow.settings.abc_script` builds, so
the parameter is redeclared as a string here. The delay target is the SDC clock period derated by
`synth_delay_margin` (SiliconCompiler's `abc_clock_derating`), and the ABC constraint file gets
the platform's driver cell and output load (SiliconCompiler reads the load only from the task's
own `abc_constraint_load`, never from the library). The Liberty files Yosys reads are
prepared once per file and cached (closer.flow.liberty_prep), not rewritten into every node.
"""

from __future__ import annotations

from pathlib import Path

from siliconcompiler.schema import EditableSchema, Parameter, PerNode, Scope
from siliconcompiler.tools.yosys.syn_asic import ASICSynthesis

from closer.flow.liberty_prep import prepared_liberty
from closer.flow.settings import SynthSettings, abc_script
from closer.flow.tool_versions import CachedVersion


class CloserSynthesis(CachedVersion, ASICSynthesis):
    def __init__(self) -> None:
        super().__init__()
        help_text = "ABC script: a SiliconCompiler strategy name or an inline `+cmd;...` script"
        EditableSchema(self).insert("var", "strategy", Parameter(
            "str", scope=Scope.JOB, pernode=PerNode.OPTIONAL, shorthelp=help_text, help=help_text),
            clobber=True)

    def set_synth(self, settings: SynthSettings, load_ff: float, step: str, index: str) -> None:
        """The ABC script, delay target margin and output load of `settings`."""
        self.set("var", "strategy", abc_script(settings), step=step, index=index)
        self.set("var", "abc_clock_derating", settings.synth_delay_margin, step=step, index=index)
        self.set("var", "abc_constraint_load", load_ff, step=step, index=index)

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
