"""The timing-driven ABC script choice (closer.flow.synth_choice): ABC's estimate and target read
from a synthesis log, the order of the scripts, the kept one. The real runs: gcd at 10 ns keeps the
first script (tests/test_flow.py), gcd at 5 ns the second (tests/test_flow_timing_5ns.py), the weak
gcd the first (tests/test_flow_settings.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from closer.errors import ToolError
from closer.flow.settings import SynthSettings, SynthStrategy, abc_scripts
from closer.flow.synth_choice import AbcEstimate, Attempt, abc_estimate, choice_metrics, chosen, needs_next

# the lines of a Yosys 0.70 synthesis log the parser reads (gcd at 5 ns, the `balanced` script);
# the first `abc` call is an earlier mapping of the same log without -D
_LOG = """\
yosys> abc -fast
ABC: WireLoad = "none"  Gates =     12 (  1.0 %)   Cap =  1.0 ff (  1.0 %)   Area =       10.00 ( 10.0 %)   Delay =   999.00 ps  (  1.0 %)
-- Running command `abc -showtmp -D 3500 -constr /x/sc_abc.constraints -script "+strash;stime,-p" -liberty /x/ss.lib' --
yosys> abc -showtmp -D 3500 -constr /x/sc_abc.constraints -script "+strash;stime,-p" -liberty /x/ss.lib -dont_use a
ABC: + &nf -D 3500
ABC: WireLoad = "none"  Gates =    295 ( 10.7 %)   Cap =  6.1 ff (  8.1 %)   Area =     1667.90 ( 74.6 %)   Delay =  4387.33 ps  ( 12.0 %)
yosys> clean -purge
"""


def _log(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "synth.log"
    path.write_text(text)
    return path


def test_estimate_is_the_last_mappings_stime_against_its_target(tmp_path: Path):
    estimate = abc_estimate(_log(tmp_path, _LOG))
    assert estimate == AbcEstimate(4387.33, 3500.0) and not estimate.meets
    no_clock = abc_estimate(_log(tmp_path, _LOG.replace(" -D 3500 ", " ")))
    assert no_clock.target_ps is None and no_clock.meets
    assert AbcEstimate(3488.0, 3500.0).meets


@pytest.mark.parametrize("text, match", [
    ("yosys> abc -fast\n", "no `abc -showtmp`"),
    (_LOG.split("ABC: + &nf")[0], "no `stime -p` delay"),
])
def test_estimate_refuses_a_log_without_the_mapping(tmp_path: Path, text: str, match: str):
    with pytest.raises(ToolError, match=match):
        abc_estimate(_log(tmp_path, text))


def test_balanced_tries_the_syn2_script_second_the_others_one_script():
    balanced = abc_scripts(SynthSettings())
    assert [s.name for s in balanced] == ["balanced", "balanced+syn2"]
    assert "&syn2" not in balanced[0].script and "&st;&syn2;&if,-g,-K,6;&synch2" in balanced[1].script
    # the settings reach both scripts alike
    assert all(s.script.endswith("buffer,-N,7,-p;upsize,{D};dnsize,{D};stime,-p") for s in balanced)
    assert all("buffer" not in s.script for s in abc_scripts(SynthSettings(synth_buffering=False)))
    for strategy in (SynthStrategy.AREA, SynthStrategy.DELAY):
        assert [s.name for s in abc_scripts(SynthSettings(synth_strategy=strategy))] == [strategy.value]


def _attempt(name: str, delay: float, target: float = 3500.0) -> Attempt:
    return Attempt(name, f"+{name}", AbcEstimate(delay, target))


def test_the_first_script_that_meets_is_kept_else_the_fastest():
    first, second = _attempt("balanced", 3400.0), _attempt("balanced+syn2", 3000.0)
    assert not needs_next([first]) and chosen([first, second]) is first  # faster, but not needed
    missed = _attempt("balanced", 4387.33)
    assert needs_next([missed]) and chosen([missed, _attempt("balanced+syn2", 3488.0)]).name == "balanced+syn2"
    both_miss = [_attempt("balanced", 3900.0), _attempt("balanced+syn2", 4100.0)]
    assert needs_next(both_miss) and chosen(both_miss) is both_miss[0]
    tie = [_attempt("balanced", 3900.0), _attempt("balanced+syn2", 3900.0)]
    assert chosen(tie) is tie[0]


def test_choice_metrics_record_every_attempt():
    attempts = [_attempt("balanced", 4387.33), _attempt("balanced+syn2", 3487.99)]
    assert choice_metrics(attempts) == {
        "closer__synth__abc_script": "balanced+syn2", "closer__synth__abc_delay_ps": 3487.99,
        "closer__synth__abc_target_ps": 3500.0, "closer__synth__abc_scripts_tried": ["balanced", "balanced+syn2"],
        "closer__synth__abc_delays_ps_tried": [4387.33, 3487.99]}


# Yosys's ABC pass on a design without combinational logic (a task's empty skeleton): it never
# extracts a netlist for ABC, so ABC runs no script and prints no estimate
_EMPTY = """\
yosys> abc -showtmp -D 7000 -constr /x/sc_abc.constraints -script "+strash;stime,-p" -liberty /x/ss.lib
22. Executing ABC pass (technology mapping using ABC).
22.1. Summary of detected clock domains:
Removing global temp directory.
yosys> clean -purge
"""


def test_a_design_without_logic_meets_and_an_extracted_one_without_estimate_is_refused(tmp_path: Path):
    estimate = abc_estimate(_log(tmp_path, _EMPTY))
    assert estimate == AbcEstimate(0.0, 7000.0) and estimate.meets
    extracted = _EMPTY.replace("Removing", "22.2. Extracting gate netlist of module `\\\\top' to `x.blif'..\nRemoving")
    with pytest.raises(ToolError, match="no `stime -p` delay"):
        abc_estimate(_log(tmp_path, extracted))
