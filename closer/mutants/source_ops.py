"""Source-level mutation operators for bug classes Yosys `mutate` does not model.

Each operator is one text edit of one expression, found with pyslang's syntax tree so the edit is
exact: off-by-one constants, swapped operands, wrong comparisons, wrong arithmetic/logic operators
and dropped conditions. Only behavioural code is mutated (always blocks and continuous assigns),
never declarations, ranges or parameters.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pyslang import syntax as S

from closer.mutants.models import Location, Operator

BEHAVIOUR_KINDS = {"AlwaysBlock", "AlwaysCombBlock", "AlwaysFFBlock", "AlwaysLatchBlock",
                   "ContinuousAssign", "NetDeclaration"}  # `wire w = expr;` is behaviour too
# ranges, delays and event controls hold constants that are not behaviour
EXCLUDED_KINDS = {"SimpleRangeSelect", "AscendingRangeSelect", "DescendingRangeSelect",
                  "DelayControl", "EventControlWithExpression", "EventControl",
                  "DataDeclaration", "ParameterDeclaration", "LocalVariableDeclaration"}

COMPARISON_FLIP = {"LessThanExpression": "<=", "LessThanEqualExpression": "<",
                   "GreaterThanExpression": ">=", "GreaterThanEqualExpression": ">",
                   "EqualityExpression": "!=", "InequalityExpression": "=="}
OPERATOR_FLIP = {"AddExpression": "-", "SubtractExpression": "+",
                 "LogicalAndExpression": "||", "LogicalOrExpression": "&&",
                 "BinaryAndExpression": "|", "BinaryOrExpression": "&"}
NON_COMMUTATIVE = {"SubtractExpression", "LessThanExpression", "LessThanEqualExpression",
                   "GreaterThanExpression", "GreaterThanEqualExpression",
                   "LogicalShiftLeftExpression", "LogicalShiftRightExpression",
                   "ArithmeticShiftLeftExpression", "ArithmeticShiftRightExpression"}


@dataclass(frozen=True)
class SourceEdit:
    file: str  # relative to the design folder
    start: int  # character offsets into the file's text
    end: int
    replacement: str
    operator: Operator
    description: str

    @property
    def id(self) -> str:
        key = f"source|{self.file}|{self.start}|{self.end}|{self.operator}|{self.replacement}"
        return "s" + hashlib.sha256(key.encode()).hexdigest()[:11]

    def location(self, text: str) -> Location:
        line, col = _line_col(text, self.start)
        end_line, end_col = _line_col(text, self.end)
        return Location(file=self.file, line=line, column=col, end_line=end_line, end_column=end_col)

    def apply(self, text: str) -> str:
        return text[: self.start] + self.replacement + text[self.end :]


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def enumerate_edits(root: Path, rel_file: str) -> list[SourceEdit]:
    """Every source-level mutation of one file, in file order."""
    text = (root / rel_file).read_text()
    tree = S.SyntaxTree.fromText(text, rel_file)
    finder = _EditFinder(rel_file, text)
    tree.root.visit(finder.visit)
    return sorted(finder.edits, key=lambda e: (e.start, e.end, e.operator.value, e.replacement))


class _EditFinder:
    def __init__(self, rel_file: str, text: str) -> None:
        self.file = rel_file
        self.text = text
        self.edits: list[SourceEdit] = []

    def span(self, node) -> tuple[int, int] | None:
        """The node's offsets when they point at its own text in this file (not a macro body)."""
        rng = node.sourceRange
        start, end = rng.start.offset, rng.end.offset
        if 0 <= start < end <= len(self.text) and self.text[start:end] == str(node).strip():
            return start, end
        return None

    def add(self, start: int, end: int, replacement: str, operator: Operator) -> None:
        original = self.text[start:end]
        if replacement == original:
            return
        short = lambda s: " ".join(s.split())[:60]  # noqa: E731
        self.edits.append(SourceEdit(self.file, start, end, replacement, operator,
                                     f"{operator.value}: '{short(original)}' -> '{short(replacement)}'"))

    def visit(self, node):
        if not isinstance(node, S.SyntaxNode):
            return None
        kind = node.kind.name
        if not kind.endswith(("Expression", "Statement")) or not _in_behaviour(node):
            return None
        span = self.span(node)
        if span is None:
            return None
        start, end = span
        if kind == "IntegerLiteralExpression":
            self.literal_edits(start, end, None, "", node.literal.valueText)
        elif kind == "IntegerVectorExpression":
            size = node.size.valueText if node.size is not None else ""
            self.literal_edits(start, end, node.base.valueText, size, node.value.valueText)
        elif kind == "ConditionalStatement":
            pred = self.span(node.predicate)
            if pred:
                self.add(*pred, "1'b1", Operator.DROP_CONDITION)
        elif kind == "ConditionalExpression":
            self.swap(node.left, node.right, Operator.SWAP_OPERANDS)
        elif hasattr(node, "operatorToken") and hasattr(node, "left") and hasattr(node, "right"):
            self.binary_edits(node, kind, start, end)
        return None

    def literal_edits(self, start: int, end: int, base: str | None, size: str, digits: str) -> None:
        clean = digits.replace("_", "")
        radix = {"b": 2, "o": 8, "d": 10, "h": 16}.get((base or "'d")[-1].lower())
        if radix is None or any(c in clean.lower() for c in "xz?"):
            return
        try:
            value = int(clean, radix)
        except ValueError:
            return
        width = int(size) if size.isdigit() else None
        for new in (value + 1, value - 1):
            if new < 0 or (width is not None and new >= 1 << width):
                continue
            text = str(new) if base is None else f"{size}{base[:-1]}d{new}"
            self.add(start, end, text, Operator.OFF_BY_ONE)

    def binary_edits(self, node, kind: str, start: int, end: int) -> None:
        op_rng = node.operatorToken.range
        op_start, op_end = op_rng.start.offset, op_rng.end.offset
        if kind in COMPARISON_FLIP:
            self.add(op_start, op_end, COMPARISON_FLIP[kind], Operator.WRONG_COMPARISON)
        if kind in OPERATOR_FLIP:
            self.add(op_start, op_end, OPERATOR_FLIP[kind], Operator.WRONG_OPERATOR)
        if kind in NON_COMMUTATIVE:
            self.swap(node.left, node.right, Operator.SWAP_OPERANDS)
        if kind == "LogicalAndExpression":
            for kept in (node.left, node.right):
                kept_span = self.span(kept)
                if kept_span:
                    self.add(start, end, f"({self.text[kept_span[0]:kept_span[1]]})",
                             Operator.DROP_CONDITION)

    def swap(self, left, right, operator: Operator) -> None:
        ls, rs = self.span(left), self.span(right)
        if not ls or not rs:
            return
        left_text, right_text = self.text[ls[0]:ls[1]], self.text[rs[0]:rs[1]]
        if left_text == right_text:
            return
        middle = self.text[ls[1]:rs[0]]
        self.add(ls[0], rs[1], f"({right_text}){middle}({left_text})", operator)


