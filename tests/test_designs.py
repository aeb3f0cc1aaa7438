"""Design folders: the model accepts our designs and names the file and key of bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from closer.designs.cli import design_group
from closer.designs.model import list_designs, load_design
from closer.errors import InputError
from closer.flow.platform import dont_use_cells, dont_use_patterns, liberty_cells, load_platform


@pytest.fixture
def gcd_copy(tmp_path: Path, repo) -> Path:
    dest = tmp_path / "gcd"
    shutil.copytree(repo.design_dir("gcd"), dest)
    return dest


def test_gcd_loads(repo):
    design, paths = load_design("gcd")
    assert design.top == "gcd"
    assert design.clock.port == "clk" and design.clock.period_ns == 10.0
    assert paths.rtl(design) == [repo.design_dir("gcd") / "rtl" / "gcd.v"]
    assert paths.sdc(design).is_file()
    assert paths.targets(design).is_file()
    assert design.config("default").parameters == {"WIDTH": 16}
    assert "gcd" in list_designs()


def test_picorv32_toml_is_accepted_without_fetching():
    design, _ = load_design("picorv32", check_files=False)
    assert design.fetch is not None and design.fetch["rtl"] == ["picorv32.v"]
    assert getattr(design.config("rv32im"), "march") == "rv32im_zicsr"  # extra config fields kept


def test_unknown_config_names_the_known_ones():
    design, _ = load_design("gcd")
    with pytest.raises(InputError, match=r"no config 'fast'.*default"):
        design.config("fast")


def test_unknown_design():
    with pytest.raises(InputError, match=r"unknown design 'nosuch'.*gcd"):
        load_design("nosuch")


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('top = "gcd"\n', ""), r"design\.toml: key design\.top: Field required"),
    (lambda t: t.replace("period_ns = 10.0", "period_ns = -1"),
     r"key clock\.period_ns: Input should be greater than 0"),
    (lambda t: t.replace('rtl = ["rtl/gcd.v"]', 'rtl = ["rtl/missing.v"]'),
     r"key sources\.rtl\[0\]: .*missing\.v does not exist"),
    (lambda t: t.replace('rtl = ["rtl/gcd.v"]', 'rtl = ["rtl/gcd.vhd"]'),
     r"key sources\.rtl: .*gcd\.vhd: unknown HDL suffix '\.vhd'"),
    (lambda t: t.replace('sdc = "constraints/gcd.sdc"', 'sdc = "nope.sdc"'),
     r"key constraints\.sdc: .*nope\.sdc does not exist"),
    (lambda t: t.replace('name = "gcd"', 'name = "other"'),
     r"key design\.name is 'other' but the folder is 'gcd'"),
    (lambda t: t.replace("[configs.default]", "[configs.base]"),
     r"key configs: Value error, needs a \[configs\.default\] table"),
    (lambda t: t + "\n[surprise]\nx = 1\n", r"key surprise: Extra inputs are not permitted"),
    (lambda t: t.replace("[clock]", "[clock"), r"design\.toml: not valid TOML"),
])
def test_bad_design_toml_names_file_and_key(gcd_copy: Path, edit, message):
    toml = gcd_copy / "design.toml"
    toml.write_text(edit(toml.read_text()))
    with pytest.raises(InputError, match=message) as info:
        load_design(gcd_copy)
    assert str(toml) in str(info.value)


def test_dont_use_globs_expand_against_the_liberty(pdk_paths):
    cells = dont_use_cells(pdk_paths)
    assert "sky130_fd_sc_hd__probe_p_8" in cells
    assert "sky130_fd_sc_hd__lpflow_isobufsrc_1" in cells
    assert not any(c.startswith("sky130_fd_sc_hd__buf_") for c in cells)
    assert all(c in liberty_cells(pdk_paths.liberty("tt_025C_1v80")) for c in cells)
    assert len(dont_use_patterns()) >= 5


def test_dont_use_pattern_matching_nothing_is_an_error(pdk_paths, monkeypatch):
    import closer.flow.platform as platform_module

    monkeypatch.setattr(platform_module, "dont_use_patterns",
                        lambda name="sky130hd": ["sky130_fd_sc_hd__nosuch_*"])
    with pytest.raises(InputError, match=r"dont_use\.txt: pattern 'sky130_fd_sc_hd__nosuch_\*' "
                                         r"matches no cell"):
        platform_module.dont_use_cells(pdk_paths)


def test_platform_corners_follow_the_spec():
    platform = load_platform()
    assert set(platform.corners_with("setup")) == {"ss_100C_1v60", "tt_025C_1v80"}
    assert set(platform.corners_with("hold")) == {"ff_n40C_1v95", "tt_025C_1v80"}
    assert platform.corners_with("power") == ["tt_025C_1v80"]


def test_design_cli_list_and_show():
    runner = CliRunner()
    out = runner.invoke(design_group, ["list"])
    assert out.exit_code == 0 and "gcd" in out.output.split()
    out = runner.invoke(design_group, ["show", "gcd", "--json"])
    assert out.exit_code == 0 and '"top": "gcd"' in out.output
    assert "fetch" in design_group.commands  # the PicoRV32 engineer's slot
