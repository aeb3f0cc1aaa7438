"""Reading TOML files into pydantic models with errors that name the file and the key."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from closer.errors import InputError

ModelT = TypeVar("ModelT", bound=BaseModel)


def describe_validation_error(exc: ValidationError) -> str:
    """One clause per problem, naming the key path, for messages that name the file too."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"key {where}: {err['msg']}")
    return "; ".join(parts)


def load_toml_model(path: Path, model: type[ModelT], missing: str) -> ModelT:
    """Parse `path` as TOML and validate it as `model`; `missing` is the message when the file
    does not exist (e.g. "budget file {path} does not exist")."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError as exc:
        raise InputError(missing.format(path=path)) from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"{path}: {describe_validation_error(exc)}") from exc
