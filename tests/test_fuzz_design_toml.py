"""Fuzz of the design.toml reader (`closer design show`): binary or malformed files, values of the
wrong type (no coercion: "10" and true are no clock period), non-finite or out-of-range numbers,
empty names, an empty RTL list and a short pinned commit are all refused with exit 2 and one line
naming design.toml."""

from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from closer.paths import repo_paths
from tests.fuzz_support import FUZZ, assert_refused, run_closer

GCD = repo_paths().design_dir("gcd")
PICO = repo_paths().design_dir("picorv32")
TEXT = (GCD / "design.toml").read_text()


def _show(tmp_path: Path, text: str | bytes, source: Path = GCD):
    folder = tmp_path / source.name
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(source, folder)
    (folder / "design.toml").write_bytes(text if isinstance(text, bytes) else text.encode())
    return run_closer(["design", "show", str(folder)])


EDITS = {
    'period_ns = 10.0': ["inf", "nan", "-inf", '"10"', "true", "0.0", "-1.0", "1e300", "[10.0]", "{}"],
    'top = "gcd"': ['""', "1", "true", '"gcd top"', '"1gcd"', "[]"],
    'port = "clk"': ['""', "0", '"c l k"'],
    'rtl = ["rtl/gcd.v"]': ["[]", '["rtl/gcd.txt"]', '"rtl/gcd.v"', "[1]", '[""]'],
    'name = "gcd"': ['""', '"other"', "7"],
    'parameters = { WIDTH = 16 }': ["{ WIDTH = 1.5 }", "{ WIDTH = nan }", "{ WIDTH = [1] }", "7"],
    'file = "targets.toml"': ["3", "[]"],
}
edit = st.sampled_from(sorted(EDITS)).flatmap(lambda key: st.sampled_from(EDITS[key]).map(
    lambda value: (key, key.split(" = ")[0] + " = " + value)))


@FUZZ
@given(change=edit)
def test_a_bad_value_is_refused(tmp_path: Path, change: tuple[str, str]):
    old, new = change
    assert old in TEXT
    assert_refused(_show(tmp_path, TEXT.replace(old, new, 1)), "design.toml")


@FUZZ
@given(extra=st.sampled_from(["[physical]\ncore_utilization = 2.0", "[physical]\ncore_utilization = nan",
                              '[physical]\ncorners = ["nope"]', "[physical]\nrouter_passes = true",
                              '[physical]\naspect_ratio = "1"', "[unknown]\nx = 1", "[clock]\nx = 1"]))
def test_a_bad_table_is_refused(tmp_path: Path, extra: str):
    assert_refused(_show(tmp_path, TEXT + "\n" + extra + "\n"), "design.toml")


@FUZZ
@given(data=st.one_of(st.binary(min_size=1, max_size=80).map(lambda b: b"\xff" + b),
                      st.integers(min_value=1, max_value=len(TEXT) - 1).map(lambda n: TEXT[:n] + "\n[[["),
                      st.sampled_from([b"", b"x = " + b"1" * 5000, b"a = " + b"[" * 3000])))
def test_malformed_files_are_refused(tmp_path: Path, data: bytes | str):
    assert_refused(_show(tmp_path, data), "design.toml")


PICO_TEXT = (PICO / "design.toml").read_text()
COMMIT = 'commit = "87c89acc18994c8cf9a2311e871818e87d304568"'


@FUZZ
@given(commit=st.sampled_from(['"abc"', '"87C89ACC18994C8CF9A2311E871818E87D304568"', '""', "1",
                               '"87c89acc18994c8cf9a2311e871818e87d30456z"']))
def test_a_bad_pinned_commit_is_refused(tmp_path: Path, commit: str):
    assert COMMIT in PICO_TEXT
    assert_refused(_show(tmp_path, PICO_TEXT.replace(COMMIT, f"commit = {commit}"), PICO), "design.toml")


def test_the_real_designs_still_load(tmp_path: Path):
    for source in (GCD, PICO):
        result = _show(tmp_path, (source / "design.toml").read_text(), source)
        assert result.code == 0, result.err
