"""Reading input files at the boundary: every failure is one `InputError` line naming the file.

`read_bytes`/`read_text` refuse a missing path, a directory, a special file, an unreadable file
and (text) bytes that are not UTF-8. `parse_json` parses strict JSON: no NaN/Infinity, no
duplicate keys, no integer longer than `MAX_INT_DIGITS` digits, no nesting deep enough to
exhaust the parser's recursion. `load_json_model` validates the result as a pydantic model and names the field.
Model configs that read numbers use `FINITE` (NaN and infinities refused).
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from closer.errors import InputError

if TYPE_CHECKING:  # pydantic is imported where a model is validated: the metered call's hot path reads without it
    from pydantic import BaseModel, ConfigDict, ValidationError

ModelT = TypeVar("ModelT", bound="BaseModel")

MAX_INT_DIGITS = 40  # a JSON integer longer than this is no measurement (2**128 has 39 digits)
MAX_INPUT_BYTES = 256 * 1024 * 1024

# extra keys refused, NaN/Infinity refused in every float field (a ConfigDict is a plain dict)
FINITE: ConfigDict = {"extra": "forbid", "allow_inf_nan": False}


def read_bytes(path: Path, what: str = "file", max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file `path`; InputError (naming `what` and the path) otherwise."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise InputError(f"{path}: {what} does not exist") from None
    except OSError as exc:
        raise InputError(f"{path}: {what} cannot be read: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"{path}: {what} is a directory, expected a file")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{path}: {what} is not a regular file")
    if info.st_size > max_bytes:
        raise InputError(f"{path}: {what} is {info.st_size} bytes, over the {max_bytes}-byte limit")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: {what} cannot be read: {exc.strerror}") from None


def read_text(path: Path, what: str = "file", max_bytes: int = MAX_INPUT_BYTES) -> str:
    raw = read_bytes(path, what, max_bytes)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: {what} is not UTF-8 text (byte {exc.start})") from None


class JsonShapeError(ValueError):
    """The JSON text is malformed or outside the accepted shapes; the message says where."""


def parse_json(text: str | bytes) -> object:
    """Strict JSON; raises JsonShapeError with the reason."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonShapeError(f"not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text, parse_constant=_no_constant, parse_int=_bounded_int,
                          object_pairs_hook=_unique_pairs)
    except json.JSONDecodeError as exc:
        raise JsonShapeError(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise JsonShapeError("nested too deeply") from None


def load_json(path: Path, what: str = "file") -> object:
    try:
        return parse_json(read_bytes(path, what))
    except JsonShapeError as exc:
        raise InputError(f"{path}: {what}: {exc}") from None


def load_json_model(path: Path, model: type[ModelT], what: str = "file") -> ModelT:
    """`path` read, checked as strict JSON and validated as `model` (in JSON mode, so strict
    models take dates and enums from their JSON strings), or one InputError line."""
    from pydantic import ValidationError

    raw = read_bytes(path, what)
    try:
        parse_json(raw)
    except JsonShapeError as exc:
        raise InputError(f"{path}: {what}: {exc}") from None
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise InputError(f"{path}: {validation_message(exc)}") from None


def validation_message(exc: ValidationError) -> str:
    """One clause per problem, naming the key path, for messages that name the file too."""
    parts = []
    for err in exc.errors():
        where = ".".join(_printable(p) for p in err["loc"]) or "(top level)"
        parts.append(f"key {where}: {err['msg']}")
    return "; ".join(parts)


def _printable(part: object) -> str:
    """A key of the input as text that keeps the message on one line (control characters escaped)."""
    text = str(part)
    return text if text.isprintable() else repr(text)


def _no_constant(literal: str) -> float:
    raise JsonShapeError(f"{literal} is not a number JSON allows; values must be finite")


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise JsonShapeError(f"an integer of {len(digits.lstrip('-'))} digits (more than {MAX_INT_DIGITS})")
    return int(digits)


def _unique_pairs(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise JsonShapeError(f"key {key!r} appears twice")
        out[key] = value
    return out
