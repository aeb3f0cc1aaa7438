"""The elaborate node without SiliconCompiler: pyslang elaborates the design's sources from its top
and prints the reachable definitions to one file, as SiliconCompiler's slang `Elaborate` task does
with `include_source_paths` off (same command line, ignored diagnostics, pruning, rewritten top
parameter defaults and printer settings), so the file is byte-identical to that node's output.

pyslang is imported when `elaborate` runs, not with this module.
"""

from __future__ import annotations

import shlex
from pathlib import Path

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (~3 ms)
if TYPE_CHECKING:
    from typing import TextIO

    from closer.flow.direct.sources import DesignSources

# SiliconCompiler passes its node's thread count; the output does not depend on it (1, 2, 8 and 0
# give the same bytes, in the same time: a single-unit parse is one job)
THREADS = 1

# Off in SiliconCompiler's Elaborate task (names in pyslang.Diags)
IGNORED_DIAGNOSTICS = (
    "MissingTimeScale", "UsedBeforeDeclared", "UnusedParameter", "UnusedDefinition",
    "UnusedVariable", "UnusedPort", "UnusedButSetNet", "UnusedImplicitNet", "UnusedButSetVariable",
    "UnusedButSetPort", "UnusedTypedef", "UnusedGenvar", "UnusedAssertionDecl",
)

# Template a top parameter's new default is parsed from; only the `= value` clause is used, so its
# spacing (one blank either side of `=`) is what the printed default gets.
_DEFAULT_TEMPLATE = "module __closer_p #(parameter __closer_v = {})();endmodule"


def slang_arguments(sources: DesignSources, threads: int = THREADS) -> list[str]:
    """The slang command line of the node (SiliconCompiler's SlangTask + Elaborate options)."""
    from closer.flow.direct.sources import SYSTEMVERILOG_SUFFIXES

    args = ["--single-unit", "--threads", str(threads)]
    include_dirs = _distinct(str(d) for d in sources.include_dirs)
    if include_dirs:
        args += ["--include-directory", ",".join(include_dirs)]
    # SiliconCompiler lists the SystemVerilog files before the Verilog ones
    files = [str(p) for p in sources.rtl if p.suffix in SYSTEMVERILOG_SUFFIXES]
    files += [str(p) for p in sources.rtl if p.suffix not in SYSTEMVERILOG_SUFFIXES]
    args += _distinct(files)
    args += ["--top", sources.top]
    for name, value in sources.params:
        args += ["-G", f"{name}={value}"]
    args += ["--allow-use-before-declare", "--ignore-unknown-modules", "-Weverything"]
    return [a.strip() for a in args]


def elaborate(sources: DesignSources, output: Path, log: TextIO) -> bool:
    """Elaborate `sources` from their top with pyslang and write the kept definitions to `output`
    (byte-identical to SiliconCompiler's Elaborate node's `outputs/<top>.v|sv`). The runtime
    arguments and the warning and error diagnostics go to `log`. False (with an `Error:` line in
    `log`) when SiliconCompiler's node would fail: the command line is refused, a source cannot be
    read or parsed, slang reports errors, or an overridden top parameter's value cannot be
    written back as a default."""
    import pyslang

    missing = [p for p in sources.rtl if not Path(p).is_file()]
    if missing:
        # slang would print this to the process's stderr, not to `log`
        log.write(f"Error: source file not found: {', '.join(str(p) for p in missing)}\n")
        return False

    command = shlex.join(slang_arguments(sources))
    log.write(f"runtime arguments: {command}\n")
    driver = pyslang.driver.Driver()
    driver.addStandardArgs()
    options = pyslang.driver.CommandLineOptions()
    options.ignoreProgramName = True
    if not driver.parseCommandLine(command, options):
        log.write("Error: slang refused the command line\n")
        return False
    if not driver.processOptions():
        log.write("Error: slang refused the options\n")
        return False
    for name in IGNORED_DIAGNOSTICS:
        driver.diagEngine.setSeverity(getattr(pyslang.Diags, name),
                                      pyslang.DiagnosticSeverity.Ignored)

    parsed = driver.parseAllSources()
    compilation = driver.createCompilation()
    errors = _report_diagnostics(pyslang, driver, compilation, log)

    dropped = _unreachable_definitions(pyslang, compilation)
    overrides, keepalive, unrenderable = _top_default_overrides(
        pyslang, compilation, {name for name, _ in sources.params})
    for name in unrenderable:
        log.write(f"Error: cannot rewrite the default of top parameter '{name}': its elaborated "
                  f"value could not be rendered as valid SystemVerilog\n")
    if unrenderable:
        return False

    def rewrite_default(node, rewriter):
        replacement = overrides.get(node)
        if replacement is not None and node.initializer is not None:
            rewriter.replace(node.initializer, replacement)

    with open(output, "w", encoding="utf-8") as out:
        for tree in compilation.getSyntaxTrees():
            members = list(tree.root.members)
            printed = members
            if overrides:
                # the rewritten tree is member-for-member the original with new defaults; its
                # nodes read from it while printing, so it is kept alive
                rewritten = pyslang.syntax.rewrite(tree, rewrite_default)
                keepalive.append(rewritten)
                printed = list(rewritten.root.members)
            for original, member in zip(members, printed):
                if original not in dropped:
                    out.write(_printer(pyslang, compilation.sourceManager).print(member).str()
                              + "\n")

    if not parsed:
        log.write("Error: slang could not load or parse the sources\n")
        return False
    if errors:
        log.write(f"Error: slang reported {errors} error(s) elaborating {sources.top}\n")
        return False
    return True


