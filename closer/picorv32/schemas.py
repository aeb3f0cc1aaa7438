"""JSON Schemas of PicoRV32's files that others read, generated from the pydantic models.

    .venv/bin/python -m closer.picorv32.schemas     # rewrite closer/schemas/picorv32-*.schema.json
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from closer.designs.fetch import FetchSpec
from closer.paths import schema_path
from closer.picorv32.coverage import CoverageResult
from closer.picorv32.firmware import Manifest
from closer.picorv32.tasks import DebugGrade, DebugHidden, FmaxResult, FmaxTask

SCHEMAS: dict[str, type[BaseModel]] = {
    "design-fetch": FetchSpec,  # design.toml [fetch]
    "picorv32-firmware-manifest": Manifest,
    "picorv32-fmax-task": FmaxTask,
    "picorv32-debug-hidden": DebugHidden,
    "picorv32-fmax-result": FmaxResult,
    "picorv32-debug-result": DebugGrade,
    "picorv32-coverage-result": CoverageResult,
}


def schema_text(model: type[BaseModel]) -> str:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **model.model_json_schema()}
    return json.dumps(schema, indent=1) + "\n"


def write_schemas() -> None:
    for name, model in SCHEMAS.items():
        schema_path(name).write_text(schema_text(model))


if __name__ == "__main__":
    write_schemas()
