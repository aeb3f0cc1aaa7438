"""Verilator lint as SiliconCompiler's task, with string parameters passed intact.

SiliconCompiler 0.38 escapes the quotes of a string parameter for a shell (`-GP=\\"v\\"`) but
runs Verilator without one, so `-GMEM_STYLE="macro"` reached Verilator as `\\"macro\\"` and failed.
"""

from __future__ import annotations

from siliconcompiler.tools.verilator.lint import LintTask

from closer.flow.tool_versions import CachedVersion


class QuotedParamLintTask(CachedVersion, LintTask):
    def runtime_options(self):
        return [opt.replace('\\"', '"') if opt.startswith("-G") else opt
                for opt in super().runtime_options()]
