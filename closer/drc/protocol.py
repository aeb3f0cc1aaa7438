"""The pluggable test-generator and judge commands: any program, called as

    COMMAND... REQUEST.json RESPONSE.json

It reads the request and writes the response; both are JSON and validated here. A test generator
returns layouts as data (polygons on GDS layers, `closer.drc.shapes.Case`), never code; a judge
returns the id of one of the candidates it was shown.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError

from closer.drc.problem import PublicProblem
from closer.drc.shapes import Case
from closer.errors import InputError, ToolError
from closer.inputs import JsonShapeError, parse_json, read_bytes
from closer.procs import Command, run

MAX_RESPONSE_BYTES = 8 * 2**20
Output = Literal[0, 1, "error"]
ResponseT = TypeVar("ResponseT", bound=BaseModel)


class Candidate(BaseModel):
    id: str
    script: str


class ProbeRequest(BaseModel):
    problem: PublicProblem
    mode: Literal["initial", "split"]
    count: int = Field(ge=1, le=64)
    candidates: list[Candidate] = Field(default_factory=list, description="split: the members to tell apart")
    seed: int = 0


class ProbeResponse(BaseModel):
    tests: list[Case] = Field(max_length=64)


class ShownTest(BaseModel):
    name: str
    expected: bool | None = None
    outputs: dict[str, Output]  # candidate id -> its result on this layout


class JudgeRequest(BaseModel):
    problem: PublicProblem
    candidates: list[Candidate] = Field(min_length=1)
    tests: list[ShownTest] = Field(default_factory=list)


class JudgeResponse(BaseModel):
    choice: str


class CommandTool:
    """One pluggable command; every call's request and response are kept in `folder`."""

    def __init__(self, command: str, folder: Path, timeout_s: float = 600.0):
        self.argv = shlex.split(command)
        if not self.argv:
            raise ToolError("empty test-generator or judge command")
        self.folder, self.timeout_s, self.calls = folder, timeout_s, 0

    def call(self, request: BaseModel, response_model: type[ResponseT]) -> ResponseT:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.calls += 1
        stem = self.folder / f"call_{self.calls:03d}"
        request_path, response_path = Path(f"{stem}.request.json"), Path(f"{stem}.response.json")
        request_path.write_text(request.model_dump_json(indent=2))
        result = run(Command([*self.argv, str(request_path), str(response_path)], timeout_s=self.timeout_s),
                     Path(f"{stem}.log"), check=False)
        if not result.ok:
            raise ToolError(f"{self.argv[0]} exited with {result.returncode}; log: {result.log}")
        try:
            raw = read_bytes(response_path, "response", MAX_RESPONSE_BYTES)
        except InputError as exc:
            raise ToolError(str(exc)) from None
        try:
            return response_model.model_validate(parse_json(raw))
        except (JsonShapeError, ValidationError) as exc:
            raise ToolError(f"{response_path}: not a valid response ({str(exc).splitlines()[0]})") from exc
