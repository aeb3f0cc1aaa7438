"""`closer reward batch`: a directory of metrics files or a JSONL of records in one call, each
line bit-identical to the scalar path (`compute_reward`); a bad input is one error line naming
it (exit 2, nothing printed), or with --keep-going an {input, error} line in its place."""

from __future__ import annotations

import json
import random
from pathlib import Path

import orjson

from closer.reward import compute_reward, load_metrics, load_targets
from closer.reward.batch import exact, scalar_line

from tests.fuzz_support import assert_refused, run_closer
from tests.test_reward_support import TARGETS, closer_values

ALL_GATES = TARGETS / "gcd_all_gates.toml"


def _records(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        values = closer_values()
        values["finish__design__instance__area"] = round(values["finish__design__instance__area"]
                                                         * rng.lognormvariate(0, 0.2), 2)
        values["finish__timing__setup__ws"] = round(rng.gauss(0.5, 0.8), 5)
        values["finish__power__total"] = float(f"{values['finish__power__total'] * rng.lognormvariate(0, 0.2):.6g}")
        values["closer__sim__cycles"] = rng.randint(1500, 2500)
        values["detailedroute__route__drc_errors"] = rng.choice([0] * 9 + [3])
        out.append(values)
    return out


def _batch(path: Path, *options: str):
    return run_closer(["reward", "batch", str(path), "--targets", str(ALL_GATES), *options])


def test_a_directory_is_scored_bit_identical_to_the_scalar_path(tmp_path: Path):
    targets = load_targets(ALL_GATES)
    for i, values in enumerate(_records(60)):
        (tmp_path / f"r{i:03d}.json").write_text(json.dumps(values, indent=2))
    result = _batch(tmp_path)
    assert result.code == 0, result.err
    lines = [json.loads(line) for line in result.out.splitlines()]
    files = sorted(tmp_path.glob("*.json"))
    assert [ln["input"] for ln in lines] == [str(f) for f in files]
    assert {ln["gate"] for ln in lines} == {0, 1}  # both gate outcomes are exercised
    for line, raw, file in zip(lines, result.out.splitlines(), files):
        expected = scalar_line(str(file), compute_reward(load_metrics(file), targets))
        assert exact(line) == exact(json.loads(expected))
        assert raw.encode() == expected  # the same bytes, key order included


def _assert_jsonl_like_scalar(path: Path, records: list[dict]) -> list[dict]:
    """`closer reward batch` on the JSONL `path` of `records`: each line the scalar path's."""
    targets = load_targets(ALL_GATES)
    result = _batch(path)
    assert result.code == 0, result.err
    lines = [json.loads(line) for line in result.out.splitlines()]
    assert len(lines) == len(records)
    for n, (line, raw, values) in enumerate(zip(lines, result.out.splitlines(), records), start=1):
        single = path.parent / "single.json"
        single.write_text(json.dumps(values))
        expected = scalar_line(f"{path}:{n}", compute_reward(load_metrics(single), targets))
        assert exact(line) == exact(json.loads(expected)), n
        assert raw.encode() == expected, n  # the same bytes, key order included
    return lines


def test_a_jsonl_is_scored_bit_identical_to_the_scalar_path(tmp_path: Path):
    records = _records(80, seed=11)
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    _assert_jsonl_like_scalar(path, records)


def _with_bad(tmp_path: Path) -> tuple[Path, list[str]]:
    records = [json.dumps(r) for r in _records(5)]
    records[2] = records[2].replace('"closer__sim__cycles": ', '"closer__sim__cycles": NaN, "x__y__z": ')
    records[3] = records[3][:-5]  # cut off
    path = tmp_path / "metrics.jsonl"
    path.write_text("\n".join(records) + "\n")
    return path, records


def test_a_bad_record_is_one_error_line_naming_it_and_nothing_is_printed(tmp_path: Path):
    path, _ = _with_bad(tmp_path)
    result = _batch(path)
    assert_refused(result, f"{path}:3")
    assert result.out == ""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.json").write_text(json.dumps(closer_values()))
    (tmp_path / "d" / "b.json").write_text('{"closer__sim__cycles": 1, "closer__sim__cycles": 2}')
    assert_refused(_batch(tmp_path / "d"), "b.json")
    assert_refused(_batch(tmp_path / "missing.jsonl"), "missing.jsonl")


def test_keep_going_records_each_bad_input_in_its_place(tmp_path: Path):
    path, records = _with_bad(tmp_path)
    result = _batch(path, "--keep-going")
    assert result.code == 0, result.err
    lines = [json.loads(line) for line in result.out.splitlines()]
    assert [ln["input"] for ln in lines] == [f"{path}:{n}" for n in range(1, 6)]
    assert [("error" in ln) for ln in lines] == [False, False, True, True, False]
    assert "NaN" in lines[2]["error"] and "malformed JSON" in lines[3]["error"]
    assert all(0 <= ln["reward"] <= 1 for ln in lines if "error" not in ln)


def test_directory_files_are_read_whole_in_blocks_up_to_the_byte_limit(tmp_path: Path, monkeypatch):
    """A file read over several blocks is scored like the scalar path; one over the byte limit,
    or an entry that is not a regular file, is one error line naming it."""
    from closer.reward import batch

    monkeypatch.setattr(batch, "READ_BLOCK", 7)
    targets = load_targets(ALL_GATES)
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(closer_values(), indent=2))
    result = _batch(folder)
    assert result.code == 0, result.err
    expected = scalar_line(str(folder / "a.json"), compute_reward(load_metrics(folder / "a.json"), targets))
    assert exact(json.loads(result.out)) == exact(json.loads(expected))
    monkeypatch.setattr(batch, "MAX_INPUT_BYTES", 100)
    assert_refused(_batch(folder), "a.json")
    monkeypatch.setattr(batch, "MAX_INPUT_BYTES", 10**6)
    (folder / "b.json").mkdir()
    assert_refused(_batch(folder), "b.json")


