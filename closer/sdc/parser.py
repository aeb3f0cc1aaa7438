"""Parse an SDC file of the allowed subset (closer.sdc.commands) and emit its canonical text.

The canonical text is what OpenSTA reads: one command per line, literal numbers, names and
braced lists, object queries from the allowed list; no comment, variable or substitution. It is
rebuilt from the parsed values, never copied from the input, so a file that parses cannot hand
OpenSTA anything but these commands.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path

from closer.errors import InputError
from closer.sdc.commands import (
    CASE_VALUES, CLOCK_QUERIES, COMMANDS, QUERIES, QUERY_EMIT_AS, Kind, Spec,
)
from closer.sdc.lexer import LexError, RawCommand, Token, TokenKind, lex
from closer.sdc.policy import SdcException, SdcPolicy

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
# a port, pin, cell, clock or library name, or a get_* pattern; [] only for bus bits
_NAME = re.compile(r"[A-Za-z0-9_*?][A-Za-z0-9_.*?/:\[\]]*")
_KEYWORD = re.compile(r"-[A-Za-z_]\w*")


class SdcError(InputError):
    """An SDC outside the allowed subset; the message names the file, line and command."""


@dataclass(frozen=True)
class Number:
    value: float
    integer: bool = False

    def emit(self) -> str:
        return str(int(self.value)) if self.integer else repr(self.value)


@dataclass(frozen=True)
class Names:
    names: tuple[str, ...]

    def emit(self) -> str:
        if len(self.names) == 1 and "[" not in self.names[0]:
            return self.names[0]
        return "{" + " ".join(self.names) + "}"


@dataclass(frozen=True)
class Query:
    name: str
    flags: tuple[str, ...]
    options: tuple[tuple[str, "Value"], ...]
    positional: tuple["Value", ...]

    def emit(self) -> str:
        return "[" + _emit_words(QUERY_EMIT_AS.get(self.name, self.name), self.flags, self.options,
                                 self.positional) + "]"


Value = Number | Names | Query


@dataclass(frozen=True)
class SdcCommand:
    line: int
    name: str
    flags: tuple[str, ...]
    options: tuple[tuple[str, Value], ...]
    positional: tuple[Value, ...]

    def emit(self) -> str:
        return _emit_words(self.name, self.flags, self.options, self.positional)


@dataclass(frozen=True)
class Sdc:
    source: str                         # the file's name as given, for messages
    sha256: str                         # of the source bytes
    commands: tuple[SdcCommand, ...]

    @property
    def exceptions(self) -> list[SdcCommand]:
        """The commands that are timing exceptions (allowed by the policy, or they would not parse)."""
        return [c for c in self.commands if COMMANDS[c.name].exception is not None]

    def canonical_text(self) -> str:
        header = (f"# canonical SDC (closer.sdc) of a source with SHA-256 {self.sha256}; "
                  f"{len(self.commands)} commands\n")
        return header + "".join(c.emit() + "\n" for c in self.commands)


def _emit_words(name: str, flags, options, positional) -> str:
    words = [name, *flags]
    for option, value in options:
        words += [option, value.emit()]
    words += [v.emit() for v in positional]
    return " ".join(words)


def parse_sdc_text(text: str, source: str, policy: SdcPolicy = SdcPolicy()) -> Sdc:
    """Parse SDC text; raises SdcError "<source>:<line>: <command>: <reason>"."""
    try:
        raw = lex(text)
    except LexError as exc:
        where = f"{exc.command}: " if exc.command else ""
        raise SdcError(f"{source}:{exc.line}: {where}{exc}") from None
    commands = [_Reader(source, policy, r).command() for r in raw]
    _check_clocks(commands, source, policy)
    return Sdc(source, hashlib.sha256(text.encode()).hexdigest(), tuple(commands))


def parse_sdc(path: Path, policy: SdcPolicy = SdcPolicy()) -> Sdc:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SdcError(f"{path}: cannot read the SDC: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SdcError(f"{path}: the SDC is not UTF-8 text") from None
    if "\0" in text:
        raise SdcError(f"{path}: the SDC contains a NUL byte")
    return parse_sdc_text(text, str(path), policy)


def write_canonical(source: Path, dest: Path, policy: SdcPolicy = SdcPolicy()) -> Sdc:
    """Parse `source` and write its canonical text to `dest` (the only SDC OpenSTA is given)."""
    sdc = parse_sdc(source, policy)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(sdc.canonical_text())
    return sdc


def _check_clocks(commands: list[SdcCommand], source: str, policy: SdcPolicy) -> None:
    clocks = [c for c in commands if c.name == "create_clock"]
    if len(clocks) > 1 and not policy.allows(SdcException.EXTRA_CLOCKS):
        raise SdcError(f"{source}:{clocks[1].line}: create_clock: a second clock is not allowed "
                       f"(the task times one clock; first at line {clocks[0].line}; "
                       f"exception '{SdcException.EXTRA_CLOCKS}')")


@dataclass
class _Reader:
    source: str
    policy: SdcPolicy
    raw: RawCommand

    def fail(self, what: str, message: str) -> SdcError:
        return SdcError(f"{self.source}:{self.raw.line}: {what}: {message}")

    def command(self) -> SdcCommand:
        head = self.raw.words[0]
        if head.kind is not TokenKind.BARE:
            raise self.fail(head.text or "?", "a command must start with its name")
        spec = COMMANDS.get(head.text)
        if spec is None:
            raise self.fail(head.text, _unknown_command(head.text))
        if spec.exception is not None and not self.policy.allows(spec.exception):
            raise self.fail(head.text, f"timing exception '{spec.exception}' is not allowed by "
                                       "this task (it would relax or remove timing checks)")
        flags, options, positional = self.arguments(spec, self.raw.words[1:], head.text)
        return SdcCommand(self.raw.line, head.text, flags, options, positional)

    def arguments(self, spec: Spec, words: tuple[Token, ...], where: str):
        flags: list[str] = []
        options: list[tuple[str, Value]] = []
        rest: list[Token] = []
        index = 0
        while index < len(words):
            word = words[index]
            index += 1
            if word.kind is TokenKind.BARE and _KEYWORD.fullmatch(word.text):
                key = word.text
                if key in spec.flags:
                    self.flag(spec, key, flags, where)
                elif key in spec.options:
                    if index == len(words):
                        raise self.fail(where, f"option {key} needs a value")
                    if key in dict(options) and key not in spec.repeatable:
                        raise self.fail(where, f"option {key} is given twice")
                    options.append((key, self.value(spec.options[key], words[index], f"{where} {key}")))
                    index += 1
                else:
                    raise self.fail(where, f"unknown option {key}; allowed: "
                                           f"{', '.join(sorted(spec.flags | set(spec.options))) or 'none'}")
            else:
                rest.append(word)
        missing = sorted(spec.required - {key for key, _ in options})
        if missing:
            raise self.fail(where, f"option {', '.join(missing)} is required")
        kinds = spec.positional + spec.optional
        if not len(spec.positional) <= len(rest) <= len(kinds):
            want = (f"{len(spec.positional)}" if not spec.optional
                    else f"{len(spec.positional)} to {len(kinds)}")
            raise self.fail(where, f"takes {want} positional argument(s) "
                                   f"({', '.join(k.value for k in kinds) or 'none'}), got {len(rest)}")
        positional = tuple(self.value(kind, word, where) for kind, word in zip(kinds, rest))
        order = list(spec.options)  # a stable sort keeps repeated -through options in sequence
        return (tuple(sorted(flags)), tuple(sorted(options, key=lambda o: order.index(o[0]))),
                positional)

    def flag(self, spec: Spec, key: str, flags: list[str], where: str) -> None:
        if key in flags:
            raise self.fail(where, f"flag {key} is given twice")
        exception = spec.flag_exceptions.get(key)
        if exception is not None and not self.policy.allows(exception):
            raise self.fail(where, f"{key} is timing exception '{exception}', not allowed by this task")
        flags.append(key)

    def value(self, kind: Kind, word: Token, where: str) -> Value:
        if word.kind is TokenKind.QUERY and word.text not in QUERIES:
            raise self.fail(f"[{word.text}]", f"not an allowed object query (allowed: "
                                              f"{', '.join(QUERIES)})")
        if kind in (Kind.OBJECTS, Kind.CLOCK):
            if word.kind is TokenKind.QUERY:
                query = self.query(word)
                if kind is Kind.CLOCK and query.name not in CLOCK_QUERIES:
                    raise self.fail(where, f"expects a clock, not [{word.text} ...]")
                return query
            return Names(self.names(word, where))
        if word.kind is TokenKind.QUERY:
            raise self.fail(where, f"expects a {kind.value}, not an object query [{word.text} ...]")
        if kind is Kind.NAME:
            names = self.names(word, where)
            if len(names) != 1:
                raise self.fail(where, f"expects one name, got {len(names)}")
            return Names(names)
        if kind is Kind.CASE:
            if word.text not in CASE_VALUES:
                raise self.fail(where, f"value {word.text!r}: expected one of {', '.join(CASE_VALUES)}")
            return Names((word.text,))
        return self.number(kind, word, where)

    def number(self, kind: Kind, word: Token, where: str) -> Number:
        text = word.text.strip()
        if not _NUMBER.fullmatch(text):
            raise self.fail(where, f"{word.text!r} is not a literal number (no expressions or variables)")
        value = float(text)
        if not math.isfinite(value):
            raise self.fail(where, f"{word.text!r} is not a finite number")
        if kind is Kind.POSITIVE and value <= 0:
            raise self.fail(where, f"{word.text} must be > 0")
        if kind is Kind.MULTIPLIER:
            if value < 1 or value != int(value):
                raise self.fail(where, f"{word.text} must be an integer >= 1")
            return Number(value, integer=True)
        if kind is Kind.NONNEG and value < 0 and not self.policy.allows(SdcException.NEGATIVE_VALUES):
            raise self.fail(where, f"negative value {word.text} is not allowed by this task "
                                   f"(exception '{SdcException.NEGATIVE_VALUES}')")
        return Number(value)

    def names(self, word: Token, where: str) -> tuple[str, ...]:
        items = word.text.split() if word.kind is not TokenKind.BARE else [word.text]
        if not items:
            raise self.fail(where, "an empty name list")
        for item in items:
            if not _NAME.fullmatch(item):
                raise self.fail(where, f"{item!r} is not a literal name or pattern")
            if "[" in item and word.kind is TokenKind.BARE:
                raise self.fail(where, f"brace the bus bit: {{{item}}}")
        return tuple(items)

    def query(self, word: Token) -> Query:
        spec = QUERIES.get(word.text)
        if spec is None:
            raise self.fail(f"[{word.text}]", f"not an allowed object query (allowed: "
                                              f"{', '.join(QUERIES)})")
        flags, options, positional = self.arguments(spec, word.words, f"[{word.text}]")
        return Query(word.text, flags, options, positional)


def _unknown_command(name: str) -> str:
    tcl = {"exec", "source", "proc", "puts", "set", "expr", "eval", "uplevel", "open", "file",
           "foreach", "if", "while", "for", "catch", "rename", "namespace", "interp", "load",
           "package", "exit", "cd", "glob", "info", "subst", "after", "socket", "upvar", "global",
           "variable", "array", "dict", "list", "lappend", "incr", "append", "return", "read_sdc",
           "read_liberty", "read_verilog", "report_checks", "sta::redirect_file_begin"}
    why = "a Tcl command (the SDC is read as data, not run)" if name in tcl or "::" in name \
        else "not in the SDC subset Closer reads"
    return f"{why}; allowed commands: {', '.join(_allowed_list())}"


def _allowed_list() -> list[str]:
    return list(COMMANDS)
