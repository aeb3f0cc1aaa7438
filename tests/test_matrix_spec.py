"""The matrix spec: the shipped smoke spec loads; bad specs fail with one line naming the file and
the field (exit 2, no traceback)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from closer.errors import InputError
from closer.matrix.spec import ClusterKind, load_spec

GOOD = """designs = ["gcd"]
kinds = ["A", "B", "C"]
budgets = ["low"]
trials = 2
[[agents]]
agent = "oracle"
[[agents]]
agent = "null"
"""


def _spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return path


def test_the_shipped_smoke_spec_loads(repo):
    spec = load_spec(repo.root / "examples" / "matrix" / "gcd-smoke.toml")
    assert [k.value for k in spec.kinds] == ["A", "B", "C"] and spec.budgets == ["low"] and spec.trials == 2
    assert [a.resolve().label for a in spec.agents] == ["oracle", "null", "sweep"]
    assert spec.cluster.kind is ClusterKind.LOCAL and spec.cluster.workers == 2 and spec.compose


def test_a_good_spec_gets_defaults(tmp_path: Path):
    spec = load_spec(_spec(tmp_path, GOOD))
    assert spec.cluster.kind is ClusterKind.LOCAL and spec.wall_s is None and not spec.unchecked


@pytest.mark.parametrize(("change", "field"), [
    (("budgets = [\"low\"]", "budgets = [\"huge\"]"), "budgets"),
    (("trials = 2", "trials = 0"), "trials"),
    (("kinds = [\"A\", \"B\", \"C\"]", "kinds = [\"A\", \"C\"]"), "compose = true needs"),
    (("kinds = [\"A\", \"B\", \"C\"]", "kinds = [\"A\", \"A\", \"B\", \"C\"]"), "kinds"),
    (("agent = \"null\"", "agent = \"rm -rf /\""), "agents[1]"),
    (("agent = \"null\"", "agent = \"oracle\""), "share a label"),
    (("trials = 2", "trials = 2\nbogus = 1"), "bogus"),
    (("trials = 2", "trials = 2\n[cluster]\nkind = \"address\""), "address is required"),
    (("trials = 2", "trials = 2\n[cluster]\nkind = \"local\"\noptions = {cores = 4}"), "options"),
    (("trials = 2", "trials = 2\nwall_s = nan"), "wall_s"),
])
def test_bad_specs_name_the_file_and_field(tmp_path: Path, change, field):
    path = _spec(tmp_path, GOOD.replace(*change))
    with pytest.raises(InputError) as exc:
        load_spec(path)
    assert str(path) in str(exc.value) and field in str(exc.value) and "\n" not in str(exc.value)


def test_the_cli_exits_2_with_one_line(tmp_path: Path):
    path = _spec(tmp_path, GOOD.replace("trials = 2", "trials = -1"))
    done = subprocess.run([sys.executable, "-m", "closer", "matrix", "run", str(path), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "trials" in done.stderr and str(path) in done.stderr
    assert not (tmp_path / "o").exists()


def test_an_hpc_spec_makes_the_jobqueue_cluster_with_its_options(tmp_path: Path):
    from closer.matrix.engine import jobqueue_cluster

    spec = load_spec(_spec(tmp_path, GOOD + '[cluster]\nkind = "slurm"\nworkers = 3\n'
                                         'options = {cores = 2, memory = "4GB", queue = "eda", walltime = "04:00:00", '
                                         'scheduler_options = {dashboard_address = ":0"}}\n'))
    with jobqueue_cluster(spec.cluster) as cluster:  # no job is submitted before scale()
        script = cluster.job_script()
    assert "#SBATCH -p eda" in script and "#SBATCH -t 04:00:00" in script and "--cpus-per-task=2" in script
    bad = load_spec(_spec(tmp_path, GOOD + '[cluster]\nkind = "pbs"\noptions = {no_such_option = 1}\n'))
    with pytest.raises(InputError, match=r"\[cluster\] options for pbs"):
        jobqueue_cluster(bad.cluster)
