"""SDC text as data: commands of words, with no Tcl substitution of any kind.

A command is one line (a trailing backslash continues it); a word is bare (`-period`, `10.0`,
`clk`), braced (`{a b}`, literal as in Tcl), double-quoted without `$`, `[`, `]` or `\\`, or a
bracketed object query (`[get_ports clk]`), which is itself a command of words. Everything that
would make Tcl compute something (`$var`, `[expr ...]` as data, `;`, `{*}`, backslash escapes) is
a lexical error here; which commands and queries may appear is the parser's business.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

_BARE = re.compile(r"[A-Za-z0-9_.*?:/+\-=<>!@%,]+")
_SPACE = " \t"


class TokenKind(StrEnum):
    BARE = "bare"
    BRACED = "braced"
    QUOTED = "quoted"
    QUERY = "query"


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str                                             # the word (a query: its command name)
    words: tuple["Token", ...] = field(default=())        # a query's words after its name


@dataclass(frozen=True)
class RawCommand:
    line: int                    # 1-based line the command starts on
    words: tuple[Token, ...]


class LexError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.command = ""   # the first word of the line, when known


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) per command line, backslash-newline continuations joined."""
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending.append(line[:-1])
            continue
        pending.append(line)
        out.append((start, " ".join(pending)))
        pending = []
    if pending:
        out.append((start, " ".join(pending)))
    return out


def lex(text: str) -> list[RawCommand]:
    """The commands of an SDC text (comments and blank lines dropped). Raises LexError."""
    commands = []
    for number, line in logical_lines(text):
        stripped = line.strip(_SPACE + "\r\f\v")
        if not stripped or stripped.startswith("#"):
            continue
        try:
            words, end = _Scanner(stripped, number).words(0, in_query=False)
        except LexError as exc:
            exc.command = stripped.split()[0]
            raise
        assert end == len(stripped)
        commands.append(RawCommand(number, tuple(words)))
    return commands


@dataclass
class _Scanner:
    text: str
    line: int

    def fail(self, message: str) -> LexError:
        return LexError(self.line, message)

    def words(self, pos: int, in_query: bool) -> tuple[list[Token], int]:
        """Words from `pos` to the end of the line, or to the `]` closing a query."""
        words: list[Token] = []
        while True:
            while pos < len(self.text) and self.text[pos] in _SPACE:
                pos += 1
            if pos == len(self.text):
                if in_query:
                    raise self.fail("unclosed '[': an object query must end with ']'")
                return words, pos
            if self.text[pos] == "]":
                if not in_query:
                    raise self.fail("']' without an opening '['")
                return words, pos + 1
            token, pos = self.word(pos)
            words.append(token)
            if pos < len(self.text) and self.text[pos] not in _SPACE + "]":
                if token.kind is TokenKind.BRACED and token.text == "*":
                    raise self.fail("argument expansion {*} is not allowed")
                raise self.fail(self.forbidden(self.text[pos]) if self.text[pos] in ";$\\"
                                else f"a word must be followed by a space, not {self.text[pos]!r} "
                                     f"(after {token.text!r})")

    def word(self, pos: int) -> tuple[Token, int]:
        char = self.text[pos]
        if char == "{":
            return self.braced(pos)
        if char == '"':
            return self.quoted(pos)
        if char == "[":
            words, end = self.words(pos + 1, in_query=True)
            if not words or words[0].kind is not TokenKind.BARE:
                raise self.fail("an object query '[...]' must start with a command name")
            return Token(TokenKind.QUERY, words[0].text, tuple(words[1:])), end
        match = _BARE.match(self.text, pos)
        if match is None:
            raise self.fail(self.forbidden(char))
        end = match.end()
        if end < len(self.text) and self.text[end] not in _SPACE + "]":
            raise self.fail(self.forbidden(self.text[end]))
        return Token(TokenKind.BARE, match.group(0)), end

    def braced(self, pos: int) -> tuple[Token, int]:
        end = self.text.find("}", pos + 1)
        if end < 0:
            raise self.fail("unclosed '{'")
        body = self.text[pos + 1:end]
        if "{" in body:
            raise self.fail("nested braces are not allowed")
        if "\\" in body:
            raise self.fail("a backslash is not allowed inside braces")
        return Token(TokenKind.BRACED, body), end + 1

    def quoted(self, pos: int) -> tuple[Token, int]:
        end = self.text.find('"', pos + 1)
        if end < 0:
            raise self.fail('unclosed \'"\'')
        body = self.text[pos + 1:end]
        for char in "$[]\\":
            if char in body:
                raise self.fail(f"{char!r} is not allowed inside double quotes (Tcl would "
                                "substitute it); use braces for a literal list")
        return Token(TokenKind.QUOTED, body), end + 1

    @staticmethod
    def forbidden(char: str) -> str:
        reasons = {
            "$": "variable substitution ('$') is not allowed: write the value",
            ";": "';' is not allowed: one command per line",
            "\\": "a backslash is only allowed at the end of a line (continuation)",
            "[": "'[' inside a word is Tcl command substitution; brace a bus bit: {data[0]}",
            "{": "'{' inside a word is not allowed",
            '"': "'\"' inside a word is not allowed",
            "}": "'}' without an opening '{'",
        }
        return reasons.get(char, f"character {char!r} is not allowed in an SDC word")
