"""`closer design fetch picorv32`: pinned commit, SHA-256 check, cache layout, clear errors."""

from __future__ import annotations

import hashlib
import json
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
    assert {"picorv32.v", "testbench.v", "Makefile", "firmware/start.S"} <= set(spec.sha256)
    assert spec.package is not None and spec.package.version == "1.0.post218"


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


def test_fetch_from_package_into_cache(tmp_path, monkeypatch):
    """The default route: the pinned registry package, no network beyond the package index."""
    monkeypatch.setenv(fetch.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(fetch.load_fetch_spec(DESIGN).source_env, raising=False)
    src = fetch.fetch_design(DESIGN)
    paths = fetch.fetch_paths(DESIGN)
    assert src == paths.src == tmp_path / "cache" / DESIGN / PINNED / "src"
    record = json.loads(paths.record.read_text())
    assert record["source"] == "pypi:pythondata-cpu-picorv32==1.0.post218"
    assert record["source_kind"] == "package"
    for rel in ("picorv32.v", "testbench.v", "Makefile", "firmware/start.S"):
        assert (src / rel).is_file(), rel
    assert not list(src.rglob("__pycache__"))
    assert fetch.local_source_available(DESIGN) == src
    # the debug task's copy: upstream plus our fault patches, one changed line per fault
    golden = (src / "picorv32.v").read_text().splitlines()
    faulty = (paths.debug / "picorv32.v").read_text().splitlines()
    changed = [i for i, (a, b) in enumerate(zip(golden, faulty)) if a != b]
    assert len(golden) == len(faulty) and len(changed) == len(fetch.fault_patches(DESIGN)) == 4
    # a second fetch re-verifies the cache without copying
    assert fetch.fetch_design(DESIGN, from_path=tmp_path / "unused") == src
    (paths.root / "mutants").mkdir()  # something derived, kept beside the tree
    assert fetch.fetch_design(DESIGN, refresh=True) == src
    assert (paths.root / "mutants").is_dir()
    (src / "testbench.v").write_text("tampered\n")
    with pytest.raises(InputError, match=r"testbench\.v: SHA-256 .* does not match the pinned"):
        fetch.fetch_design(DESIGN)


def test_cli_fetches_from_package(tmp_path, monkeypatch):
    monkeypatch.setenv(fetch.CACHE_ENV, str(tmp_path / "cache"))
    result = CliRunner().invoke(fetch.fetch_command, [DESIGN])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(fetch.fetch_paths(DESIGN).src)


def _spec_with(**package) -> fetch.FetchSpec:
    spec = fetch.load_fetch_spec(DESIGN)
    return spec.model_copy(update={"package": spec.package.model_copy(update=package)})


def test_package_of_another_version_is_refused():
    with pytest.raises(InputError, match="design pins 9.9"):
        fetch.resolve_source(_spec_with(version="9.9"), None)


def test_package_not_installed_is_a_clear_error():
    with pytest.raises(InputError, match="is not installed: run scripts/bootstrap.sh"):
        fetch.resolve_source(_spec_with(name="pythondata-cpu-nothing"), None)


def test_package_with_another_commit_is_refused():
    spec = fetch.load_fetch_spec(DESIGN).model_copy(update={"commit": "0" * 40})
    with pytest.raises(InputError, match="ships commit 87c89acc.* pins 0000"):
        fetch.resolve_source(spec, None)


def test_source_git_and_from_path_take_precedence(tmp_path):
    spec = fetch.load_fetch_spec(DESIGN)
    assert fetch.resolve_source(spec, None, "git").location == spec.url
    assert fetch.resolve_source(spec, tmp_path).location == str(tmp_path)
    assert fetch.resolve_source(spec, None).is_package
    with pytest.raises(InputError, match="known sources"):
        fetch.resolve_source(spec, None, "ftp")


def test_fetch_from_mirror_into_cache(tmp_path, monkeypatch):
    """The git route from a local clone: runs where one is given ($CLOSER_PICORV32_SRC); the
    package route above covers the same cache layout everywhere."""
    mirror = mirror_path()
    if mirror is None:
        mirror = _clone_of_package(tmp_path)
    monkeypatch.setenv(fetch.CACHE_ENV, str(tmp_path / "cache"))
    if mirror.name == "package-clone":
        # a clone made here has other commit ids: the pinned commit is refused, nothing cached
        with pytest.raises(ToolError, match="does not contain the pinned commit"):
            fetch.fetch_design(DESIGN, from_path=mirror)
        assert fetch.local_source_available(DESIGN) is None
        return
    src = fetch.fetch_design(DESIGN, from_path=mirror)
    assert json.loads(fetch.fetch_paths(DESIGN).record.read_text())["source_kind"] == "git"
    assert not (src / ".git").exists()


def _clone_of_package(tmp_path):
    repo = tmp_path / "package-clone"
    spec = fetch.load_fetch_spec(DESIGN)
    import shutil

    shutil.copytree(fetch.package_tree(spec.package, spec.commit), repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit",
                    "-qm", "x"], check=True)
    return repo


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
