"""An OpenAI-compatible chat endpoint as a judge or test-generator command, with a recorded
transcript so a run replays deterministically:

    python -m closer.drc.llm judge|testgen --endpoint URL --model NAME --transcript FILE [--replay] REQUEST RESPONSE

Each call appends {key, model, messages, content} to the JSONL transcript (the key is the SHA-256
of model and messages; the API key, from OPENAI_API_KEY, is never written). With --replay the
answer is the recorded one and the endpoint is not contacted. The model's answer must hold one
JSON object, validated like any command's response (a test is polygons, never code).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import urllib.request
from pathlib import Path

import click
from pydantic import ValidationError

from closer.drc.protocol import JudgeRequest, JudgeResponse, ProbeRequest, ProbeResponse
from closer.errors import InputError, ToolError

PROMPTS = {
    "judge": ("You review KLayout DRC scripts written for a design rule. Choose the script most likely to "
              "flag exactly the rule's violations. The user message is JSON with the problem, the candidates "
              "and their outputs (1 flagged, 0 clean) on test layouts. Answer with JSON: {\"choice\": \"<candidate id>\"}."),
    "testgen": ("You write test layouts for a KLayout DRC rule. The user message is JSON with the problem, a "
                "count and, in split mode, candidate scripts to tell apart. Answer with JSON: {\"tests\": [{\"name\": "
                "\"lowercase_name\", \"violates\": true|false, \"shapes\": [{\"layer\": [L, D], \"points\": [[x, y], ...]}]}]}, "
                "coordinates in nm."),
}
MODELS = {"judge": (JudgeRequest, JudgeResponse), "testgen": (ProbeRequest, ProbeResponse)}
JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def messages_for(role: str, request_text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": PROMPTS[role]}, {"role": "user", "content": request_text}]


def transcript_key(model: str, messages: list[dict[str, str]]) -> str:
    return hashlib.sha256(json.dumps([model, messages], sort_keys=True).encode()).hexdigest()


def recorded(transcript: Path, key: str) -> str | None:
    if not transcript.is_file():
        return None
    for number, line in enumerate(transcript.read_text().splitlines(), start=1):
        try:
            entry = json.loads(line)
        except ValueError:
            raise InputError(f"{transcript}: line {number}: not a JSON transcript entry") from None
        if isinstance(entry, dict) and entry.get("key") == key and isinstance(entry.get("content"), str):
            return entry["content"]
    return None


def ask(endpoint: str, model: str, messages: list[dict[str, str]], timeout_s: float) -> str:
    body = json.dumps({"model": model, "messages": messages, "temperature": 0}).encode()
    headers = {"Content-Type": "application/json"}
    if os.environ.get("OPENAI_API_KEY"):
        headers["Authorization"] = f"Bearer {os.environ['OPENAI_API_KEY']}"
    request = urllib.request.Request(endpoint.rstrip("/") + "/chat/completions", data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            answer = json.loads(reply.read(8 * 2**20))
        return answer["choices"][0]["message"]["content"]
    except (OSError, ValueError, KeyError, IndexError) as exc:
        raise ToolError(f"{endpoint}: no chat completion ({exc})") from exc


@click.command()
@click.argument("role", type=click.Choice(sorted(PROMPTS)))
@click.argument("request_path", type=click.Path(path_type=Path, exists=True))
@click.argument("response_path", type=click.Path(path_type=Path))
@click.option("--endpoint", default="", help="Base URL, e.g. http://host:8000/v1 (not needed with --replay).")
@click.option("--model", required=True)
@click.option("--transcript", type=click.Path(path_type=Path), required=True, help="JSONL file, appended to.")
@click.option("--replay", is_flag=True, help="Answer from the transcript only.")
@click.option("--timeout-s", type=float, default=300.0, show_default=True)
def llm_command(role: str, request_path: Path, response_path: Path, endpoint: str, model: str, transcript: Path,
                replay: bool, timeout_s: float) -> None:
    request_model, response_model = MODELS[role]
    try:
        request_text = request_model.model_validate_json(request_path.read_text()).model_dump_json()
    except ValidationError as exc:
        raise InputError(f"{request_path}: not a {role} request ({str(exc).splitlines()[0]})") from exc
    messages = messages_for(role, request_text)
    key = transcript_key(model, messages)
    content = recorded(transcript, key)
    if content is None:
        if replay:
            raise InputError(f"{transcript}: no recorded answer for this request (key {key[:12]})")
        if not endpoint:
            raise InputError("--endpoint: needed unless --replay")
        content = ask(endpoint, model, messages, timeout_s)
        with open(transcript, "a") as out:
            out.write(json.dumps({"key": key, "model": model, "messages": messages, "content": content}) + "\n")
    match = JSON_OBJECT.search(content)
    try:
        response = response_model.model_validate_json(match.group(0) if match else content)
    except ValidationError as exc:
        raise ToolError(f"model answer is not a {role} response ({str(exc).splitlines()[0]})") from exc
    response_path.write_text(response.model_dump_json())


if __name__ == "__main__":
    from closer.cli import run_cli

    run_cli(llm_command, "closer.drc.llm")
