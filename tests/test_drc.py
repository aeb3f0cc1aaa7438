"""closer.drc without KLayout: estimators, perturbations, parsers, input validation, the LLM adapter."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from math import comb
from pathlib import Path

import pytest
from pydantic import ValidationError

from closer.drc.baselines import read_rule
from closer.drc.lyrdb import ReportError, category_counts
from closer.drc.mutate import Perturbation, perturbations
from closer.drc.passk import all_fail_at_k, pass_at_k
from closer.drc.phrasing import phrasings
from closer.drc.problem import PublicProblem, read_labels, read_spec
from closer.drc.protocol import ProbeResponse
from closer.drc.rules import RuleKind, rule_table
from closer.drc.scripts import script
from closer.errors import InputError

REPO = Path(__file__).resolve().parents[1]


def test_pass_at_k_is_the_unbiased_estimator():
    assert pass_at_k(5, 0, 5) == 0.0
    assert pass_at_k(5, 5, 1) == 1.0
    assert pass_at_k(5, 1, 1) == pytest.approx(0.2)
    assert pass_at_k(10, 3, 2) == pytest.approx(1 - comb(7, 2) / comb(10, 2))
    assert all_fail_at_k(5, 5, 5) == 1.0 and all_fail_at_k(5, 4, 5) == 0.0
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def test_rule_table_spans_the_kinds_and_gives_200_problems():
    rules = rule_table()
    assert {rule.kind for rule in rules} == set(RuleKind)
    assert sum(len(phrasings(rule)) for rule in rules) >= 200


@pytest.mark.parametrize("kind", list(RuleKind))
def test_every_perturbation_changes_the_gold(kind):
    rule = next(r for r in rule_table() if r.kind is kind)
    gold = script(rule)
    mutated = perturbations(gold)
    expected = set(Perturbation) - ({Perturbation.PROJECTION} if kind in (RuleKind.AREA, RuleKind.HOLE) else set())
    assert set(mutated) == expected
    assert all(text != gold for text in mutated.values())
    assert ".output(" not in mutated[Perturbation.MISSING_OUTPUT]


def test_threshold_perturbation_moves_one_grid_step():
    rule = next(r for r in rule_table() if r.deck_rule == "m1.1")
    mutated = perturbations(script(rule))
    assert "l.width(0.145.um" in mutated[Perturbation.THRESHOLD_UP]
    assert "l.width(0.135.um" in mutated[Perturbation.THRESHOLD_DOWN]


@pytest.mark.parametrize("rule", rule_table(), ids=lambda r: f"{r.kind}-{r.deck_rule}-{r.layer.name}")
def test_the_scripted_prober_reads_every_phrasing(rule):
    for text in phrasings(rule):
        problem = PublicProblem(id="p", title="t", nl_description=text, layers={rule.layer.name: rule.layer.pair},
                                categories=["c"])
        kind, value, _ = read_rule(problem)
        assert (kind, value) == (rule.kind, rule.value), text


LYRDB = """<?xml version="1.0" encoding="utf-8"?>
<report-database><categories><category><name>m1.1</name></category></categories>
 <items>
  <item><category>'m1.1'</category><cell>TOP</cell><values><value>edge-pair: (0,0;0,1)|(0.13,1;0.13,0)</value></values></item>
  <item><category>'m1.1'</category><cell>TOP</cell></item>
  <item><category>'outer'.'inner'</category><cell>TOP</cell></item>
 </items>
