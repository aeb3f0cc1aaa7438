"""An exported Harbor task laid out the way its container has it, in temporary folders (there is no
Docker here): the workspace (/workspace), the tests Harbor uploads after the agent (/tests), the
verifier's folder (/logs/verifier), closer's installation (/opt/closer, the exported checkout
with this machine's venv, which bootstrap.sh built the same way the image's RUN does) and the
exported PDK subset (/opt/pdk: the session's flow cache serves its flows, keyed by the PDK's
content wherever it lies, from the other tests' runs on PDK_ROOT). The
exported scripts take each path from the variable closer.tasks.harbor_layout names.
The container-layout tests are split by task kind so the CI's workers run them side by side."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from closer.paths import repo_paths
from closer.tasks.generate import generate_suite
from closer.tasks.harbor import export_harbor
from closer.tasks.harbor_layout import HarborPaths
from closer.tasks.models import TaskKind
from closer.tasks.paths import SuitePaths

# B's null evaluation (the physical flow's repair loop on the weak RTL) took 24 min under a load
# average of 17 on 2 cores; Harbor's own verifier timeout for B and C is 7200 s.
VERIFIER_TIMEOUT_S = 3600


@dataclass(frozen=True)
class Container:
    root: Path
    exported: HarborPaths

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def tests(self) -> Path:
        return self.root / "tests"

    @property
    def verifier(self) -> Path:
        return self.root / "logs" / "verifier"

    @property
    def closer_home(self) -> Path:
        return self.root / "opt" / "closer"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # test.sh sets its own
        env.update(CLOSER_WORKSPACE=str(self.workspace), CLOSER_TESTS_DIR=str(self.tests),
                   CLOSER_VERIFIER_DIR=str(self.verifier), CLOSER_HOME=str(self.closer_home),
                   PDK_ROOT=str(self.exported.pdk))
        env.pop("CLOSER_BROKER", None)
        return env

    def solve(self) -> None:
        done = subprocess.run([str(self.exported.solve_sh)], env=self.env(), capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr

    def verify(self, cwd: Path | None = None) -> tuple[dict, str | None]:
        """Run tests/test.sh (in `cwd`); (reward.json, reason.txt or None)."""
        proc = subprocess.Popen(["bash", str(self.tests / "test.sh")], env=self.env(), cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=VERIFIER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the evaluator and its tools with it
            proc.communicate()
            raise
        assert proc.returncode == 0, output
        rewards = json.loads((self.verifier / "reward.json").read_text())
        reason = self.verifier / "reason.txt"
        return rewards, reason.read_text().strip() if reason.is_file() else None


def export_gcd_low(tmp_path_factory, kind: TaskKind) -> HarborPaths:
    out = tmp_path_factory.mktemp("suite")
    generate_suite("gcd", out, kinds=[kind], budgets=["low"])
    return HarborPaths(export_harbor(SuitePaths(out).task(f"gcd-{kind.value}-low").root, out / "harbor"))


def lay_out(exported: HarborPaths, root: Path) -> Container:
    container = Container(root, exported)
    shutil.copytree(exported.workspace, container.workspace)
    shutil.copytree(exported.tests, container.tests)
    shutil.copytree(exported.closer_src, container.closer_home)
    (container.closer_home / ".venv").symlink_to(repo_paths().venv.resolve())
    return container


def check_oracle_and_null(exported: HarborPaths, tmp_path: Path) -> None:
    """The oracle (solution/solve.sh) scores 1.0; the untouched workspace (null) scores below 1 with
    a reason. Both through tests/test.sh, as Harbor's verifier runs it."""
    oracle = lay_out(exported, tmp_path / "oracle")
    oracle.solve()
    rewards, reason = oracle.verify()
    assert rewards["reward"] == 1.0 and rewards["scored"] == 1.0, reason
    assert all(isinstance(v, float) for v in rewards.values())
    null = lay_out(exported, tmp_path / "null")
    rewards, reason = null.verify()
    assert rewards["reward"] < 1.0 and reason, rewards
    assert rewards["accepted"] == 1.0, reason  # evaluated, not a crash: the untouched workspace is accepted
