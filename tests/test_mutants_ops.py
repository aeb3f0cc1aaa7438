"""Mutation operators and the store's bookkeeping, without simulation (fast)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyslang import syntax as S

from closer.errors import InputError
from closer.mutants import source_ops, yosys_ops
from closer.mutants.design_input import load_design
from closer.mutants.generate import set_of
from closer.mutants.models import MutantSetName, Operator

FIXTURES = Path(__file__).parent / "fixtures" / "mutants"
FIFO = FIXTURES / "fifo"


def test_source_operators_cover_every_bug_class():
    edits = source_ops.enumerate_edits(FIFO, "rtl/fifo.v")
    operators = {e.operator for e in edits}
    assert operators == {Operator.OFF_BY_ONE, Operator.SWAP_OPERANDS, Operator.WRONG_COMPARISON,
                         Operator.WRONG_OPERATOR, Operator.DROP_CONDITION}
    assert len({e.id for e in edits}) == len(edits), "ids must be unique"


def test_source_edits_stay_in_behaviour_and_parse():
    text = (FIFO / "rtl/fifo.v").read_text()
    for edit in source_ops.enumerate_edits(FIFO, "rtl/fifo.v"):
        line = edit.location(text).line
        assert line >= 22, f"{edit.description} edits a declaration (line {line})"
        mutated = edit.apply(text)
        assert mutated != text
        tree = S.SyntaxTree.fromText(mutated, "m.v")
        assert not [d for d in tree.diagnostics if d.isError()], edit.description


def test_source_edit_examples():
    text = (FIFO / "rtl/fifo.v").read_text()
    by_desc = {e.description: e for e in source_ops.enumerate_edits(FIFO, "rtl/fifo.v")}
    swap = by_desc["swap_operands: 'count - 1' -> '(1) - (count)'"]
    assert "count <= (1) - (count);" in swap.apply(text)
    assert "wrong_comparison: '==' -> '!='" in by_desc
    assert "drop_condition: 'rst' -> '1'b1'" in by_desc
    assert "off_by_one: '1' -> '2'" in by_desc


def test_sized_literals_keep_their_width():
    edits = source_ops._EditFinder("x.v", "")
    edits.text = "4'hF"
    edits.literal_edits(0, 4, "'h", "4", "F")
    assert [e.replacement for e in edits.edits] == ["4'd14"]  # 16 does not fit in 4 bits


def test_ids_are_stable_and_independent_of_checkout_location(tmp_path):
    copy = tmp_path / "fifo"
    shutil.copytree(FIFO, copy)
    here = [e.id for e in source_ops.enumerate_edits(FIFO, "rtl/fifo.v")]
    there = [e.id for e in source_ops.enumerate_edits(copy, "rtl/fifo.v")]
    assert here == there
    a = yosys_ops.list_mutations(load_design(str(FIFO)), 30, 5, tmp_path / "a")
    b = yosys_ops.list_mutations(load_design(str(copy)), 30, 5, tmp_path / "b")
    assert [m.id for m in a] == [m.id for m in b]
    assert len(a) >= 25


def test_yosys_mutate_list_uses_the_five_modes_and_names_source_lines(tmp_path):
    mutations = yosys_ops.list_mutations(load_design(str(FIFO)), 200, 1, tmp_path)
    modes = {m.operator for m in mutations}
    assert modes == {Operator.INV, Operator.CONST0, Operator.CONST1, Operator.CNOT0, Operator.CNOT1}
    lines = {m.location().line for m in mutations}
    assert all(m.location().file == "rtl/fifo.v" for m in mutations)
    assert len(lines) >= 10, "mutate -list should spread over source lines"


def test_yosys_mutants_are_real_netlist_edits(tmp_path):
    design = load_design(str(FIFO))
    mutation = yosys_ops.list_mutations(design, 5, 3, tmp_path)[0]
    out, baseline = tmp_path / "m" / "mutant.v", tmp_path / "b" / "baseline.v"
    yosys_ops.write_mutants(design, [(mutation, out)], baseline, tmp_path)
    assert "module fifo" in out.read_text()
    assert out.read_text().split("*/", 1)[1] != baseline.read_text().split("*/", 1)[1]


def test_public_and_hidden_partition_is_disjoint_and_balanced():
    ids = [e.id for e in source_ops.enumerate_edits(FIFO, "rtl/fifo.v")]
    public = {i for i in ids if set_of(i) == MutantSetName.PUBLIC}
    hidden = {i for i in ids if set_of(i) == MutantSetName.HIDDEN}
    assert public.isdisjoint(hidden) and public | hidden == set(ids)
    assert public and hidden


def test_design_errors_name_file_and_key(tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(FIFO, bad)
    toml = bad / "design.toml"
    toml.write_text(toml.read_text().replace('top = "fifo"', ""))
    with pytest.raises(InputError, match=r"design.toml: \[design\] top"):
        load_design(str(bad))
    toml.write_text((FIFO / "design.toml").read_text().replace("rtl/fifo.v", "rtl/nope.v"))
    with pytest.raises(InputError, match=r"design.toml: \[sources\] rtl names rtl/nope.v"):
        load_design(str(bad))
    with pytest.raises(InputError, match=r"no \[configs.huge\]"):
        load_design(str(FIFO), "huge")


def test_shipped_schemas_match_the_models():
    from closer.mutants.models import MutantManifest, ScoreReport
    from closer.paths import schema_path
    import json

    for name, model in (("mutants-manifest", MutantManifest), ("mutants-score", ScoreReport)):
        assert json.loads(schema_path(name).read_text()) == model.model_json_schema(), \
            f"run `closer mutants schema` to refresh {name}"


def test_cli_reports_bad_input_with_exit_2(tmp_path):
    import subprocess

    from closer.paths import repo_paths

    closer = str(repo_paths().venv / "bin" / "closer")
    done = subprocess.run([closer, "mutants", "score", str(tmp_path), "--testbench", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "design.toml" in done.stderr
    done = subprocess.run([closer, "mutants", "list", str(FIFO), "--store", str(tmp_path / "none")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "manifest.json" in done.stderr


def test_generate_never_replaces_a_folder_that_is_not_a_mutant_set(tmp_path):
    from closer.mutants.generate import GenerateOptions, generate
    from closer.mutants.paths import MutantStorePaths
    from closer.mutants.testbench import Testbench

    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    with pytest.raises(InputError, match="not a mutant set"):
        generate(load_design(str(FIFO)), Testbench.from_path(FIFO / "oracle" / "test_fifo.py"),
                 MutantStorePaths(tmp_path), GenerateOptions(n=1, seed=1, set_name=MutantSetName.HIDDEN))
    assert precious.read_text() == "keep me"


def test_source_edits_in_modules_the_configuration_does_not_instantiate_are_dead(tmp_path):
    deadcode = FIXTURES / "deadcode"
    edits = source_ops.enumerate_edits(deadcode, "rtl/pick.v")
    lines = {e.location((deadcode / "rtl/pick.v").read_text()).line for e in edits}
    assert {17, 21} <= lines  # the two adders' assigns
    narrow = yosys_ops.live_source_lines(load_design(str(deadcode)), tmp_path / "n")["rtl/pick.v"]
    wide = yosys_ops.live_source_lines(load_design(str(deadcode), "wide"), tmp_path / "w")["rtl/pick.v"]
    spans = source_ops.regions(deadcode, "rtl/pick.v")
    assert source_ops.is_dead(17, spans, narrow) and not source_ops.is_dead(21, spans, narrow)
    assert source_ops.is_dead(21, spans, wide) and not source_ops.is_dead(17, spans, wide)


def test_constant_assigns_are_never_taken_for_dead_code(tmp_path):
    """`assign x = 4'd0;` makes no cell (so no `src` span) yet is live: only whole modules and
    generate blocks without any elaborated line count as dead."""
    from closer.mutants.generate import _dead_source_candidates, _source_candidates
    from closer.mutants.paths import MutantStorePaths

    design = load_design(str(FIFO))
    source = _source_candidates(design)
    assert _dead_source_candidates(design, source, MutantStorePaths(tmp_path)) == set()


def test_identical_optimised_netlist_proves_equivalence_both_ways(tmp_path):
    """An edit in the uninstantiated adder leaves the netlist as it was; one in the used adder
    changes it."""
    deadcode = FIXTURES / "deadcode"
    design = load_design(str(deadcode))
    text = (deadcode / "rtl/pick.v").read_text()
    edits = source_ops.enumerate_edits(deadcode, "rtl/pick.v")
    unused = next(e for e in edits if e.location(text).line == 17)
    used = next(e for e in edits if e.location(text).line == 21)
    outputs = {}
    for name, edit in (("golden", None), ("unused", unused), ("used", used)):
        folder = tmp_path / name / "files"
        (folder / "rtl").mkdir(parents=True)
        (folder / "rtl/pick.v").write_text(edit.apply(text) if edit else text)
        yosys_ops.canonical_netlist(design, folder, tmp_path / name / "netlist.v", tmp_path / "work")
        outputs[name] = yosys_ops.netlist_body(tmp_path / name / "netlist.v")
    assert outputs["unused"] == outputs["golden"]
    assert outputs["used"] != outputs["golden"]
