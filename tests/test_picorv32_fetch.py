"""`closer design fetch picorv32`: pinned commit, SHA-256 check, cache layout, clear errors."""

from __future__ import annotations

import hashlib
import subprocess

import pytest
from click.testing import CliRunner

from closer.designs import fetch
from closer.errors import InputError, ToolError
from tests.picorv32_support import DESIGN, mirror_path

PINNED = "87c89acc18994c8cf9a2311e871818e87d304568"


def test_design_toml_pins_commit_and_hash():
    spec = fetch.load_fetch_spec(DESIGN)
    assert spec.commit == PINNED
    assert spec.rtl == ["picorv32.v"]
    assert set(spec.sha256) == {"picorv32.v"}


def test_short_commit_rejected():
    with pytest.raises(ValueError, match="40-character"):
        fetch.FetchSpec(url="u", commit="87c89ac", rtl=[], sha256={})


def test_hash_check_accepts_match_and_rejects_tampering(tmp_path):
    (tmp_path / "picorv32.v").write_text("module picorv32; endmodule\n")
    digest = hashlib.sha256((tmp_path / "picorv32.v").read_bytes()).hexdigest()
    spec = fetch.FetchSpec(url="u", commit=PINNED, rtl=["picorv32.v"], sha256={"picorv32.v": digest})
    fetch.verify_hashes(tmp_path, spec)
    (tmp_path / "picorv32.v").write_text("module picorv32; wire bug; endmodule\n")
    with pytest.raises(InputError, match=r"picorv32\.v: SHA-256 .* does not match the pinned"):
        fetch.verify_hashes(tmp_path, spec)


def test_missing_local_source_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv(fetch.CACHE_ENV, str(tmp_path / "cache"))
    with pytest.raises(InputError, match="no such directory"):
        fetch.fetch_design(DESIGN, from_path=tmp_path / "nowhere")


def test_source_without_pinned_commit_fails_and_leaves_no_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(fetch.CACHE_ENV, str(tmp_path / "cache"))
    repo = tmp_path / "other"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "picorv32.v").write_text("// not upstream\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit",
                    "-qm", "x"], check=True)
    with pytest.raises(ToolError, match="does not contain the pinned commit"):
        fetch.fetch_design(DESIGN, from_path=repo)
    assert fetch.local_source_available(DESIGN) is None
    assert list((tmp_path / "cache" / DESIGN).iterdir()) == []  # no half tree left behind


def test_cli_reports_unavailable_source(tmp_path, monkeypatch):
    monkeypatch.setenv(fetch.CACHE_ENV, str(tmp_path / "cache"))
    result = CliRunner().invoke(fetch.fetch_command, [DESIGN, "--from", str(tmp_path / "nope")])
    assert result.exit_code != 0


def test_fetch_from_mirror_into_cache(tmp_path, monkeypatch):
    mirror = mirror_path()
    if mirror is None:
        pytest.skip("no local PicoRV32 mirror: set $CLOSER_PICORV32_SRC to a clone of "
                    "YosysHQ/picorv32 (CI has no GitHub access)")
    monkeypatch.setenv(fetch.CACHE_ENV, str(tmp_path / "cache"))
    src = fetch.fetch_design(DESIGN, from_path=mirror)
    paths = fetch.fetch_paths(DESIGN)
    assert src == paths.src == tmp_path / "cache" / DESIGN / PINNED / "src"
    assert not (src / ".git").exists()
    assert fetch.local_source_available(DESIGN) == src
    # the debug task's copy: upstream plus our fault patches, one changed line per fault
    golden = (src / "picorv32.v").read_text().splitlines()
    faulty = (paths.debug / "picorv32.v").read_text().splitlines()
    changed = [i for i, (a, b) in enumerate(zip(golden, faulty)) if a != b]
    assert len(golden) == len(faulty) and len(changed) == len(fetch.fault_patches(DESIGN)) == 4
    # a second fetch re-verifies the cache without cloning
    assert fetch.fetch_design(DESIGN, from_path=tmp_path / "unused") == src
    (paths.root / "mutants").mkdir()  # something derived, kept beside the tree
    assert fetch.fetch_design(DESIGN, from_path=mirror, refresh=True) == src
    assert (paths.root / "mutants").is_dir()
    (src / "picorv32.v").write_text("tampered\n")
    with pytest.raises(InputError, match="does not match the pinned"):
        fetch.fetch_design(DESIGN)


def test_schemas_match_models_and_files_validate():
    import json
    import tomllib

    import jsonschema

    from closer.paths import schema_path
    from closer.picorv32.layout import pico_paths
    from closer.picorv32.schemas import SCHEMAS, schema_text

    for name, model in SCHEMAS.items():
        assert schema_path(name).read_text() == schema_text(model), f"regenerate {name}"
    paths = pico_paths()
    files = {"design-fetch": tomllib.loads(paths.design_toml.read_text())["fetch"],
             "picorv32-firmware-manifest": tomllib.loads(paths.manifest.read_text()),
             "picorv32-fmax-task": tomllib.loads(paths.task_toml("fmax").read_text()),
             "picorv32-debug-hidden": tomllib.loads(paths.debug_hidden.read_text())}
    for name, data in files.items():
        jsonschema.validate(data, json.loads(schema_path(name).read_text()))
    broken = dict(files["picorv32-fmax-task"], reward={"target_mhz": "fast"})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, json.loads(schema_path("picorv32-fmax-task").read_text()))
