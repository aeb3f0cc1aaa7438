"""The flow's synthesis node: SiliconCompiler's `yosys/syn_asic` (sc_synth_asic.tcl) driven by
the design's synthesis settings (closer.flow.settings).

SiliconCompiler's `strategy` parameter is an enum of its named scripts; the script runner also
takes an inline ABC script (`+cmd;...`), which is what `closer.flow.settings.abc_script` builds, so
the parameter is redeclared as a string here. The delay target is the SDC clock period derated by
`synth_delay_margin` (SiliconCompiler's `abc_clock_derating`), and the ABC constraint file gets
the platform's driver cell and output load (SiliconCompiler reads the load only from the task's
own `abc_constraint_load`, never from the library).
"""

from __future__ import annotations

from siliconcompiler.schema import EditableSchema, Parameter, PerNode, Scope
from siliconcompiler.tools.yosys.syn_asic import ASICSynthesis

from closer.flow.settings import SynthSettings, abc_script


class CloserSynthesis(ASICSynthesis):
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
