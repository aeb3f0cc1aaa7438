"""Coverage task oracle: golden gate, Verilator line coverage; both directions."""

from __future__ import annotations

import pytest

from closer.errors import ToolError
from closer.picorv32.coverage import evaluate_coverage, read_line_coverage
from closer.picorv32.layout import pico_paths
from closer.paths import repo_paths
from tests.picorv32_support import picorv32_source

# Records in Verilator's coverage.dat format (keys \1-separated, key/value \2-separated).
_DAT = "\n".join([
    "# SystemC::Coverage-3",
    "C '\x01f\x02/x/picorv32.v\x01l\x0210\x01n\x021\x01page\x02v_line/picorv32\x01o\x02block' 5",
    "C '\x01f\x02/x/picorv32.v\x01l\x0211\x01n\x022\x01page\x02v_line/picorv32\x01o\x02if' 0",
    "C '\x01f\x02/x/picorv32.v\x01l\x0212\x01n\x023\x01page\x02v_branch/picorv32\x01o\x02else' 0",
    "C '\x01f\x02/x/other.v\x01l\x023\x01n\x024\x01page\x02v_line/other\x01o\x02block' 1",
])


def test_coverage_dat_parser(tmp_path):
    dat = tmp_path / "coverage.dat"
    dat.write_text(_DAT)
    line = read_line_coverage(dat)
    assert (line.covered, line.total) == (1, 2)
    with pytest.raises(ToolError, match="no line-coverage points"):
        read_line_coverage(dat, "absent.v")


def test_false_alarm_on_golden_scores_zero(tmp_path):
    src = picorv32_source()
    result = evaluate_coverage(src / "picorv32.v", repo_paths().root / "tests" / "fixtures" / "picorv32",
                               "test_false_alarm", tmp_path)
    assert not result.golden_passed and result.golden_failed == 1 and result.score == 0.0
    assert result.line_coverage is None  # coverage is not even measured


@pytest.mark.slow  # a Verilator build of the whole core: ~60 s CPU, minutes of wall on a busy host
def test_reference_testbench_passes_and_is_measured(tmp_path):
    src = picorv32_source()
    result = evaluate_coverage(src / "picorv32.v", pico_paths().oracle_dir, "test_picorv32", tmp_path,
                               score_mutants=False)
    assert result.golden_passed and result.golden_tests == 6
    assert 0.4 < result.line_coverage < 1.0  # recorded 90/156 = 0.577 in docs/picorv32.md
    assert result.score > 0.0
