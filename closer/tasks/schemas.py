"""JSON Schemas of the task files others read, exported from the models (never written by hand):

    python -m closer.tasks.schemas          rewrite closer/schemas/task*.schema.json, run-record,
                                            trajectory-rescore, design-check
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from closer.paths import schema_path
from closer.tasks.models import HiddenConfig, LockedManifest, SuiteManifest, TaskConfig

SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "task-config": TaskConfig,
    "task-hidden": HiddenConfig,
    "task-locked": LockedManifest,
    "task-suite": SuiteManifest,
}


def all_models() -> dict[str, type[BaseModel]]:
    from closer.designs.checkrecord import CheckRecord
    from closer.matrix.store import StoreEntry
    from closer.tasks.evaluate import EvaluationRecord
    from closer.tasks.rescore import RescoreFile
    from closer.tasks.runner import RunRecord

    return {**SCHEMA_MODELS, "task-evaluation": EvaluationRecord, "run-record": RunRecord,
            "trajectory-rescore": RescoreFile, "design-check": CheckRecord, "matrix-store": StoreEntry}


def schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"


def write_all() -> list[str]:
    written = []
    for name, model in all_models().items():
        schema_path(name).write_text(schema_text(model))
        written.append(name)
    return written


if __name__ == "__main__":
    print("\n".join(write_all()))
