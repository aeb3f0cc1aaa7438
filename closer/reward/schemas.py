"""JSON Schemas of the files others read, generated from the pydantic models (never by hand).

    python -m closer.reward.schemas      # rewrites closer/schemas/{targets,reward}.schema.json
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from closer.paths import schema_path
from closer.reward.models import RewardResult
from closer.reward.targets import Targets

SCHEMA_MODELS: dict[str, tuple[type[BaseModel], str, str]] = {
    "targets": (Targets, "validation", "Closer reward targets file (TOML, shown as JSON)"),
    "reward": (RewardResult, "serialization", "Output of `closer reward --json`"),
}


def generate(name: str) -> dict:
    model, mode, title = SCHEMA_MODELS[name]
    schema = model.model_json_schema(mode=mode)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title,
            **{k: v for k, v in schema.items() if k != "title"}}


def render(name: str) -> str:
    return json.dumps(generate(name), indent=2, ensure_ascii=False) + "\n"


def write_all() -> list[str]:
    written = []
    for name in SCHEMA_MODELS:
        path = schema_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(name), encoding="utf-8")
        written.append(str(path))
    return written


if __name__ == "__main__":
    for written_path in write_all():
        print(written_path)
