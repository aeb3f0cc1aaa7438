"""Reading TOML files into pydantic models with errors that name the file and the key."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from closer.errors import InputError
from closer.inputs import read_text, validation_message

if TYPE_CHECKING:  # imported where a model is validated (closer.inputs says why)
    from pydantic import BaseModel, ValidationError

ModelT = TypeVar("ModelT", bound="BaseModel")


def describe_validation_error(exc: ValidationError) -> str:
    """One clause per problem, naming the key path, for messages that name the file too."""
    return validation_message(exc)


def load_toml(path: Path, missing: str, what: str = "TOML file") -> dict:
    """Parse `path` as TOML; InputError names the file (missing, a directory, not UTF-8, bad TOML)."""
    if not path.exists() and not path.is_symlink():
        raise InputError(missing.format(path=path))
    text = read_text(path, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise InputError(f"{path}: not valid TOML: nested too deeply") from None
    except ValueError as exc:  # an integer too long to convert
        raise InputError(f"{path}: not valid TOML: {str(exc).split(':')[0]}") from None


def load_toml_model(path: Path, model: type[ModelT], missing: str) -> ModelT:
    """Parse `path` as TOML and validate it as `model`; `missing` is the message when the file
    does not exist (e.g. "budget file {path} does not exist")."""
    from pydantic import ValidationError

    data = load_toml(path, missing)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"{path}: {describe_validation_error(exc)}") from None