def test_mixed_key_sets_and_undecided_records_across_jsonl_blocks(tmp_path: Path, monkeypatch):
    """Lines cut across read blocks, records of other key sets, and records the column pass
    leaves to the scalar path (a failed gate with the target metric missing, a null slack) are
    each scored like the scalar path; a record it refuses is one error naming its line."""
    from closer.reward import batch

    monkeypatch.setattr(batch, "JSONL_BLOCK", 300)  # far shorter than a record
    records = _records(12, seed=3)
    del records[2]["finish__timing__drv__max_cap__corner__ss_100C_1v60"]
    records[4]["closer__func__tests_failed"] = 1
    del records[4]["finish__design__instance__area"]
    records[6]["finish__timing__hold__ws__corner__tt_025C_1v80"] = None
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records).rstrip("\n"))  # no last newline
    lines = _assert_jsonl_like_scalar(path, records)
    assert lines[4]["gate"] == 0 and lines[4]["terms"]["area"]["value"] is None
    records[8]["finish__timing__setup__ws"] = None  # the scalar path refuses a null term input
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert_refused(_batch(path), f"{path}:9")
    kept = [json.loads(line) for line in _batch(path, "--keep-going").out.splitlines()]
    assert "error" in kept[8] and "finish__timing__setup__ws" in kept[8]["error"]
    assert all("error" not in line for i, line in enumerate(kept) if i != 8)


def test_jsonl_blank_lines_crlf_and_errors_are_read_as_each_line_alone(tmp_path: Path, monkeypatch):
    """Lines ending in CRLF, blank lines (also the last), a cut line: in blocks of several lines
    or one, each line is scored, or refused with the error its bytes alone get from the full
    reader (same line and column), in its place."""
    from closer.reward import batch
    from closer.reward.errors import MetricsFileError
    from closer.reward.metrics_file import values_from_bytes

    targets = load_targets(ALL_GATES)
    records = [json.dumps(r).encode() for r in _records(4, seed=5)]
    texts = [records[0] + b"\r", records[1][:-5], b"", records[2], b"  ", records[3], b""]
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b"\n".join(texts) + b"\n")
    for block in (batch.JSONL_BLOCK, 600, 100):
        monkeypatch.setattr(batch, "JSONL_BLOCK", block)
        result = _batch(path, "--keep-going")
        assert result.code == 0, result.err
        lines = [json.loads(line) for line in result.out.splitlines()]
        assert [ln["input"] for ln in lines] == [f"{path}:{n}" for n in range(1, len(texts) + 1)]
        for n, (line, text) in enumerate(zip(lines, texts), start=1):
            try:
                values = values_from_bytes(text, f"{path}:{n}")
            except MetricsFileError as exc:
                assert line == {"input": f"{path}:{n}", "error": str(exc)}, block
                continue
            single = tmp_path / "single.json"
            single.write_bytes(json.dumps(values).encode())
            expected = scalar_line(f"{path}:{n}", compute_reward(load_metrics(single), targets))
            assert exact(line) == exact(json.loads(expected)), (block, n)
        assert sum("error" in ln for ln in lines) == 4  # the cut line and the three blank ones


