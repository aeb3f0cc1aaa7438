"""Setup repair by isolation buffers (closer.physical.repair.buffering): the report parser accepts
the buffers OpenSTA kept and refuses ones the netlist cannot have, the netlist edit moves exactly
the off-path loads, and OpenSTA's isolation run is two-way tested on a real gcd netlist (a failing
one gets better with sizing switched off, and the edited Verilog, timed again by OpenSTA, shows
the slack the repair reported; a met one is left alone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from closer.errors import ToolError
from closer.physical.cts import cts
from closer.physical.io.netlist import Instance, Netlist
from closer.physical.repair import buffering, sizing
from closer.physical.signoff import sta
from tests.test_physical_sizing import SS, _gcd_netlist, relaxed_run

BUF1 = "sky130_fd_sc_hd__buf_1"


def _netlist() -> Netlist:
    pins = {"d": {"Y": "n"}, "on": {"A": "n", "Y": "m"}, "off1": {"A": "n"}, "off2": {"B": "n"}, "far": {"A": "m"}}
    instances = {name: Instance(name, "sky130_fd_sc_hd__nand2_1", p) for name, p in pins.items()}
    nets = {"n": [("d", "Y"), ("on", "A"), ("off1", "A"), ("off2", "B")], "m": [("on", "Y"), ("far", "A")]}
    return Netlist("t", instances, {}, nets, original={"off1": "o[1]$x", "d": "d", "on": "on", "off2": "off2",
                                                       "far": "far", "n": "n", "m": "m"})


def test_parse_names_the_kept_buffers_and_refuses_what_the_netlist_cannot_have(tmp_path: Path):
    line = f"CLOSER_ISOLATE {BUF1} d/Y o[1]$x/A off2/B\n"
    [iso] = buffering.parse_isolations(line, _netlist(), tmp_path / "log")
    assert iso == buffering.Isolation(BUF1, ("d", "Y"), (("off1", "A"), ("off2", "B")))
    for bad, why in ((line.replace("off2/B", "ghost/B"), "not a pin"), (line.replace("off2/B", "far/A"), "not on its net"),
                     (line.replace(BUF1, "sky130_fd_sc_hd__clkbuf_1"), "not one of")):
        with pytest.raises(ToolError, match=why):
            buffering.parse_isolations(bad, _netlist(), tmp_path / "log")


def test_netlist_edit_moves_only_the_off_path_loads():
    netlist = _netlist()
    iso = buffering.Isolation(BUF1, ("d", "Y"), (("off1", "A"), ("off2", "B")))
    [buf] = buffering.add_isolations(netlist, [iso]).buffers
    assert buf.name == "setup_iso_0" and netlist.instances[buf.name].master == BUF1
    assert sorted(netlist.nets["n"]) == [("d", "Y"), ("on", "A"), ("setup_iso_0", "A")]
    assert sorted(netlist.nets[buf.output_net]) == [("off1", "A"), ("off2", "B"), ("setup_iso_0", "X")]
    assert netlist.instances["off1"].pins["A"] == buf.output_net and netlist.instances["on"].pins["A"] == "n"
    [again] = buffering.add_isolations(netlist, [buffering.Isolation(BUF1, ("on", "Y"), (("far", "A"),))]).buffers
    assert again.name == "setup_iso_1"  # a later round never reuses a name


@pytest.mark.slow
def test_isolation_improves_a_failing_gcd_and_leaves_a_met_one(repo, pdk_paths, tmp_path: Path):
    from closer.physical.io.lef import read_macros

    macros = read_macros(pdk_paths.cell_lef)
    src, sdc, netlist = _gcd_netlist(repo, pdk_paths, tmp_path, 6.0)
    lib = pdk_paths.liberty(SS)
    cfg = sizing.SizingConfig(max_passes=0, buffer_passes=4, setup_derate=1.0, drv_repair=False)  # buffering alone
    r = sizing.size_for_setup(SS, lib, src, "gcd", sdc, None, False, netlist, macros, cfg, tmp_path / "w")
    assert r.ws_before_ns < 0 and not r.resized and r.isolations and r.ws_after_ns > r.ws_before_ns
    assert all(len(i.sinks) >= 1 and i.master in buffering.BUFFER_CELLS for i in r.isolations)
    tree = buffering.add_isolations(netlist, r.isolations)
    for buf, iso in zip(tree.buffers, r.isolations):  # the path's own load stays on the driver's net
        kept = [p for p in netlist.nets[buf.input_net] if p != iso.driver and p[0] != buf.name]
        assert kept and all(pin != "CLK" for _, pin in iso.sinks)
    buffered = cts.write_verilog(src, tmp_path / "buffered.v", netlist, tree)
    assert sta.run_sta(SS, lib, buffered, "gcd", sdc, None, tmp_path / "w").setup_ws_ns == pytest.approx(r.ws_after_ns, abs=1e-3)
    met = relaxed_run(lib, src, netlist, macros, cfg, tmp_path)
    assert met.ws_before_ns >= 0 and not met.isolations and met.ws_after_ns == met.ws_before_ns