# Only whole modules: an elaborated generate branch may hold nothing but constant assigns, which
# leave no `src` span in Yosys, so "no span inside" would wrongly call it dead.
REGION_KINDS = {"ModuleDeclaration"}


def regions(root: Path, rel_file: str) -> list[tuple[int, int]]:
    """Line spans of every module declaration in the file."""
    text = (root / rel_file).read_text()
    tree = S.SyntaxTree.fromText(text, rel_file)
    spans: list[tuple[int, int]] = []

    def visit(node):
        if isinstance(node, S.SyntaxNode) and node.kind.name in REGION_KINDS:
            rng = node.sourceRange
            if 0 <= rng.start.offset < rng.end.offset <= len(text):
                spans.append((_line_col(text, rng.start.offset)[0], _line_col(text, rng.end.offset)[0]))
        return None

    tree.root.visit(visit)
    return spans


def is_dead(line: int, spans: list[tuple[int, int]], live_lines: set[int]) -> bool:
    """True when the module holding `line` has no elaborated line at all: it is not instantiated
    in this configuration (e.g. its instance sits in a generate branch not taken)."""
    holding = [(a, b) for a, b in spans if a <= line <= b]
    if not holding:
        return False
    first, last = min(holding, key=lambda span: span[1] - span[0])
    return not any(first <= l <= last for l in live_lines)


def _in_behaviour(node) -> bool:
    parent = node.parent
    while parent is not None:
        kind = parent.kind.name
        if kind in EXCLUDED_KINDS:
            return False
        if kind in BEHAVIOUR_KINDS:
            return True
        parent = parent.parent
    return False
