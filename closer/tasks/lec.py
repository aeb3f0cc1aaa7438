"""Logic equivalence of the RTL and the final (synthesized) netlist: the `lec` gate's
`closer__lec__result`.

    run_lec(LecJob(...)) -> LecResult (equivalent | not_equivalent | inconclusive)

Up to three tool runs, each script returned as text (commands as data), each stopped at its limit:

1. Register-correspondence proof (`cut_script`, closer.tasks.lec_miter, `yosys-abc`). gold = the
   RTL read by slang (the flow's front end) through the flow's own synthesis prefix
   (FLOW_SYNTH_PREFIX, so its don't-cares are resolved as the flow's synthesis resolved them; any
   left become 0), gate = the netlist with the Liberty's cell functions; both as and/not gates and
   flip-flops. lec_miter pairs the registers (by name, then by next-state signature) and writes the
   miter; ABC's `&cec` proves it -> equivalent. Anything else (a difference that may lie in a state
   no reset reaches, an unsupported cell, a time-out) passes on to 2, its outcome kept in the reason.
2. Yosys proof. gold = the RTL read by slang, flattened with the flow's hierarchy separator and
   through Yosys's coarse synthesis (`synth -run :fine`: opt and the same FSM re-encoding the
   flow's synthesis does, so the state registers line up by name), its comparison and reduction
   cells mapped to gates (SAT_UNSAFE_CELLS), registers unmapped to plain flip-flops and split to
   bits; gate = the netlist as in 1. `equiv_make` pairs same-named signals,
   `equiv_simple`/`equiv_induct` (with undef modelling: an X in the RTL is a don't-care) prove
   them; all proven -> equivalent.
3. Refutation (only when something stays unproven). A miter of gold and gate, the reset input
   held active in the first cycle, every register starting at 0, then `sat -seq N` searches N
   cycles of free inputs for an output difference. Found -> not_equivalent (with the cycle);
   not found or timed out -> inconclusive (a difference later than N cycles, or unreachable
   state that induction could not rule out).

A netlist whose ports do not match the RTL's (`equiv_make` cannot pair them) is not_equivalent.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from closer import metrics as mk
from closer.errors import InputError, ToolMissing, ToolTimeout
from closer.flow.settings import HIERARCHY_SEPARATOR
from closer.procs import Command, run
from closer.toolchain import search_path

EQUIVALENT, NOT_EQUIVALENT, INCONCLUSIVE = mk.LEC_CHOICES
DECIDED = (EQUIVALENT, NOT_EQUIVALENT)
ACTIVE_HIGH_RESETS = ("reset", "rst", "areset", "arst")
ACTIVE_LOW_RESETS = ("reset_n", "resetn", "rst_n", "rstn", "areset_n", "arst_n", "aresetn")


@dataclass(frozen=True)
class ResetPort:
    name: str
    active_high: bool = True


@dataclass
class LecJob:
    rtl: list[Path]
    top: str
    netlist: Path
    liberty: Path
    work: Path
    parameters: dict[str, object] = field(default_factory=dict)
    reset: ResetPort | None = None
    bmc_cycles: int = 16
    timeout_s: float = 300.0


class StoredLec(BaseModel):
    """A decided LEC result as the flow cache keeps it."""

    model_config = ConfigDict(extra="forbid")
    result: Literal[mk.LEC_CHOICES[0], mk.LEC_CHOICES[1]]
    reason: str
    proven: int = Field(ge=0)
    unproven: int = Field(ge=0)
    counterexample_cycle: int | None
    wall_s: float = Field(ge=0)
    logs: list[str]


@dataclass
class LecResult:
    result: str
    reason: str
    proven: int = 0
    unproven: int = 0
    counterexample_cycle: int | None = None
    logs: list[Path] = field(default_factory=list)
    wall_s: float = 0.0

    def record(self, work: Path) -> dict:
        """The result as JSON, its logs relative to `work` (closer.flow.reuse stores it)."""
        return StoredLec(result=self.result, reason=self.reason, proven=self.proven, unproven=self.unproven,
                         counterexample_cycle=self.counterexample_cycle, wall_s=self.wall_s,
                         logs=[log.relative_to(work).as_posix() for log in self.logs]).model_dump()

    @classmethod
    def from_record(cls, record: dict, old_work: Path, work: Path) -> LecResult | None:
        """A stored result whose files now lie in `work` (the reason names its logs there); None
        when the record is not one (a damaged cache entry is a miss)."""
        try:
            stored = StoredLec.model_validate(record)
        except ValidationError:
            return None
        logs = [work / rel for rel in stored.logs]
        if not all(log.resolve().is_relative_to(work.resolve()) for log in logs):
            return None
        return cls(result=stored.result, reason=stored.reason.replace(str(old_work), str(work)),
                   proven=stored.proven, unproven=stored.unproven,
                   counterexample_cycle=stored.counterexample_cycle, wall_s=stored.wall_s, logs=logs)

    def metrics(self) -> dict[str, object]:
        return {mk.LEC_RESULT: self.result, "closer__lec__proven": self.proven,
                "closer__lec__unproven": self.unproven, "closer__lec__reason": self.reason}


def _quote(path: Path) -> str:
    text = str(path)
    if any(c in text for c in ' "\\'):
        raise InputError(f"{text}: Yosys scripts here do not quote paths with spaces, quotes or backslashes")
    return text


def read_rtl_lines(rtl: list[Path], top: str, parameters: dict[str, object] | None = None) -> list[str]:
    """The Yosys commands that read candidate RTL as the flow does: slang (`read_slang`, the flow's
    front end), with the defines and include folders every other consumer uses
    (closer.tasks.rtl_policy; SYNTHESIS is not defined: neither the flow's slang nor the simulator
    defines it) and the configuration's parameters on the top. Read by Yosys's own `read_verilog`,
    659 of firdma's write DMA's 802 signals (its beat queue's) stayed unproven against the flow's
    netlist; read by slang, all 803 were proven."""
    from closer.tasks.rtl_policy import RTL_DEFINES, include_dirs

    flags = "".join(f" -D {k}={v}" if v != "" else f" -D {k}" for k, v in RTL_DEFINES.items())
    flags += "".join(f" -I {_quote(d)}" for d in include_dirs(rtl))
    flags += "".join(f" -G {_parameter(k, v)}" for k, v in (parameters or {}).items())
    # the flow's own read_slang options (SiliconCompiler's sc_read_design_verilog) without its
    # implicit SYNTHESIS define, the hierarchy kept so that `flatten` names its registers as the
    # flow's synthesis does
    options = "--no-synthesis-define --keep-hierarchy --ignore-assertions --ignore-timing --allow-use-before-declare"
    return [f"read_slang {options} --top {top}{flags} " + " ".join(_quote(p) for p in rtl), "setattr -unset init"]


def _parameter(name: str, value: object) -> str:
    """`NAME=VALUE` for slang's -G: numbers as they are, a string in double quotes."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", name):
        raise InputError(f"parameter name {name!r}: not an identifier")
    if isinstance(value, bool):
        return f"{name}={int(value)}"
    if isinstance(value, (int, float)):
        return f"{name}={value}"
    text = str(value)
    if not re.fullmatch(r"[A-Za-z0-9_.+\-]*", text):
        raise InputError(f"parameter {name} = {text!r}: LEC passes letters, digits and _.+- only")
    return f'{name}="{text}"'


# the coarse cells mapped to gates before the proof (see _gold_lines)
SAT_UNSAFE_CELLS = ("t:$eq", "t:$ne", "t:$lt", "t:$le", "t:$gt", "t:$ge", "t:$logic_not", "t:$logic_and",
                    "t:$logic_or", "t:$reduce_*")


def _gold_lines(job: LecJob) -> list[str]:
    return [*read_rtl_lines(job.rtl, job.top, job.parameters),
            f"hierarchy -top {job.top}",
            # flattened as the flow's synthesis flattens (`u_wr/q_mem[3]`), so that the registers
            # of submodules pair by name with the netlist's (with `.` only the top's paired: on
            # firdma 386 signals, none of its submodules' state, and induction proved 68)
            "proc", f"flatten -separator {HIERARCHY_SEPARATOR}",
            f"synth -top {job.top} -run :fine",
            # comparisons and logic reductions as gates: Yosys 0.70's SAT model of one of them
            # aborts equiv_simple -undef (ezSAT `vec_or` size assertion; firdma's register read
            # mux, s_axil_rdata[0]); with every cell mapped to gates (`techmap`) 32 of gcd's 35
            # paired signals stayed unproven
            "memory_map", f"techmap {' '.join(SAT_UNSAFE_CELLS)}", "opt_clean", "dffunmap", "splitnets", "opt_clean",
            f"rename {job.top} gold", "design -stash gold"]


def _gate_lines(job: LecJob) -> list[str]:
    return [f"read_liberty -ignore_miss_func {_quote(job.liberty)}",
            f"read_verilog {_quote(job.netlist)}",
            f"hierarchy -top {job.top}", "flatten", "opt_clean",
            f"rename {job.top} gate", "design -stash gate",
            "design -copy-from gold -as gold gold", "design -copy-from gate -as gate gate"]


# The flow's synthesis up to its technology mapping (SiliconCompiler's sc_synth_asic.tcl with the
# flow's settings: flatten, opt_undriven): the same passes choose the same values for the RTL's
# don't-cares (`x`) as they did in the netlist, and `setundef -zero` fixes the ones still open.
FLOW_SYNTH_PREFIX = ("synth -flatten -top {top} -run begin:fine",
                     "opt -fast -mux_undef -mux_bool -fine -undriven", "memory_map",
                     "opt -mux_undef -mux_bool -fine -undriven", "techmap", "opt -fast")
# both sides as and/not gates and single-edge flip-flops (closer.tasks.lec_miter)
TO_AIG = ("async2sync", "dffunmap", "techmap", "aigmap", "opt_clean")


def cut_script(job: LecJob, json_out: Path) -> str:
    """Yosys: the RTL through the flow's synthesis prefix and the netlist, both as and/not gates
    and flip-flops, written as JSON for closer.tasks.lec_miter."""
    gold = [*read_rtl_lines(job.rtl, job.top, job.parameters), f"hierarchy -top {job.top}",
            f"scratchpad -set flatten.separator {HIERARCHY_SEPARATOR}",
            *(line.format(top=job.top) for line in FLOW_SYNTH_PREFIX), "setundef -zero", *TO_AIG,
            f"rename {job.top} gold", "design -stash gold"]
    gate = [f"read_liberty -ignore_miss_func {_quote(job.liberty)}", f"read_verilog {_quote(job.netlist)}",
            f"hierarchy -top {job.top}", "flatten", *TO_AIG, f"rename {job.top} gate", "design -stash gate"]
    return "\n".join([*gold, *gate, "design -copy-from gold -as gold gold", "design -copy-from gate -as gate gate",
                      f"write_json {_quote(json_out)}"]) + "\n"


def equiv_script(job: LecJob) -> str:
    return "\n".join([*_gold_lines(job), *_gate_lines(job),
                      "equiv_make gold gate equiv", "hierarchy -top equiv", "async2sync",
                      "equiv_simple -undef -seq 2", "equiv_induct -undef -seq 2", "equiv_status"]) + "\n"


def bmc_script(job: LecJob) -> str:
    reset = ""
    if job.reset is not None:
        reset = f" -set-at 1 in_{job.reset.name} {1 if job.reset.active_high else 0}"
    return "\n".join([*_gold_lines(job), *_gate_lines(job),
                      "miter -equiv -flatten -make_outputs -ignore_gold_x gold gate miter",
                      "hierarchy -top miter",
                      f"sat -seq {job.bmc_cycles} -timeout {int(job.timeout_s)}{reset} -set-init-zero "
                      "-prove trigger 0 -show-ports miter"]) + "\n"


_STATUS = re.compile(r"Of those cells (\d+) are proven and (\d+) are unproven")
_NO_EQUIV = re.compile(r"Found 0 \$equiv cells")
_PORT_MISMATCH = re.compile(r"ERROR: Can't match (?:gold|gate) port `([^']+)'")
_SAT_FAIL = "SAT proof finished - model found: FAIL!"
_SAT_OK = "SAT proof finished - no model found: SUCCESS!"
_SAT_TIMEOUT = re.compile(r"timed out|Timeout|TIMEOUT")
_FAIL_STEP = re.compile(r"^\s*(\d+)\s+\\trigger\s+1\s", re.M)  # `  <step> \trigger <dec> ...` rows


@dataclass(frozen=True)
class EquivStatus:
    proven: int
    unproven: int
    port_mismatch: str | None = None


def parse_equiv_log(text: str) -> EquivStatus | None:
    """Counts from `equiv_status` (None when the log has none and no port mismatch)."""
    if m := _PORT_MISMATCH.search(text):
        return EquivStatus(0, 0, m.group(1))
    if m := _STATUS.search(text):
        return EquivStatus(int(m.group(1)), int(m.group(2)))
    if _NO_EQUIV.search(text):
        return EquivStatus(0, 0)
    return None


def parse_bmc_log(text: str) -> tuple[str, int | None]:
    """("fail", first failing cycle or None) | ("pass", None) | ("timeout", None) | ("unknown", None)."""
    if _SAT_FAIL in text:
        steps = [int(s) for s in _FAIL_STEP.findall(text)]
        return "fail", min(steps) if steps else None
    if _SAT_OK in text:
        return "pass", None
    if _SAT_TIMEOUT.search(text):
        return "timeout", None
    return "unknown", None


def netlist_inputs(netlist: Path) -> list[str]:
    """The input port names of a Yosys-written netlist (`input [a:b] name;` declarations)."""
    return re.findall(r"^\s*input\s+(?:\[[^\]]*\]\s*)?\\?(\w+)\s*;", netlist.read_text(errors="replace"), re.M)


def find_reset(inputs: list[str]) -> ResetPort | None:
    """The reset input by the conventional names (reset/rst active high, *_n/*n active low)."""
    lowered = {name.lower(): name for name in inputs}
    for candidate in ACTIVE_HIGH_RESETS:
        if candidate in lowered:
            return ResetPort(lowered[candidate], True)
    for candidate in ACTIVE_LOW_RESETS:
        if candidate in lowered:
            return ResetPort(lowered[candidate], False)
    return None


def run_lec(job: LecJob) -> LecResult:
    start = time.monotonic()
    for path in [*job.rtl, job.netlist, job.liberty]:
        if not path.is_file():
            raise InputError(f"LEC input {path} does not exist")
    job.work.mkdir(parents=True, exist_ok=True)
    result, first_proof = _prove_by_cec(job)
    if result is None:
        result = _prove(job)
        if result.result == INCONCLUSIVE and result.unproven:
            result = _refute(job, result)
        result.reason = f"{first_proof}; {result.reason}"
        result.logs[:0] = [job.work / "lec_pairs.json", _log(job, "lec_cut"), _log(job, "lec_cec")]
        result.logs = [log for log in result.logs if log.is_file()]
    result.wall_s = round(time.monotonic() - start, 3)
    return result


def _prove_by_cec(job: LecJob) -> tuple[LecResult | None, str]:
    """The first proof: ABC's `&cec` on the register-correspondence miter (closer.tasks.lec_miter)
    of the RTL through the flow's synthesis prefix and the netlist. Proven -> equivalent; anything
    else -> (None, what happened), and the Yosys proof decides (a difference here may lie in a
    state no reset reaches, which only induction rules out)."""
    from closer.tasks.lec_miter import MiterError, build_miter

    netlist_json, miter, pairs = job.work / "lec_cut.json", job.work / "lec_miter.aig", job.work / "lec_pairs.json"
    for stale in (netlist_json, miter, pairs):  # an earlier run's files in this folder are no evidence
        stale.unlink(missing_ok=True)
    try:
        done = _yosys(job, "lec_cut", cut_script(job, netlist_json))
    except ToolTimeout:
        return None, f"register-correspondence miter: Yosys stopped at its {_limit_s(job):.0f} s limit"
    if done.returncode != 0 or not netlist_json.is_file():
        return None, f"register-correspondence miter: Yosys failed (exit {done.returncode}, log {done.log})"
    try:
        cut = build_miter(netlist_json, miter)
    except MiterError as exc:
        return None, f"register-correspondence miter not built: {exc}"
    finally:
        netlist_json.unlink(missing_ok=True)  # tens of MB, rebuilt from the logged script
    cut.write_pairs(pairs)
    log = _log(job, "lec_cec")
    try:
        done = run(Command(["yosys-abc", "-c", f"&r {_quote(miter)}; &ps; &cec -m"], cwd=job.work,
                           env={"PATH": search_path()}, timeout_s=_limit_s(job)), log, check=False)
    except ToolTimeout:
        return None, f"ABC &cec on {cut.summary()}: stopped at its {_limit_s(job):.0f} s limit, log {log}"
    except ToolMissing as exc:  # scripts/bootstrap.sh installs it (Debian's yosys package)
        return None, f"ABC &cec not run: {exc}"
    verdict = parse_cec_log(log.read_text(errors="replace"))
    if verdict == "equivalent" and done.returncode == 0:
        return LecResult(EQUIVALENT, f"ABC &cec proved {cut.summary()} equal (register correspondence, "
                         f"the RTL through the flow's synthesis prefix; pairs in {pairs.name}); log {log}",
                         cut.pairs_by_name + cut.pairs_by_signature + cut.output_bits, 0,
                         logs=[pairs, _log(job, "lec_cut"), log]), ""
    return None, f"ABC &cec on {cut.summary()}: {verdict}, log {log}"


def parse_cec_log(text: str) -> str:
    """"equivalent" | "not equivalent" | "undecided" from ABC's `&cec` output."""
    if "Networks are equivalent" in text:
        return "equivalent"
    if "NOT EQUIVALENT" in text:
        return "not equivalent"
    return "undecided"


def _limit_s(job: LecJob) -> float:
    """A Yosys run's time limit: the SAT time-out plus the reading and synthesis before it."""
    return job.timeout_s + 60


def _log(job: LecJob, name: str) -> Path:
    return job.work / f"{name}.log"


def _yosys(job: LecJob, name: str, script: str):
    ys = job.work / f"{name}.ys"
    ys.write_text(script)
    return run(Command(["yosys", "-s", str(ys)], cwd=job.work, env={"PATH": search_path()},
                       timeout_s=_limit_s(job)), _log(job, name), check=False)


def _prove(job: LecJob) -> LecResult:
    try:
        done = _yosys(job, "lec_equiv", equiv_script(job))
    except ToolTimeout:  # no proof in the time given: no verdict either way (the gate fails)
        log = _log(job, "lec_equiv")
        return LecResult(INCONCLUSIVE, f"Yosys equivalence run stopped at its {_limit_s(job):.0f} s limit; "
                         f"log {log}", logs=[log])
    text = done.log.read_text(errors="replace")
    status = parse_equiv_log(text)
    if status is not None and status.port_mismatch:
        return LecResult(NOT_EQUIVALENT, f"the netlist's ports differ from the RTL's (equiv_make: "
                         f"no match for port {status.port_mismatch}); log {done.log}", logs=[done.log])
    if done.returncode != 0 or status is None:
        return LecResult(INCONCLUSIVE, f"Yosys equivalence run failed (exit {done.returncode}); log {done.log}",
                         logs=[done.log])
    if status.proven + status.unproven == 0:
        return LecResult(INCONCLUSIVE, f"equiv_make paired no signals; log {done.log}", logs=[done.log])
    if status.unproven == 0:
        return LecResult(EQUIVALENT, f"all {status.proven} paired signals proven (equiv_induct); log {done.log}",
                         status.proven, 0, logs=[done.log])
    return LecResult(INCONCLUSIVE, f"{status.unproven} of {status.proven + status.unproven} paired signals "
                     f"unproven; log {done.log}", status.proven, status.unproven, logs=[done.log])


def _refute(job: LecJob, proof: LecResult) -> LecResult:
    try:
        done = _yosys(job, "lec_bmc", bmc_script(job))
    except ToolTimeout:
        log = _log(job, "lec_bmc")
        proof.logs.append(log)
        proof.reason += f"; bounded search stopped at its {_limit_s(job):.0f} s limit, log {log}"
        return proof
    outcome, cycle = parse_bmc_log(done.log.read_text(errors="replace"))
    proof.logs.append(done.log)
    reset = f"{job.reset.name} active in cycle 1" if job.reset else "no reset input found"
    if outcome == "fail":
        proof.result = NOT_EQUIVALENT
        proof.counterexample_cycle = cycle
        proof.reason = (f"{proof.unproven} paired signals unproven and the outputs differ "
                        f"{'in cycle ' + str(cycle) if cycle else 'within ' + str(job.bmc_cycles) + ' cycles'} "
                        f"after reset ({reset}, registers start at 0); log {done.log}")
    elif outcome == "pass":
        proof.reason += (f"; no output difference in {job.bmc_cycles} cycles after reset ({reset}), "
                         f"log {done.log}")
    else:
        proof.reason += f"; bounded search {outcome} (exit {done.returncode}), log {done.log}"
    return proof
