"""Run the firdma cocotb oracle (oracles/firdma/) on an RTL folder: the golden RTL, the weak B
start, a task's submission, or a golden copy with one fault applied.

    oracles/firdma/
      test_firdma.py  firdma_monitor.py  firdma_jobs.py  firdma_model.py   the cocotb oracle
      seeds.toml                  the ten public seeds and their conditions
      faults/faults.toml          hand-written faulty variants (find/replace on one RTL line)
      hidden/hidden.toml          hidden seeds and conditions: never copied into a task workspace

Usage: python -m closer.firdma.oracle {public,hidden,cycles,faults} [--sim icarus|verilator] ...
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import click

from closer.errors import InputError, ToolError
from closer.paths import repo_paths
from closer.sim import CocotbJob, SimResult, run_cocotb
from closer.toolchain import use_venv_tools

RTL_ORDER = ["firdma_mem.sv", "firdma_buffer.sv", "firdma_regs.sv", "firdma_rd_dma.sv",
             "firdma_fir.sv", "firdma_wr_dma.sv", "firdma_ctrl.sv", "firdma.sv"]
SRAM_MODEL = "sky130_sram_2kbyte_1rw1r_32x512_8.v"


@dataclass(frozen=True)
class FirdmaPaths:
    """designs/firdma and oracles/firdma; no other code builds these paths."""

    design: Path
    oracle: Path

    @property
    def rtl(self) -> Path:
        return self.design / "rtl"

    @property
    def weak_rtl(self) -> Path:
        return self.design / "weak" / "rtl"

    @property
    def sram_model(self) -> Path:
        return self.design / "models" / SRAM_MODEL

    def config(self, name: str) -> Path:
        return self.design / "configs" / f"{name}.toml"

    @property
    def seeds(self) -> Path:
        return self.oracle / "seeds.toml"

    @property
    def faults(self) -> Path:
        return self.oracle / "faults" / "faults.toml"

    @property
    def spec_faults(self) -> Path:
        return self.oracle / "faults" / "spec_faults.toml"

    @property
    def requirements(self) -> Path:
        return self.oracle / "requirements.toml"

    @property
    def hidden(self) -> Path:
        return self.oracle / "hidden" / "hidden.toml"


def firdma_paths() -> FirdmaPaths:
    root = repo_paths()
    return FirdmaPaths(root.design_dir("firdma"), root.oracles / "firdma")


@dataclass(frozen=True)
class FirdmaConfig:
    name: str
    parameters: dict[str, int | str]
    period_ns: float
    macros: list[str] = field(default_factory=list)

    @property
    def mem_style(self) -> str:
        return str(self.parameters.get("MEM_STYLE", "flop"))


def load_config(name: str, paths: FirdmaPaths | None = None) -> FirdmaConfig:
    path = (paths or firdma_paths()).config(name)
    if not path.is_file():
        raise InputError(f"firdma has no configuration {name!r} ({path} missing)")
    data = _read_toml(path)
    for key in ("parameters", "period_ns"):
        if key not in data:
            raise InputError(f"{path}: missing key {key!r}")
    params = data["parameters"]
    for key in ("DATA_W", "NTAPS", "FIFO_DEPTH", "MEM_STYLE"):
        if key not in params:
            raise InputError(f"{path}: missing key parameters.{key}")
    if params["DATA_W"] not in (32, 64) or not 4 <= params["NTAPS"] <= 32:
        raise InputError(f"{path}: parameters.DATA_W must be 32 or 64 and NTAPS 4..32")
    if params["MEM_STYLE"] not in ("flop", "macro"):
        raise InputError(f"{path}: parameters.MEM_STYLE must be \"flop\" or \"macro\"")
    return FirdmaConfig(name, dict(params), float(data["period_ns"]), list(data.get("macros", [])))


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from exc


def rtl_sources(rtl_dir: Path, config: FirdmaConfig, paths: FirdmaPaths | None = None) -> list[Path]:
    """The RTL files in compile order, plus our SRAM model when the buffer is the macro.

    A folder with the golden file names is compiled in the golden order; any other folder (a
    Task A implementation) is compiled as every *.sv and *.v file in it, sorted by name."""
    if all((rtl_dir / name).is_file() for name in RTL_ORDER):
        sources = [rtl_dir / name for name in RTL_ORDER]
    else:
        sources = sorted(p for p in rtl_dir.iterdir() if p.suffix in (".sv", ".v"))
        if not sources:
            raise InputError(f"{rtl_dir}: no *.sv or *.v files")
    if config.mem_style == "macro":
        sources.append((paths or firdma_paths()).sram_model)
    return sources


def rtl_revision(rtl_dir: Path) -> str:
    """A content hash of an RTL folder (file names and bytes): the design revision in provenance."""
    digest = hashlib.sha256()
    for path in sorted(p for p in rtl_dir.iterdir() if p.suffix in (".sv", ".v")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class SeedSet:
    seeds: list[int]
    conditions: dict
    source: Path


def _seeds(path: Path, entry: dict, where: str = "") -> list[int]:
    """A seed list: non-empty integers (a run's first seed also seeds test_spec)."""
    seeds = entry.get("seeds")
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise InputError(f"{path}: key {where}seeds: a non-empty list of integers")
    return list(seeds)


def load_seed_set(path: Path) -> SeedSet:
    data = _read_toml(path)
    return SeedSet(_seeds(path, data), dict(data.get("conditions", {})), path)


@dataclass(frozen=True)
class Fault:
    id: str
    description: str
    file: str
    find: str
    replace: str
    requirement: str = ""   # the requirement id it breaks (spec_faults.toml)


def load_faults(path: Path | None = None) -> list[Fault]:
    path = path or firdma_paths().faults
    data = _read_toml(path)
    faults = []
    for i, entry in enumerate(data.get("fault", [])):
        for key in ("id", "description", "file", "find", "replace"):
            if key not in entry:
                raise InputError(f"{path}: fault[{i}] missing key {key!r}")
        faults.append(Fault(**{k: entry[k] for k in ("id", "description", "file", "find", "replace")},
                            requirement=str(entry.get("requirement", ""))))
    return faults


def load_hidden_runs(paths: FirdmaPaths | None = None) -> list[tuple[str, SeedSet]]:
    """hidden/hidden.toml: (config name, seed set) per run."""
    paths = paths or firdma_paths()
    hidden = _read_toml(paths.hidden)
    runs = []
    for i, entry in enumerate(hidden.get("run", [])):
        if "config" not in entry or "seeds" not in entry:
            raise InputError(f"{paths.hidden}: run[{i}] needs keys 'config' and 'seeds'")
        runs.append((entry["config"], SeedSet(_seeds(paths.hidden, entry, f"run[{i}]."),
                                               entry.get("conditions", {}), paths.hidden)))
    return runs


def apply_fault(fault: Fault, golden_rtl: Path, out_dir: Path) -> Path:
    """Copy the golden RTL to `out_dir` and apply `fault` (its `find` must occur exactly once)."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    shutil.copytree(golden_rtl, out_dir)
    target = out_dir / fault.file
    text = target.read_text()
    hits = text.count(fault.find)
    if hits != 1:
        raise InputError(f"fault {fault.id}: text to replace occurs {hits} times in {fault.file}, expected 1")
    target.write_text(text.replace(fault.find, fault.replace))
    return out_dir


def weak_rtl_dir(out_dir: Path, paths: FirdmaPaths | None = None) -> Path:
    """The weak-but-correct variant as a complete RTL folder: the golden files with the ones in
    designs/firdma/weak/rtl/ put in their place."""
    paths = paths or firdma_paths()
    if out_dir.exists():
        shutil.rmtree(out_dir)
    shutil.copytree(paths.rtl, out_dir)
    for replacement in sorted(paths.weak_rtl.glob("*.sv")):
        shutil.copy2(replacement, out_dir / replacement.name)
    return out_dir


def oracle_job(rtl_dir: Path, config: FirdmaConfig, build_dir: Path, testcase: str,
               simulator: str = "icarus", env: dict[str, str] | None = None,
               timeout_s: float = 600.0) -> CocotbJob:
    paths = firdma_paths()
    params = dict(config.parameters)
    params["MEM_STYLE"] = f'"{params["MEM_STYLE"]}"'  # a string parameter needs its quotes
    job_env = {"FIRDMA_NTAPS": str(config.parameters["NTAPS"]),
               "FIRDMA_DATA_W": str(config.parameters["DATA_W"]), **(env or {})}
    build_args = ["-Wno-fatal"] if simulator == "verilator" else []
    return CocotbJob(sources=rtl_sources(rtl_dir, config, paths), toplevel="firdma",
                     test_module="test_firdma", test_dir=paths.oracle, build_dir=build_dir,
                     simulator=simulator, parameters=params, env=job_env, timeout_s=timeout_s,
                     testcase=testcase, build_args=build_args)


def run_directed(rtl_dir: Path, config: FirdmaConfig, build_dir: Path, simulator: str = "icarus",
                 timeout_s: float = 600.0) -> SimResult:
    return run_cocotb(oracle_job(rtl_dir, config, build_dir, "test_directed", simulator, timeout_s=timeout_s),
                      check_build=False)


def run_seeds(rtl_dir: Path, config: FirdmaConfig, build_dir: Path, seeds: list[int], conditions: dict,
              simulator: str = "icarus", timeout_s: float = 1800.0) -> SimResult:
    env = {"FIRDMA_SEEDS": ",".join(map(str, seeds)), "FIRDMA_CONDITIONS": json.dumps(conditions)}
    return run_cocotb(oracle_job(rtl_dir, config, build_dir, "test_random", simulator, env, timeout_s),
                      check_build=False)


def run_spec(rtl_dir: Path, config: FirdmaConfig, build_dir: Path, seed: int, conditions: dict,
             simulator: str = "icarus", timeout_s: float = 1800.0) -> SimResult:
    """test_spec: the register, control, protocol and limit checks; `seed` and `conditions` as the
    seed set that carries them (its first seed, its conditions)."""
    env = {"FIRDMA_SEEDS": str(seed), "FIRDMA_CONDITIONS": json.dumps(conditions)}
    return run_cocotb(oracle_job(rtl_dir, config, build_dir, "test_spec", simulator, env, timeout_s),
                      check_build=False)


def run_max_len(rtl_dir: Path, config: FirdmaConfig, build_dir: Path, seed: int, length: int,
                simulator: str = "icarus", timeout_s: float = 5400.0) -> SimResult:
    """test_max_len: one job of `length` samples (65535, the largest LEN, in the hidden set)."""
    env = {"FIRDMA_SEEDS": str(seed), "FIRDMA_CONDITIONS": json.dumps({"max_len": length})}
    return run_cocotb(oracle_job(rtl_dir, config, build_dir, "test_max_len", simulator, env, timeout_s),
                      check_build=False)


def run_set(rtl_dir: Path, config: FirdmaConfig, build_dir: Path, seed_set: SeedSet, simulator: str = "icarus",
            stop_at_failure: bool = False, tests: tuple[str, ...] | None = None) -> list[tuple[str, SimResult]]:
    """A seed set's whole run: test_spec under the set's conditions, test_directed, test_random on
    its seeds, then, if its conditions set `max_len`, test_max_len (the longest, last); only the
    `tests` named, if given. Stops after the first failing test if asked."""
    steps = [("test_spec", lambda b: run_spec(rtl_dir, config, b, seed_set.seeds[0], seed_set.conditions, simulator)),
             ("test_directed", lambda b: run_directed(rtl_dir, config, b, simulator)),
             ("test_random", lambda b: run_seeds(rtl_dir, config, b, seed_set.seeds, seed_set.conditions, simulator))]
    max_len = int(seed_set.conditions.get("max_len", 0))
    if max_len:
        steps.append(("test_max_len", lambda b: run_max_len(rtl_dir, config, b, seed_set.seeds[0], max_len, simulator)))
    results = []
    for name, run in [(n, r) for n, r in steps if tests is None or n in tests]:
        results.append((name, run(build_dir / name)))
        if stop_at_failure and not results[-1][1].passed:
            break
    return results


def run_cycles(rtl_dir: Path, config: FirdmaConfig, build_dir: Path, simulator: str = "icarus") -> dict:
    metrics = build_dir / "cycles.json"
    metrics.unlink(missing_ok=True)
    result = run_cocotb(oracle_job(rtl_dir, config, build_dir, "test_cycles", simulator,
                                   {"FIRDMA_METRICS": str(metrics)}), check_build=False)
    if not result.passed or not metrics.is_file():
        raise ToolError(f"firdma cycles workload did not pass; log: {result.log}")
    return json.loads(metrics.read_text())


@click.group()
def main() -> None:
    """firdma oracle regressions."""
    use_venv_tools()


def _rtl_option(f):
    f = click.option("--rtl", type=click.Path(path_type=Path), default=None,
                     help="RTL folder (default: the golden designs/firdma/rtl)")(f)
    f = click.option("--config", "config_name", default="small", show_default=True)(f)
    f = click.option("--sim", "simulator", type=click.Choice(["icarus", "verilator"]), default="icarus")(f)
    f = click.option("--build", type=click.Path(path_type=Path), default=Path("build/firdma"))(f)
    f = click.option("--weak", is_flag=True, help="use the weak-but-correct variant (designs/firdma/weak)")(f)
    return f


def _rtl(rtl: Path | None, weak: bool, build: Path) -> Path:
    if weak:
        return weak_rtl_dir(build / "weak-rtl")
    return rtl or firdma_paths().rtl


def _report(label: str, result: SimResult) -> None:
    """The verdict, the failure (it names its requirement) and the functional coverage of each test."""
    verdict = "PASS" if result.passed else "FAIL"
    click.echo(f"{label}: {verdict} tests={result.tests} failed={result.failed} wall_s={result.wall_s:.1f} "
               f"log={result.log}")
    text = result.log.read_text(errors="replace") if result.log.is_file() else ""
    for line in text.splitlines():
        for marker in ("functional coverage ", "OracleFailure: "):
            if marker in line:
                click.echo(f"  {marker.strip(': ')}: {line.split(marker, 1)[1][:400]}")


@main.command()
@_rtl_option
def directed(rtl, config_name, simulator, build, weak):
    config = load_config(config_name)
    result = run_directed(_rtl(rtl, weak, build), config, build / f"directed-{config_name}-{simulator}", simulator)
    _report(f"directed {config_name} {simulator}{' weak' if weak else ''}", result)
    sys.exit(0 if result.passed else 1)


@main.command()
@_rtl_option
@click.option("--seed", type=int, default=None, help="default: the first public seed")
def spec(rtl, config_name, simulator, build, weak, seed):
    """test_spec under the public conditions (register map, control, AXI4-Lite protocol, limits)."""
    public = load_seed_set(firdma_paths().seeds)
    result = run_spec(_rtl(rtl, weak, build), load_config(config_name), build / f"spec-{config_name}-{simulator}",
                      public.seeds[0] if seed is None else seed, public.conditions, simulator)
    _report(f"spec {config_name} {simulator}{' weak' if weak else ''}", result)
    sys.exit(0 if result.passed else 1)


@main.command()
@_rtl_option
@click.option("--set", "which", type=click.Choice(["public", "hidden"]), default="public")
def seeds(rtl, config_name, simulator, build, weak, which):
    """Run a seed set (public: seeds.toml; hidden: hidden/hidden.toml, which also names configs)."""
    paths = firdma_paths()
    sets = [(config_name, load_seed_set(paths.seeds))] if which == "public" else load_hidden_runs(paths)
    ok = True
    rtl_dir = _rtl(rtl, weak, build)  # the weak folder is built once, not per seed set
    for i, (cfg, seed_set) in enumerate(sets):
        config, base = load_config(cfg), build / f"{which}{i}-{cfg}-{simulator}"
        label = f"{which} set {i} config={cfg} seeds={seed_set.seeds[0]}..{seed_set.seeds[-1]} {simulator}"
        for name, result in run_set(rtl_dir, config, base, seed_set, simulator):
            _report(f"{label} {name}", result)
            ok &= result.passed
    sys.exit(0 if ok else 1)


@main.command()
@_rtl_option
@click.option("--metrics-out", type=click.Path(path_type=Path), default=None,
              help="write a Closer metrics file with closer__sim__cycles and provenance")
def cycles(rtl, config_name, simulator, build, weak, metrics_out):
    rtl_dir = _rtl(rtl, weak, build)
    m = run_cycles(rtl_dir, load_config(config_name), build / f"cycles-{config_name}-{simulator}", simulator)
    click.echo(json.dumps(m))
    if metrics_out:
        metrics_out.write_text(json.dumps({
            "closer__sim__cycles": m["cycles"], "run__closer__design": "firdma",
            "run__closer__design_revision": rtl_revision(rtl_dir),
            "run__closer__tool_versions": f"{simulator} via cocotb (closer.sim)",
        }, indent=1) + "\n")


@main.command()
@_rtl_option
def faults(rtl, config_name, simulator, build, weak):
    """Every fault must be rejected by the directed oracle."""
    config = load_config(config_name)
    escaped = []
    for fault in load_faults():
        rtl_dir = apply_fault(fault, _rtl(rtl, weak, build), build / "faults" / fault.id / "rtl")
        result = run_directed(rtl_dir, config, build / "faults" / fault.id / simulator, simulator)
        _report(f"fault {fault.id}", result)
        if result.passed:
            escaped.append(fault.id)
    if escaped:
        click.echo(f"faults NOT detected: {', '.join(escaped)}")
        sys.exit(1)


def fault_killed_by_hidden(fault: Fault, golden_rtl: Path, build: Path, simulator: str = "icarus",
                           configs: list[str] | None = None) -> str | None:
    """Run the hidden set on the golden RTL with `fault` applied, run by run, test by test, until
    something fails; returns "<config>/<test>" of the first failure, or None if the fault escaped."""
    rtl_dir = apply_fault(fault, golden_rtl, build / fault.id / "rtl")
    for cfg, name, result in hidden_steps(rtl_dir, build / fault.id, simulator, configs):
        if not result.passed:
            return f"{cfg}/{name}"
    return None


CHEAP_TESTS, LONG_TESTS = ("test_spec", "test_directed", "test_random"), ("test_max_len",)


def hidden_steps(rtl_dir: Path, build: Path, simulator: str = "icarus", configs: list[str] | None = None):
    """The hidden set on `rtl_dir` test by test, cheapest first: every run's test_spec,
    test_directed and test_random, then the runs' test_max_len (the verdict does not depend on the
    order; a fault the short tests kill never waits for the long one). Yields (config, test,
    result); the caller stops where it likes."""
    runs = [(cfg, s) for cfg, s in load_hidden_runs() if configs is None or cfg in configs]
    for tests in (CHEAP_TESTS, LONG_TESTS):
        for cfg, seed_set in runs:
            for name, result in run_set(rtl_dir, load_config(cfg), build / f"{cfg}-{simulator}", seed_set,
                                        simulator, stop_at_failure=True, tests=tests):
                yield cfg, name, result
                if not result.passed:
                    return


@main.command("hidden-faults")
@_rtl_option
@click.option("--only", multiple=True, help="fault ids to run (default: all of faults/spec_faults.toml)")
def hidden_faults(rtl, config_name, simulator, build, weak, only):
    """Every fault of faults/spec_faults.toml must be killed by the hidden set (first kill reported)."""
    escaped = []
    base_rtl = _rtl(rtl, weak, build)  # each fault is applied to a copy of it
    for fault in load_faults(firdma_paths().spec_faults):
        if only and fault.id not in only:
            continue
        killer = fault_killed_by_hidden(fault, base_rtl, build / "hidden-faults", simulator)
        click.echo(f"fault {fault.id} [{fault.requirement}]: {'killed by ' + killer if killer else 'ESCAPED'}")
        if killer is None:
            escaped.append(fault.id)
    if escaped:
        click.echo(f"faults NOT detected: {', '.join(escaped)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
