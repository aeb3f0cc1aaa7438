"""JSON Schemas of the Rule2DRC files others read, exported from the models:

    python -m closer.drc.schemas        rewrite closer/schemas/drc-*.schema.json
"""

from __future__ import annotations

from pydantic import BaseModel

from closer.drc.problem import ProblemSpec
from closer.drc.protocol import JudgeRequest, JudgeResponse, ProbeRequest, ProbeResponse
from closer.drc.runs import RunResults
from closer.drc.select import SelectionRun
from closer.drc.suite import SuiteManifest
from closer.paths import schema_path
from closer.tasks.schemas import schema_text

SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    "drc-spec": ProblemSpec, "drc-suite": SuiteManifest, "drc-results": RunResults, "drc-selection": SelectionRun,
    "drc-testgen-request": ProbeRequest, "drc-testgen-response": ProbeResponse,
    "drc-judge-request": JudgeRequest, "drc-judge-response": JudgeResponse,
}


def write_all() -> list[str]:
    for name, model in SCHEMA_MODELS.items():
        schema_path(name).write_text(schema_text(model))
    return list(SCHEMA_MODELS)


if __name__ == "__main__":
    print("\n".join(write_all()))
