"""The exported gcd-C-low Harbor task in its container layout (tests/harbor_support.py): the oracle's
solution/solve.sh then tests/test.sh writes reward 1.0; the untouched workspace (null) below 1."""

from __future__ import annotations

import pytest

from closer.tasks.models import TaskKind
from tests.harbor_support import check_oracle_and_null, export_gcd_low

pytestmark = pytest.mark.slow


def test_oracle_scores_one_and_null_below_one(tmp_path_factory, tmp_path) -> None:
    check_oracle_and_null(export_gcd_low(tmp_path_factory, TaskKind.C), tmp_path)