def test_directory_files_of_exactly_a_read_block_and_empty_files(tmp_path: Path, monkeypatch):
    """A file whose size is a whole number of read blocks is read to its end; an empty one is
    refused naming it, as the scalar path refuses it."""
    from closer.reward import batch

    targets = load_targets(ALL_GATES)
    folder = tmp_path / "d"
    folder.mkdir()
    raw = json.dumps(closer_values()).encode()
    raw += b" " * (len(raw) % 2)  # an even size: two blocks of half of it are the whole file
    (folder / "a.json").write_bytes(raw)
    for block in (len(raw), len(raw) // 2, len(raw) + 1):
        monkeypatch.setattr(batch, "READ_BLOCK", block)
        result = _batch(folder)
        assert result.code == 0, (block, result.err)
        expected = scalar_line(str(folder / "a.json"), compute_reward(load_metrics(folder / "a.json"), targets))
        assert exact(json.loads(result.out)) == exact(json.loads(expected))
    (folder / "b.json").write_bytes(b"")
    assert_refused(_batch(folder), "b.json")


def test_directory_files_another_user_owns_are_read_without_noatime(tmp_path: Path, monkeypatch):
    """O_NOATIME is refused (EPERM) for a file the process does not own: that file and the rest
    are opened as plain readers and scored; any other refusal is the file's error."""
    import errno
    import os

    from closer.reward import batch

    if not batch._NOATIME:
        return  # not Linux: no such flag to fall back from
    real_open = os.open
    refused: list[str] = []

    def owner_only(path, flags, *args, **kwargs):
        if flags & batch._NOATIME and str(path).endswith(".json"):
            refused.append(str(path))
            raise PermissionError(errno.EPERM, "Operation not permitted")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", owner_only)
    targets = load_targets(ALL_GATES)
    for i, values in enumerate(_records(3)):
        (tmp_path / f"r{i}.json").write_text(json.dumps(values))
    result = _batch(tmp_path)
    assert result.code == 0, result.err
    assert refused == ["r0.json"]  # refused once, then no longer asked for
    for line, file in zip(result.out.splitlines(), sorted(tmp_path.glob("*.json"))):
        assert exact(json.loads(line)) == exact(json.loads(
            scalar_line(str(file), compute_reward(load_metrics(file), targets))))

    def denied(path, flags, *args, **kwargs):
        if str(path).endswith("r1.json"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    result = _batch(tmp_path)
    assert_refused(result, "r1.json")
    assert "Permission denied" in result.err


def test_file_names_with_quotes_commas_and_backslashes_are_encoded_as_orjson_does(tmp_path: Path):
    """The labels are encoded together and split at `","`: names holding that run, or a quote
    before a comma, must come out byte for byte as their own `orjson.dumps`."""
    targets = load_targets(ALL_GATES)
    names = ['a",".json', 'b\\",.json', 'c",.json', 'd,".json', 'e\\.json', 'f é.json', 'g.json']
    for folder, folder_names in ((tmp_path / "odd", names), (tmp_path / "plain", ["r0.json", "r1.json"])):
        folder.mkdir()
        for name, values in zip(folder_names, _records(len(folder_names))):
            (folder / name).write_text(json.dumps(values))
        result = _batch(folder)
        assert result.code == 0, result.err
        files = sorted(folder.glob("*.json"))
        lines = result.out.encode().splitlines()
        assert len(lines) == len(files)
        for line, file in zip(lines, files):
            assert line.startswith(b'{"input":' + orjson.dumps(str(file)) + b',"schema_version":')
            expected = scalar_line(str(file), compute_reward(load_metrics(file), targets))
            assert exact(json.loads(line)) == exact(json.loads(expected))


def test_labels_ending_in_a_quote_and_comma_fall_back_to_one_encoding_each():
    """A label ending in `",` encodes to `...\\","`, which a split at `","` would cut wrongly."""
    from closer.reward.lines import _unquoted

    for labels in (['q\\",', "é", "x"], ['",', ',"', "\\"], ["a", "b:1"], [""]):
        assert [b'"' + piece + b'"' for piece in _unquoted(labels)] == list(map(orjson.dumps, labels))
