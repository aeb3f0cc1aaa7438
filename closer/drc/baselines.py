"""Machinery baselines for the pluggable commands (not models): a scripted threshold-probing test
generator and a scripted judge, so every selector runs end to end without an LLM.

    python -m closer.drc.baselines testgen REQUEST.json RESPONSE.json
    python -m closer.drc.baselines judge REQUEST.json RESPONSE.json

The prober reads the rule's kind, value and layers from the public problem text (keywords and the
first number with a unit) and draws layouts at, just above and just below that value; in split
mode it also probes each threshold the candidates' scripts name. Expected labels follow its reading
of the rule text. The judge prefers the candidate that reproduces the most expected labels, then
the one whose script names the rule's value, then the first.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from closer.drc.cases import build_cases
from closer.drc.mutate import AREA_NUMBER, UM_NUMBER
from closer.drc.problem import PublicProblem
from closer.drc.protocol import JudgeRequest, JudgeResponse, ProbeRequest, ProbeResponse
from closer.drc.rules import LAYERS, GRID_NM, Layer, Rule, RuleKind
from closer.drc.shapes import Case

VALUE = re.compile(r"(\d+(?:\.\d+)?)\s*(µm²|um\^2|um2|square microns|µm|um)")
# first match wins: hole texts say "enclosed" and "area", notch texts say "space"
KEYWORDS = [(RuleKind.HOLE, ("hole", "opening")), (RuleKind.NOTCH, ("notch", "slot", "within any one", "single polygon")),
            (RuleKind.ENCLOSURE, ("enclos", "surround", "margin")), (RuleKind.AREA, ("area",)),
            (RuleKind.SPACING, ("spac", "apart", "closer", "space")), (RuleKind.WIDTH, ("width", "narrow", "thin"))]
PROBE_CASES = ("at_threshold", "just_above", "just_below", "far_below", "corner_close", "corner_neck",
               "concave_corner", "touching", "touching_halves", "decoy_layer")


def read_rule(problem: PublicProblem) -> tuple[RuleKind, float, list[Layer]]:
    text = " ".join([problem.nl_description, problem.title, *(r.text for r in problem.rules)]).lower()
    kind = next((k for k, words in KEYWORDS if any(w in text for w in words)), RuleKind.WIDTH)
    match = VALUE.search(text)
    value = float(match.group(1)) if match else 0.1
    known = {layer.pair: layer for layer in LAYERS.values()}
    layers = [known.get(tuple(pair)) or Layer(name=name, gds_layer=pair[0], gds_datatype=pair[1])
              for name, pair in problem.layers.items()]
    return kind, value, layers


def _rule(kind: RuleKind, value: float, layers: list[Layer]) -> Rule | None:
    if not layers or (kind is RuleKind.ENCLOSURE and len(layers) < 2):
        return None
    if layers[0].name not in LAYERS or (kind is RuleKind.ENCLOSURE and layers[1].name not in LAYERS):
        return None  # the decoys need a known neighbouring layer
    return Rule(deck_rule="probe", kind=kind, layer=layers[0], inner=layers[1] if kind is RuleKind.ENCLOSURE else None,
                value=value)


def probes(kind: RuleKind, value: float, layers: list[Layer], truth: float) -> list[Case]:
    """Layouts built around `value`, labeled by the rule read from the text (`truth`)."""
    rule = _rule(kind, value, layers)
    if rule is None:
        return []
    out = []
    for case in build_cases(rule):
        if case.name not in PROBE_CASES:
            continue
        violates = case.violates if abs(value - truth) < 1e-9 else _relabel(case.name, value, truth, kind)
        if violates is not None:
            out.append(case.model_copy(update={"violates": violates}))
    return out


def _relabel(name: str, value: float, truth: float, kind: RuleKind) -> bool | None:
    """The label under the true threshold of a case built around another value (threshold cases
    only: the width or gap they draw is known)."""
    step = GRID_NM / 1000
    if kind in (RuleKind.AREA, RuleKind.HOLE):
        return None
    drawn = {"at_threshold": value, "just_above": value + step, "just_below": value - step}.get(name)
    return None if drawn is None else drawn < truth - 1e-9


def thresholds(script: str) -> list[float]:
    numbers = [float(m.group(1)) for m in UM_NUMBER.finditer(script)]
    return numbers + [float(m.group(2)) for m in AREA_NUMBER.finditer(script)]


def generate_tests(request: ProbeRequest) -> ProbeResponse:
    kind, value, layers = read_rule(request.problem)
    tests = probes(kind, value, layers, value)
    if request.mode == "split":
        split = []
        for candidate in request.candidates:
            for number in thresholds(candidate.script):
                if abs(number - value) > 1e-9:
                    split += probes(kind, number, layers, value)
        tests = split + [t for t in tests if t.name not in {"at_threshold", "just_above", "just_below"}]
    seen, unique = set(), []
    for test in tests:
        key = test.model_dump_json(include={"shapes"})
        if key not in seen:
            seen.add(key)
            unique.append(test)
    offset = request.seed % max(1, len(unique))
    return ProbeResponse(tests=(unique[offset:] + unique[:offset])[:request.count])


def judge(request: JudgeRequest) -> JudgeResponse:
    _, value, _ = read_rule(request.problem)

    def merit(index: int) -> tuple:
        candidate = request.candidates[index]
        agree = sum(t.outputs.get(candidate.id) == int(t.expected) for t in request.tests if t.expected is not None)
        names_value = any(abs(n - value) < 1e-9 for n in thresholds(candidate.script))
        return (agree, names_value, -index)

    best = max(range(len(request.candidates)), key=merit)
    return JudgeResponse(choice=request.candidates[best].id)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("testgen", "judge"):
        print("usage: python -m closer.drc.baselines testgen|judge REQUEST.json RESPONSE.json", file=sys.stderr)
        return 2
    mode, request_path, response_path = argv[0], Path(argv[1]), Path(argv[2])
    if mode == "testgen":
        response = generate_tests(ProbeRequest.model_validate_json(request_path.read_text()))
    else:
        response = judge(JudgeRequest.model_validate_json(request_path.read_text()))
    response_path.write_text(response.model_dump_json())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
