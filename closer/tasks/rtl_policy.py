"""What a candidate's RTL may contain: no file I/O or other host access from the design, includes
only of the workspace's own files, and no preprocessor test of a macro some tool defines itself.

    check_rtl(files, surface_root, surface=None) -> list[Violation]

The design is simulated inside the same simulator process as the testbench, so a system task in
the RTL can write the oracle's reports, read the hidden folder or run a shell. The check reads the
files with pyslang (the flow's own SystemVerilog front end), preprocessed as one compilation unit
in compile order with the defines every consumer gets (`RTL_DEFINES`), and walks the tokens the
parser saw, so comments, strings and disabled code cannot hide a construct and a macro cannot
build one: a `$fopen` assembled by a macro is found where the macro is used.

Rules (each violation names file, line and construct):

* **System tasks and functions**: only `ALLOWED_SYSTEM_NAMES` (math, conversion, query, time,
  console output, simulation control, assertion functions). Everything else is refused, in
  particular file I/O (`$fopen`, `$fwrite`, `$fdisplay`, `$fstrobe`, `$fmonitor`, `$fread`,
  `$fscanf`, `$fgets`, ...), `$readmem*`/`$writemem*`, `$system`, `$dumpfile`/`$dumpvars`,
  `$sdf_annotate`, `$value$plusargs`/`$test$plusargs` and any tool- or VPI-specific task.
* **DPI**: `import "DPI-C"` / `export "DPI-C"` are refused.
* **Includes**: a relative path with no `..`, no backslash, an HDL header/source suffix
  (`INCLUDE_SUFFIXES`), that resolves, from the including file's folder or an include folder
  (`include_dirs`), to a regular file under `surface_root` (and in the edit surface when
  `surface` is given). System includes (`<...>`), absolute paths, and anything missing,
  outside or a symlink are refused.
* **Synthesis pragmas**: `// synopsys translate_off`/`on` (and the `synthesis`, `pragma`, ...
  spellings) are refused: Yosys honours them, Icarus does not.
* **Tool macros**: a conditional (`ifdef`/`ifndef`/`elsif`) or a use of a macro that one of the
  consumers predefines (`TOOL_PREDEFINES`: Yosys's `SYNTHESIS`/`YOSYS`, Verilator's `VERILATOR`,
  Icarus's `__ICARUS__`, ...) is refused: such a test would let simulation, synthesis and LEC
  read different code.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field

from closer.tasks.paths import in_surface

# The defines closer itself passes to every reader of candidate RTL: the cocotb simulations
# (public, hidden), the flow (Verilator lint, slang elaboration, Yosys synthesis) and LEC's Yosys.
# Empty: no consumer defines anything of its own choosing (LEC reads with `-nosynthesis`).
RTL_DEFINES: dict[str, str] = {}

# Macros the consumers define without being asked (docs/security.md "RTL policy"). Verilator's are
# its `-E --dump-defines` output (checked by tests/test_rtl_policy.py); slang's are its
# predefines; Yosys `read_verilog` defines YOSYS (and SYNTHESIS unless -nosynthesis).
TOOL_PREDEFINES: dict[str, frozenset[str]] = {
    "icarus (cocotb simulation)": frozenset({"__ICARUS__", "__ICARUS_SYNTH__", "IVERILOG", "COCOTB_SIM"}),
    "verilator (flow lint)": frozenset({
        "VERILATOR", "verilator", "verilator3", "SYSTEMVERILOG", "coverage_block_off",
        "SV_COV_ASSERTION", "SV_COV_CHECK", "SV_COV_ERROR", "SV_COV_FSM_STATE", "SV_COV_HIER",
        "SV_COV_MODULE", "SV_COV_NOCOV", "SV_COV_OK", "SV_COV_OVERFLOW", "SV_COV_PARTIAL",
        "SV_COV_RESET", "SV_COV_START", "SV_COV_STATEMENT", "SV_COV_STOP", "SV_COV_TOGGLE"}),
    "slang (flow elaboration)": frozenset({"__slang__", "__slang_major__", "__slang_minor__"}),
    # LEC reads the RTL with `read_verilog -nosynthesis` (closer.tasks.lec), so SYNTHESIS is not
    # defined there either; it stays refused because it is Yosys's default and the usual trick
    # (the flow's Yosys reads slang's preprocessed output, with no directives left)
    "yosys read_verilog (LEC)": frozenset({"YOSYS", "SYNTHESIS"}),
    "gate-level simulation (PDK cell models)": frozenset({"FUNCTIONAL", "UNIT_DELAY"}),
}
TOOL_MACROS: frozenset[str] = frozenset().union(*TOOL_PREDEFINES.values())
STANDARD_MACROS = frozenset({"__FILE__", "__LINE__"})  # IEEE 1800 predefines, the same in every tool

ALLOWED_SYSTEM_NAMES: frozenset[str] = frozenset({
    # math and conversion
    "$clog2", "$signed", "$unsigned", "$bits", "$size", "$left", "$right", "$low", "$high",
    "$increment", "$dimensions", "$unpacked_dimensions", "$countones", "$countbits", "$onehot",
    "$onehot0", "$isunknown", "$rtoi", "$itor", "$realtobits", "$bitstoreal", "$shortrealtobits",
    "$bitstoshortreal", "$cast", "$typename", "$ln", "$log10", "$exp", "$sqrt", "$pow", "$floor",
    "$ceil", "$sin", "$cos", "$tan", "$asin", "$acos", "$atan", "$atan2", "$hypot", "$sinh", "$cosh",
    "$tanh", "$asinh", "$acosh", "$atanh", "$sformatf", "$sformat", "$psprintf",
    # random numbers (the simulator's own generator)
    "$random", "$urandom", "$urandom_range", "$dist_uniform", "$dist_normal",
    # time
    "$time", "$stime", "$realtime",
    # console output and simulation control
    "$display", "$displayb", "$displayh", "$displayo", "$write", "$writeb", "$writeh", "$writeo",
    "$strobe", "$strobeb", "$strobeh", "$strobeo", "$monitor", "$monitorb", "$monitorh", "$monitoro",
    "$monitoron", "$monitoroff", "$finish", "$stop", "$error", "$warning", "$info", "$fatal",
    # specify-block timing checks (no effect on a zero-delay simulation or on synthesis)
    "$setup", "$hold", "$setuphold", "$recovery", "$removal", "$recrem", "$skew", "$timeskew",
    "$fullskew", "$period", "$width", "$nochange",
    # assertions
    "$past", "$rose", "$fell", "$stable", "$changed", "$sampled", "$assertoff", "$asserton",
    "$assertkill", "$assertcontrol",
})

# Why the most common refusals are refused (anything else not allowed gets the generic reason).
_REFUSED_REASON = {
    **{name: "file I/O from the design" for name in (
        "$fopen", "$fclose", "$fwrite", "$fwriteb", "$fwriteh", "$fwriteo", "$fdisplay", "$fdisplayb",
        "$fdisplayh", "$fdisplayo", "$fstrobe", "$fstrobeb", "$fstrobeh", "$fstrobeo", "$fmonitor",
        "$fmonitorb", "$fmonitorh", "$fmonitoro", "$fread", "$fscanf", "$fgets", "$fgetc", "$ungetc",
        "$feof", "$ferror", "$fseek", "$ftell", "$rewind", "$fflush")},
    **{name: "reads or writes a memory file" for name in ("$readmemh", "$readmemb", "$writememh", "$writememb")},
    "$system": "runs a shell command",
    **{name: "writes a waveform file" for name in (
        "$dumpfile", "$dumpvars", "$dumpon", "$dumpoff", "$dumpall", "$dumpflush", "$dumplimit",
        "$dumpports", "$dumpportsoff", "$dumpportson", "$dumpportsall", "$dumpportsflush", "$dumpportslimit")},
    "$sdf_annotate": "reads a timing file",
    "$value$plusargs": "reads the simulator's command line",
    "$test$plusargs": "reads the simulator's command line",
}

INCLUDE_SUFFIXES = (".vh", ".svh", ".v", ".sv", ".h", ".inc")

# Comment pragmas that hide code from synthesis but not from simulation (Yosys honours
# `// synopsys translate_off`; Icarus ignores it). `full_case`/`parallel_case` (comments or
# attributes) also change what Yosys builds, but only for a case statement the simulator would
# run differently; they are allowed (the golden PicoRV32 uses them; see docs/security.md).
_PRAGMA_COMMENT = re.compile(
    r"^(?://|/\*)\s*(?:synopsys|synthesis|pragma|cadence|ambit|rtl_synthesis|xilinx|altera|exemplar|"
    r"leonardo|magma)?\s*:?\s*(translate_off|translate_on|synthesis_off|synthesis_on)\b", re.IGNORECASE)


class Violation(BaseModel):
    """One refused construct: `file:line: construct: reason`."""

    model_config = ConfigDict(extra="forbid")
    file: str
    line: int
    what: str = Field(description="the construct: a system task, `include, DPI, a macro test")
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what}: {self.reason}"


def include_dirs(sources: list[Path]) -> list[Path]:
    """The include folders of a file list: the folders of its files, in first-seen order. Every
    consumer (simulation, flow, LEC) gets these and nothing else."""
    out: list[Path] = []
    for source in sources:
        folder = source.parent
        if folder not in out:
            out.append(folder)
    return out


def check_rtl(files: list[Path], surface_root: Path, surface: dict | list[str] | None = None) -> list[Violation]:
    """Every violation of the RTL policy in `files` (compile order; absolute or relative to
    `surface_root`) and the files they include. `surface`: edit-surface patterns an included
    file must match (None: any regular file under `surface_root`)."""
    import pyslang
    from pyslang import parsing, syntax

    root = surface_root.resolve()
    paths = [(p if p.is_absolute() else root / p) for p in files]
    violations: list[Violation] = []
    readable = []
    for path in paths:
        if path.is_symlink() or not path.is_file():
            violations.append(Violation(file=_rel(path, root), line=0, what="file",
                                        reason="not a regular file (symlink, missing or special)"))
        else:
            readable.append(path)
    if not readable:
        return violations
    manager = pyslang.SourceManager()
    for folder in include_dirs(readable):
        manager.addUserDirectories(str(folder))
    options = parsing.PreprocessorOptions()
    options.predefines = [f"{k}={v}" if v != "" else k for k, v in RTL_DEFINES.items()]
    tree = syntax.SyntaxTree.fromFiles([str(p) for p in readable], manager, pyslang.Bag([options]))
    checker = _Checker(manager, root, surface, violations, include_dirs(readable))
    checker.walk(tree.root)
    checker.includes(tree.getIncludeDirectives())
    reported = {(v.file, v.line) for v in violations if v.what.startswith("`include")}
    for diag in tree.diagnostics:
        if diag.code == pyslang.Diags.CouldNotOpenIncludeFile:
            missing = checker.at(diag.location, "`include", "")
            if (missing.file, missing.line) in reported:
                continue
            violations.append(checker.at(diag.location, "`include", "the included file was not found in "
                                         "the including file's folder or the include folders"))
        elif diag.isError():
            # code slang cannot parse is not checked token by token (its parser skips it), and the
            # flow's elaboration would refuse it too
            code = str(diag.code).removeprefix("DiagCode(").removesuffix(")")
            violations.append(checker.at(diag.location, "syntax", f"slang (the flow's front end) cannot parse "
                                         f"this ({code}); the RTL must be valid SystemVerilog"))
    return sorted(violations, key=lambda v: (v.file, v.line, v.what))


class _Checker:
    def __init__(self, manager, root: Path, surface, violations: list[Violation], include_folders: list[Path]) -> None:
        self.manager, self.root, self.surface, self.violations = manager, root, surface, violations
        self.include_folders = include_folders

    def at(self, location, construct: str, reason: str) -> Violation:
        loc = self.manager.getFullyExpandedLoc(location)
        name = self.manager.getFileName(loc)
        return Violation(file=_rel(Path(name), self.root) if name else "?", line=self.manager.getLineNumber(loc),
                         what=construct, reason=reason)

    def walk(self, node) -> None:
        from pyslang import parsing, syntax

        stack = [node]
        while stack:
            current = stack.pop()
            for child in current:
                if child is None:
                    continue
                if isinstance(child, parsing.Token):
                    self.token(child)
                    continue
                if child.kind in (syntax.SyntaxKind.DPIImport, syntax.SyntaxKind.DPIExport):
                    self.violations.append(self.at(child.sourceRange.start, "DPI", "DPI imports and exports "
                                                   "call host code from the design"))
                stack.append(child)

    def token(self, token) -> None:
        from pyslang import parsing

        trivia_list = list(token.trivia)
        for index, trivia in enumerate(trivia_list):
            directive = trivia.syntax()
            if directive is not None:
                self.directive(directive)
            elif trivia.kind in (parsing.TriviaKind.LineComment, parsing.TriviaKind.BlockComment):
                if match := _PRAGMA_COMMENT.match(trivia.getRawText()):
                    found = self.at(token.location, f"// {match.group(1)}", (
                        "a synthesis pragma comment: Yosys honours it, the simulator does not, so "
                        "simulation and synthesis would read different code"))
                    # the comment's own line: the token's, less the line breaks from the comment on
                    below = "".join(t.getRawText() for t in trivia_list[index:])
                    found.line = max(1, found.line - below.count("\n"))
                    self.violations.append(found)
            elif trivia.kind == parsing.TriviaKind.SkippedTokens:
                for skipped in trivia.getSkippedTokens():
                    self.token(skipped)
        if token.kind == parsing.TokenKind.SystemIdentifier:
            name = token.valueText
            if name not in ALLOWED_SYSTEM_NAMES:
                reason = _REFUSED_REASON.get(name, "not an allowed system task or function (allowed: math, "
                                             "conversion, time, console output, simulation control, assertions)")
                self.violations.append(self.at(token.location, name, f"{reason}: not allowed in the design"))

    def directive(self, node) -> None:
        from pyslang import parsing, syntax

        kind = node.kind
        if kind in (syntax.SyntaxKind.IfDefDirective, syntax.SyntaxKind.IfNDefDirective,
                    syntax.SyntaxKind.ElsIfDirective):
            for name in _identifiers(node.expr):
                if name in TOOL_MACROS:
                    self.violations.append(self.at(node.sourceRange.start, f"`{node.directive.valueText[1:]} {name}",
                                                   _tool_macro_reason(name)))
        elif kind == syntax.SyntaxKind.MacroUsage:
            name = node.directive.valueText.lstrip("`")
            if name in TOOL_MACROS and name not in STANDARD_MACROS:
                self.violations.append(self.at(node.sourceRange.start, f"`{name}", _tool_macro_reason(name)))
        elif kind == syntax.SyntaxKind.DefineDirective or kind == syntax.SyntaxKind.UndefDirective:
            name = node.name.valueText
            if name in TOOL_MACROS:
                self.violations.append(self.at(node.sourceRange.start, f"{node.directive.valueText} {name}",
                                               _tool_macro_reason(name)))
        elif kind == syntax.SyntaxKind.IncludeDirective:
            text = node.fileName.valueText if isinstance(node.fileName, parsing.Token) else str(node.fileName)
            problem = _include_literal_problem(text.strip())
            if problem:
                self.violations.append(self.at(node.sourceRange.start, f"`include {text.strip()}", problem))

    def includes(self, metadata) -> None:
        for meta in metadata:
            target = meta.path
            construct = f"`include \"{target}\""
            if meta.isSystem or _include_literal_problem(f'"{target}"'):
                continue  # reported from the directive itself
            resolved = self._resolved(meta)
            if resolved is None:
                continue  # not found: reported from the diagnostic
            problem = self._target_problem(resolved)
            if problem:
                self.violations.append(self.at(meta.syntax.sourceRange.start, construct, problem))

    def _resolved(self, meta) -> Path | None:
        """Where the include points: the including file's folder first, then the include folders
        (slang's order), without following symlinks."""
        loc = self.manager.getFullyExpandedLoc(meta.syntax.sourceRange.start)
        including = Path(os.path.abspath(self.manager.getFileName(loc)))
        for folder in [including.parent, *self.include_folders]:
            candidate = Path(os.path.abspath(folder / meta.path))
            if os.path.lexists(candidate):
                return candidate
        return None

    def _target_problem(self, path: Path) -> str | None:
        if os.path.realpath(path) != str(path):
            return "the included file is (or is reached through) a symlink"
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            return f"the included file {path} is outside the workspace"
        if not path.is_file():
            return "the included file is not a regular file"
        if self.surface is not None and not in_surface(rel.as_posix(), self.surface):
            return f"the included file {rel.as_posix()} is not in the edit surface"
        return None


def _identifiers(node) -> list[str]:
    from pyslang import parsing

    out, stack = [], [node]
    while stack:
        current = stack.pop()
        if isinstance(current, parsing.Token):
            if current.kind == parsing.TokenKind.Identifier:
                out.append(current.valueText)
            continue
        stack.extend(child for child in current if child is not None)
    return out


def _tool_macro_reason(name: str) -> str:
    who = ", ".join(tool for tool, names in TOOL_PREDEFINES.items() if name in names)
    return (f"{name} is predefined by {who}, not by the others: simulation, synthesis and LEC would "
            "read different code")


def _include_literal_problem(text: str) -> str | None:
    if text.startswith("<"):
        return "system includes are not allowed (only the workspace's own files)"
    if not (text.startswith('"') and text.endswith('"') and len(text) >= 2):
        return "the include path must be a string literal"
    path = text[1:-1]
    if "\\" in path or path.startswith("/") or PurePosixPath(path).is_absolute():
        return "absolute include paths are not allowed (only the workspace's own files)"
    if ".." in PurePosixPath(path).parts:
        return "`..` in an include path is not allowed (only the workspace's own files)"
    if not path.endswith(INCLUDE_SUFFIXES):
        return f"an included file must end in one of {', '.join(INCLUDE_SUFFIXES)}"
    return None


def _rel(path: Path, root: Path) -> str:
    try:
        return Path(os.path.abspath(path)).relative_to(root).as_posix()
    except ValueError:
        return str(path)


def check_tree(tree: Path, rtl: list[str], surface: dict | list[str]) -> list[Violation]:
    """The evaluator's call: the task's compiled RTL files in the pristine tree."""
    return check_rtl([tree / rel for rel in rtl], tree, surface)


def violations_text(violations: list[Violation], limit: int = 5) -> str:
    text = "; ".join(str(v) for v in violations[:limit])
    return text + (f"; and {len(violations) - limit} more" if len(violations) > limit else "")
