"""closer.tasks.sim_reuse: an unchanged cocotb run is served from the cache with its results, log
and report folder renamed to the new run's folders; any changed input runs the simulator again."""

import secrets
import shutil
from pathlib import Path

from closer.sim import CocotbJob
from closer.tasks import sim_reuse

FIXTURES = Path(__file__).parent / "fixtures" / "sim"
REPORTING_TEST = '''
import json, os, pathlib
import cocotb
from test_counter import counts_enabled_cycles  # noqa: F401  (the real check)


@cocotb.test()
async def writes_its_report(dut):
    folder = pathlib.Path(os.environ["REPORT_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(json.dumps({"folder": str(folder)}))
'''


def _tests(tmp_path: Path) -> Path:
    folder = tmp_path / "tests"
    if not folder.is_dir():
        shutil.copytree(FIXTURES, folder)
        (folder / "test_reporting.py").write_text(REPORTING_TEST)
    return folder


def _job(tmp_path: Path, name: str, source: Path | None = None, **env) -> CocotbJob:
    build = tmp_path / name
    report = build / f"reports-{secrets.token_hex(8)}"
    return CocotbJob(sources=[source or FIXTURES / "counter.v"], toplevel="counter", test_module="test_reporting",
                     test_dir=_tests(tmp_path), build_dir=build, parameters={"WIDTH": 4}, timeout_s=300,
                     env={"REPORT_DIR": str(report), **env})


def test_an_unchanged_run_is_reused_with_its_files_renamed(tmp_path):
    cache = tmp_path / "cache"
    first, reused = sim_reuse.run(_job(tmp_path, "first"), cache)
    assert not reused and first.passed and (first.tests, first.failed) == (2, 0)

    job = _job(tmp_path, "second")
    second, reused = sim_reuse.run(job, cache)
    assert reused and second.passed and (second.tests, second.failed) == (2, 0)
    report = sim_reuse.report_folder(job)
    assert (report / "report.json").read_text() == f'{{"folder": "{report}"}}'  # the stored run's folder renamed
    assert str(tmp_path / "first") not in job.results_xml.read_text() + second.log.read_text()
    assert "writes_its_report" in job.results_xml.read_text()


def test_a_changed_input_runs_again(tmp_path):
    cache = tmp_path / "cache"
    assert sim_reuse.run(_job(tmp_path, "first"), cache)[0].passed

    wrong = sim_reuse.run(_job(tmp_path, "env", COUNTER_EXPECT_OFFSET="1"), cache)  # another environment
    assert not wrong[1] and wrong[0].failed == 1

    source = tmp_path / "rtl" / "counter.v"
    source.parent.mkdir()
    source.write_text((FIXTURES / "counter.v").read_text().replace("count + 1'b1", "count + 2'b10"))
    changed = sim_reuse.run(_job(tmp_path, "source", source=source), cache)  # another RTL
    assert not changed[1] and changed[0].failed == 1

    (_tests(tmp_path) / "test_reporting.py").write_text(REPORTING_TEST + "\n# another testbench\n")
    assert not sim_reuse.run(_job(tmp_path, "tests"), cache)[1]


def test_a_run_without_results_is_not_kept(tmp_path):
    cache = tmp_path / "cache"
    broken = tmp_path / "broken.v"
    broken.write_text("module counter(input clk; endmodule\n")  # does not build
    result, _ = sim_reuse.run(_job(tmp_path, "first", source=broken), cache)
    assert not result.build_ok
    assert not sim_reuse.run(_job(tmp_path, "second", source=broken), cache)[1]


def test_reuse_follows_the_flow_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("CLOSER_FLOW_CACHE", "off")
    assert sim_reuse.active() is None
    monkeypatch.setenv("CLOSER_FLOW_CACHE", str(tmp_path))
    assert sim_reuse.active() == tmp_path.resolve() / "sim"


def test_a_testbench_folder_with_a_link_or_fifo_is_run_never_hashed(tmp_path):
    """An agent's tree may hold a link out of it or a FIFO: the job is simulated as it is, every
    time, without reading either for a key."""
    import os

    cache = tmp_path / "cache"
    tests = _tests(tmp_path)
    (tests / "outside").symlink_to("/etc/hostname")
    assert not sim_reuse.plain_inputs(_job(tmp_path, "probe"))
    assert sim_reuse.run(_job(tmp_path, "first"), cache)[0].passed
    assert not sim_reuse.run(_job(tmp_path, "second"), cache)[1]
    (tests / "outside").unlink()
    os.mkfifo(tests / "pipe")
    assert not sim_reuse.plain_inputs(_job(tmp_path, "probe"))
    (tests / "pipe").unlink()
    assert sim_reuse.plain_inputs(_job(tmp_path, "probe"))