</report-database>
"""


def test_lyrdb_counts_items_per_category(tmp_path):
    path = tmp_path / "a.lyrdb"
    path.write_text(LYRDB)
    assert category_counts(path) == {"m1.1": 2, "outer.inner": 1}
    path.write_text("<html/>")
    with pytest.raises(ReportError, match="not <report-database>"):
        category_counts(path)
    with pytest.raises(ReportError, match="no report"):
        category_counts(tmp_path / "missing.lyrdb")


def test_spec_errors_name_file_and_field(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("id: ok\ntitle: t\ncategories: []\n")
    with pytest.raises(InputError, match=r"spec.yaml: key categories: "):
        read_spec(spec)
    spec.write_text("id: ok\ntitle: t\ncategories: [c]\ndata_dir: ../../elsewhere\n")
    with pytest.raises(InputError, match=r"spec.yaml: key data_dir: "):
        read_spec(spec)


def test_labels_are_validated(tmp_path):
    (tmp_path / "pass").mkdir()
    (tmp_path / "pass" / "a.gds").write_bytes(b"x")
    labels = tmp_path / "labels.csv"
    labels.write_text("filename,c\na.gds,2\n")
    with pytest.raises(InputError, match=r"line 2: c: '2' is not 0 or 1"):
        read_labels(labels, tmp_path, ["c"])
    labels.write_text("filename,c\n../a.gds,0\n")
    with pytest.raises(InputError, match="must be a relative .gds path"):
        read_labels(labels, tmp_path, ["c"])
    labels.write_text("filename,c\na.gds,0\n")
    assert read_labels(labels, tmp_path, ["c"])[0].file == tmp_path / "pass" / "a.gds"


def test_a_proposed_test_is_data_and_bounded():
    ok = {"tests": [{"name": "a", "violates": True, "shapes": [{"layer": [68, 20], "points": [[0, 0], [10, 0], [10, 10]]}]}]}
    assert ProbeResponse.model_validate(ok).tests[0].violates
    for bad in ({"layer": [68, 70000], "points": [[0, 0], [1, 0], [1, 1]]},
                {"layer": [68, 20], "points": [[0, 0], [10**9, 0], [1, 1]]},
                {"layer": [68, 20], "points": [[0, 0], [10, 0], [10, 10]], "holes": [[[0, 0], [10**9, 0], [1, 1]]]},
                {"layer": [68, 20], "points": [[0, 0], [10, 0], [10, 10]], "holes": [[[0, 0]]]},
                {"layer": [68, 20], "points": [[0, 0]], "code": "system('x')"}):
        with pytest.raises(ValidationError):
            ProbeResponse.model_validate({"tests": [{"name": "a", "shapes": [bad]}]})


def test_select_refuses_results_of_another_pool(tmp_path):
    from closer.drc.problem import load_problem
    from closer.drc.runner import RunSettings
    from closer.drc.runs import RunResults
    from closer.drc.select import select_all
    from closer.drc.selectors import SelectorSettings

    folder = tmp_path / "problems" / "p1"
    (folder / "data" / "gds" / "pass").mkdir(parents=True)
    (folder / "gold").mkdir()
    (folder / "spec.yaml").write_text("id: p1\ntitle: t\ncategories: [c]\n")
    (folder / "gold" / "p1.drc").write_text("source($input)\n")
    (folder / "data" / "gds" / "pass" / "a.gds").write_bytes(b"x")
    (folder / "data" / "gds" / "labels.csv").write_text("filename,c\na.gds,0\n")
    (tmp_path / "pool" / "p1").mkdir(parents=True)
    (tmp_path / "pool" / "p1" / "cand_00.drc").write_text("source($input)\n")
    empty = RunResults(suite="s", candidates="other", timeout_s=1, wall_s=0, results=[], problems=[])
    with pytest.raises(InputError, match="no result for p1/cand_00"):
        select_all([load_problem(folder)], tmp_path / "pool", empty, ["judge"], "true", "true", tmp_path / "out",
                   RunSettings(), SelectorSettings())


def test_report_refuses_a_run_without_problems(tmp_path):
    from closer.drc.report import run_row
    from closer.drc.runs import RunResults

    empty = RunResults(suite="s", candidates="c", timeout_s=1, wall_s=0, results=[], problems=[])
    (tmp_path / "results.json").write_text(empty.model_dump_json())
    with pytest.raises(InputError, match="no problems to report"):
        run_row(tmp_path)


def _closer(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "closer", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=120)


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "problems" / "p1").mkdir(parents=True)
    (tmp_path / "problems" / "p1" / "spec.yaml").write_text("id: p1\ntitle: [unclosed\n")
    result = _closer("drc", "import", str(tmp_path), "--out", str(tmp_path.parent / f"{tmp_path.name}-out"), cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "spec.yaml: not YAML" in result.stderr
    assert "drc" in _closer("--help", cwd=tmp_path).stdout


class _FakeChat(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _FakeChat.requests.append(body)
        ids = [c["id"] for c in json.loads(body["messages"][1]["content"])["candidates"]]
        answer = {"choices": [{"message": {"content": f'I pick: {{"choice": "{ids[-1]}"}}'}}]}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_openai_adapter_records_and_replays(tmp_path):
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"problem": {"id": "p", "title": "t", "categories": ["c"]},
                                   "candidates": [{"id": "cand_00", "script": "a"}, {"id": "cand_01", "script": "b"}]}))
    server = HTTPServer(("127.0.0.1", 0), _FakeChat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    transcript = tmp_path / "t.jsonl"
    base = [sys.executable, "-m", "closer.drc.llm", "judge", str(request)]
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "secret-key"}
    try:
        live = subprocess.run([*base, str(tmp_path / "r1.json"), "--endpoint", f"http://127.0.0.1:{server.server_port}/v1",
                               "--model", "m", "--transcript", str(transcript)], env=env, capture_output=True, text=True,
                              timeout=120)
    finally:
        server.shutdown()
    assert live.returncode == 0, live.stderr
    assert json.loads((tmp_path / "r1.json").read_text()) == {"choice": "cand_01"}
    assert "secret-key" not in transcript.read_text() and len(_FakeChat.requests) == 1
    replay = subprocess.run([*base, str(tmp_path / "r2.json"), "--model", "m", "--transcript", str(transcript), "--replay"],
                            env=env, capture_output=True, text=True, timeout=120)
    assert replay.returncode == 0 and (tmp_path / "r2.json").read_text() == (tmp_path / "r1.json").read_text()
    other = subprocess.run([*base, str(tmp_path / "r3.json"), "--model", "other", "--transcript", str(transcript),
                            "--replay"], env=env, capture_output=True, text=True, timeout=120)
    assert other.returncode == 2 and "no recorded answer" in other.stderr


def test_schemas_match_the_models():
    from closer.drc.schemas import SCHEMA_MODELS
    from closer.paths import schema_path
    from closer.tasks.schemas import schema_text

    for name, model in SCHEMA_MODELS.items():
        assert schema_path(name).read_text() == schema_text(model), f"run python -m closer.drc.schemas ({name})"