def _distinct(values) -> list[str]:
    return list(dict.fromkeys(values))


def _printer(pyslang, source_manager):
    printer = pyslang.syntax.SyntaxPrinter(source_manager)
    printer.setIncludeMissing(False)
    printer.setIncludeSkipped(False)
    printer.setIncludeDirectives(False)
    printer.setExpandMacros(True)
    printer.setExpandIncludes(True)
    printer.setIncludeTrivia(True)
    printer.setIncludeComments(True)
    printer.setSquashNewlines(True)
    return printer


def _report_diagnostics(pyslang, driver, compilation, log: TextIO) -> int:
    """Write the warnings, then the errors, to `log` as SiliconCompiler logs them (absolute
    paths, blank lines dropped); return the number of errors slang counts."""
    engine = driver.diagEngine
    diagnostics = list(compilation.getAllDiagnostics())
    lines: dict[str, list[str]] = {"warning": [], "error": []}
    levels = {pyslang.DiagnosticSeverity.Warning: "warning",
              pyslang.DiagnosticSeverity.Error: "error",
              pyslang.DiagnosticSeverity.Fatal: "error"}
    for diagnostic in diagnostics:
        level = levels.get(engine.getSeverity(diagnostic.code, diagnostic.location))
        if level is None:
            continue
        # a fresh engine per diagnostic, as SiliconCompiler formats them
        client = pyslang.TextDiagnosticClient()
        client.showAbsPaths(True)
        formatter = pyslang.DiagnosticEngine(driver.sourceManager)
        formatter.addClient(client)
        formatter.issue(diagnostic)
        lines[level] += [line for line in client.getString().splitlines() if line.strip()]
    for line in lines["warning"] + lines["error"]:
        log.write(line + "\n")

    engine.clearCounts()
    for diagnostic in diagnostics:
        engine.issue(diagnostic)
    log.write(f"Number of errors: {engine.numErrors}\nNumber of warnings: {engine.numWarnings}\n")
    return engine.numErrors


def _syntax(symbol):
    if hasattr(symbol, "getSyntax"):
        return symbol.getSyntax()
    return getattr(symbol, "syntax", None)


def _unreachable_definitions(pyslang, compilation) -> set:
    """The syntax of the definitions (modules, interfaces, programs) no instance under the top
    instances uses. Packages and $unit declarations are no definitions, so always kept."""
    definitions = {s for s in (_syntax(d) for d in compilation.getDefinitions()) if s is not None}
    used = set()

    def instance(symbol):
        syntax = _syntax(symbol.definition)
        if syntax is not None:
            used.add(syntax)

    # per top instance, not from the root: slang also elaborates the other uninstantiated
    # top-level modules, which must stay dropped; the kind table keeps the walk in C++ but for
    # instances
    for top in compilation.getRoot().topInstances:
        top.visit(lookup_table={pyslang.ast.SymbolKind.Instance: instance})
    return definitions - used


def _top_default_overrides(pyslang, compilation, names: set[str]):
    """For the top parameters overridden with -G (`names`): declarator -> the `= value` clause of
    the elaborated value, the parsed trees those clauses live in (kept alive while printing), and
    the names whose value cannot be written as SystemVerilog."""
    overrides: dict = {}
    keepalive: list = []
    unrenderable: list[str] = []
    if not names:
        return overrides, keepalive, unrenderable
    for top in compilation.getRoot().topInstances:
        definition = getattr(top, "definition", None)
        syntax = _syntax(definition) if definition is not None else None
        ports = getattr(getattr(syntax, "header", None), "parameters", None)
        if ports is None:
            continue
        symbols = {p.name: p for p in top.body.parameters if not getattr(p, "isLocalParam", False)}
        for declaration in ports.declarations:
            if declaration.kind != pyslang.syntax.SyntaxKind.ParameterDeclaration:
                continue
            type_text = pyslang.syntax.SyntaxPrinter().print(declaration.type).str().strip()
            for declarator in declaration.declarators:
                name = declarator.name.value
                if name not in names or name not in symbols or declarator.initializer is None:
                    continue
                literal = _literal(pyslang, symbols[name], type_text)
                clause = _equals_value(pyslang, literal) if literal is not None else None
                if clause is None:
                    unrenderable.append(name)
                    continue
                overrides[declarator] = clause[1]
                keepalive.append(clause[0])
    return overrides, keepalive, unrenderable


def _literal(pyslang, parameter, type_text: str) -> str | None:
    """The parameter's elaborated value as SystemVerilog: strings and reals as slang prints them,
    integers in full-width hex (str() elides wide ones with `...`), enums cast to their type."""
    kind = parameter.type
    value = parameter.value
    if kind.isString:
        return str(value)
    integer = getattr(value, "value", None)
    if isinstance(integer, pyslang.SVInt):
        literal = integer.toString(pyslang.LiteralBase.Hex, True)
        return f"{type_text}'({literal})" if kind.isEnum else literal
    if getattr(kind, "isFloating", False):
        return str(value)
    return None


def _equals_value(pyslang, literal: str):
    """(tree, `= literal` clause) parsed from a one-parameter module, or None unless it parses
    cleanly."""
    tree = pyslang.syntax.SyntaxTree.fromText(_DEFAULT_TEMPLATE.format(literal))
    if list(tree.diagnostics):
        return None
    ports = getattr(getattr(tree.root, "header", None), "parameters", None)
    if ports is None:
        return None
    for declaration in ports.declarations:
        if declaration.kind == pyslang.syntax.SyntaxKind.ParameterDeclaration:
            return tree, declaration.declarators[0].initializer
    return None
