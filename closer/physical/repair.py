"""Search and repair after signoff: the nets at DRC markers and in LVS opens/shorts are ripped up
and rerouted by qrouter with the marker areas as obstructions, every other net's routing kept;
a round is kept only when the signed-off result gets strictly better (qrouter is deterministic,
so the loop is reproducible).

How the rest of the routing is kept: the repair run reads the routed DEF with the chosen nets'
wiring removed and marks every other net `ignore`d (qrouter then routes only the chosen nets
against the others' wiring, which it read from the DEF); the new wiring of the chosen nets is
spliced back into the full routed DEF, and their RC trees into the `.rc` file.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from closer.physical import drc, lvs
from closer.physical.gds import LAYERS

POWER_NETS = ("VPWR", "VGND")

# the metal layers whose wiring can take part in a violation of a rule on the given layer
RULE_METALS: dict[str, tuple[str, ...]] = {
    "li1": ("li1", "met1"), "mcon": ("li1", "met1"), "met1": ("met1",), "via": ("met1", "met2"),
    "met2": ("met2",), "via2": ("met2", "met3"), "met3": ("met3",), "via3": ("met3", "met4"),
    "met4": ("met4",), "via4": ("met4", "met5"), "met5": ("met5",),
}
# the qrouter layer an obstruction for a rule on the given layer goes on
RULE_OBSTRUCT: dict[str, str] = {"mcon": "met1", "via": "met1", "via2": "met2", "via3": "met3", "via4": "met4"}


@dataclass
class RepairConfig:
    rounds: int = 8
    obstruct: bool = True     # False: never add obstructions (the strategies' net windows only)


@dataclass
class Candidate:
    """One routed layout and its signoff."""

    routed_def: Path          # qrouter's DEF (before finalization)
    rc_file: Path
    failed: list[str]
    final_def: Path
    gds: Path
    drc: drc.DrcResult
    lvs: lvs.LvsResult

    @property
    def problems(self) -> int:
        return 10 * len(self.failed) + self.drc.total + len(self.lvs.opens) + len(self.lvs.shorts)


@dataclass
class RepairLog:
    rounds: list[dict] = field(default_factory=list)


def marker_windows(result: drc.DrcResult) -> list[tuple[str, tuple[float, float, float, float]]]:
    """(rule layer, marker box) for every DRC marker."""
    from closer.physical.drc_deck import RULES

    layer_of = {r.name: r.layer for r in RULES}
    out = []
    for rule, boxes in result.boxes.items():
        for box in boxes:
            out.append((layer_of[rule], box))
    return out


def nets_at(final_def: Path, tech_lef: Path, cell_lef: Path,
            windows: list[tuple[str, tuple[float, float, float, float]]], grow_um: float) -> set[str]:
    """Signal nets with wiring on a window's metals inside the grown window (KLayout's DEF reader
    keeps each wire's net name as a shape property)."""
    import klayout.db as kdb

    from closer.physical.gds import MAP_FILE

    opts = kdb.LoadLayoutOptions()
    cfg = opts.lefdef_config
    cfg.map_file = str(MAP_FILE)
    cfg.read_lef_with_def = False
    cfg.dbu = 0.001
    cfg.produce_net_names = True
    cfg.net_property_name = "net"
    with tempfile.TemporaryDirectory() as tmp:
        tech_link = Path(tmp) / "tech.lef"
        tech_link.symlink_to(tech_lef)
        cfg.lef_files = [str(tech_link), str(cell_lef)]
        layout = kdb.Layout()
        layout.read(str(final_def), opts)
    top = layout.top_cell()
    found: set[str] = set()
    for rule_layer, (x1, y1, x2, y2) in windows:
        box = kdb.DBox(x1 - grow_um, y1 - grow_um, x2 + grow_um, y2 + grow_um).to_itype(layout.dbu)
        for metal in RULE_METALS.get(rule_layer, (rule_layer,)):
            idx = layout.find_layer(*LAYERS[metal])
            if idx is None:
                continue
            for shape in top.shapes(idx).each_overlapping(box):
                net = shape.property("net")
                if net and net not in POWER_NETS:
                    found.add(str(net))
    return found


def lvs_nets(result: lvs.LvsResult) -> set[str]:
    nets = {o["net"] for o in result.opens}
    for short in result.shorts:
        nets.update(n for n in short["nets"] if not n.startswith("<"))
    return nets - set(POWER_NETS)


# ---- DEF surgery --------------------------------------------------------------------------

def _net_blocks(text: str) -> tuple[int, int, list[str]]:
    start = text.index("\nNETS ")
    end = text.index("END NETS", start)
    return start, end, re.split(r"\n(?=- )", text[start:end])


def _name(block: str) -> str | None:
    m = re.match(r"- (\S+)", block)
    return m.group(1) if m else None


def strip_routes(text: str, nets: set[str]) -> str:
    """The DEF with the wiring of `nets` removed (their connectivity kept)."""
    start, end, blocks = _net_blocks(text)
    out = []
    for block in blocks:
        if _name(block) in nets:
            cut = block.find("+ ROUTED")
            if cut >= 0:
                block = block[:cut].rstrip() + " ;"
        out.append(block)
    return text[:start] + "\n".join(out).rstrip() + "\n" + text[end:]


def splice_routes(base: str, rerouted: str, nets: set[str]) -> str:
    """`base` with the NETS entries of `nets` taken from `rerouted`."""
    new = {_name(b): b for b in _net_blocks(rerouted)[2] if _name(b) in nets}
    start, end, blocks = _net_blocks(base)
    out = [new.get(_name(b), b) if _name(b) in nets else b for b in blocks]
    return base[:start] + "\n".join(b.rstrip() for b in out) + "\n" + base[end:]


def splice_rc(base: Path, rerouted: Path, nets: set[str], out: Path) -> Path:
    new = {line.split(" ", 1)[0]: line for line in rerouted.read_text().splitlines() if line.strip()}
    lines = []
    for line in base.read_text().splitlines():
        name = line.split(" ", 1)[0] if line.strip() else None
        lines.append(new[name] if name in nets and name in new else line)
    out.write_text("\n".join(lines) + "\n")
    return out


ROUTING_LAYERS = ("li1", "met1", "met2", "met3", "met4", "met5")


def obstructions(windows: list[tuple[str, tuple[float, float, float, float]]], grow_um: float = 0.0,
                 above: bool = False) -> list[str]:
    """qrouter `obstruction` lines for marker windows. `above` also blocks the next layer up: for
    an m1.2 between an L1M1 pad and an M1M2 pad that keeps the M1M2 via (which can move) away
    without blocking the pin's L1M1 access (which cannot)."""
    lines = []
    for rule_layer, (x1, y1, x2, y2) in windows:
        layer = RULE_OBSTRUCT.get(rule_layer, rule_layer)
        layers = [layer]
        if above and layer in ROUTING_LAYERS[:-1]:
            layers.append(ROUTING_LAYERS[ROUTING_LAYERS.index(layer) + 1])
        g = grow_um
        lines += [f"obstruction {x1 - g:.3f} {y1 - g:.3f} {x2 + g:.3f} {y2 + g:.3f} {lay}" for lay in layers]
    return lines


@dataclass(frozen=True)
class Strategy:
    nets_grow_um: float              # marker box grown by this finds the nets to reroute
    obstruct: bool = True            # the marker areas become obstructions for the reroute
    obstruct_grow_um: float = 0.0
    above: bool = False              # ... on the next layer up too


# tried in order while rounds are discarded; back to the first after a kept round
STRATEGIES: tuple[Strategy, ...] = (
    Strategy(0.3), Strategy(0.3, True, 0.15, above=True), Strategy(1.0), Strategy(1.0, True, 0.15, above=True),
    Strategy(0.3, obstruct=False), Strategy(2.5))


def repair(first: Candidate, reroute: Callable[[Candidate, set[str], list[str], Path], tuple[Path, Path, list[str]]],
           signoff: Callable[[Path, Path, list[str], Path], Candidate],
           find_nets: Callable[[Candidate, float], set[str]], work: Path,
           cfg: RepairConfig) -> tuple[Candidate, RepairLog]:
    """Up to `cfg.rounds` rip-up-and-reroute rounds; returns the best candidate.

    reroute(base, nets, tcl_before_read, dir) -> (routed_def, rc, failed): qrouter on `nets` only,
        the rest of `base`'s wiring kept
    signoff(routed_def, rc, failed, dir) -> Candidate: finalize, GDS, DRC, LVS
    find_nets(candidate, grow_um) -> the nets at its markers, opens and shorts
    """
    best, log = first, RepairLog()
    strategy = 0
    for k in range(1, cfg.rounds + 1):
        if best.problems == 0 or strategy >= len(STRATEGIES):
            break
        s = STRATEGIES[strategy]
        nets = find_nets(best, s.nets_grow_um) | set(best.failed)
        if not nets:
            log.rounds.append({"round": k, "result": "no nets found at the markers"})
            break
        rdir = work / f"round{k}"
        shutil.rmtree(rdir, ignore_errors=True)
        rdir.mkdir(parents=True)
        before = obstructions(marker_windows(best.drc), s.obstruct_grow_um, s.above) \
            if s.obstruct and cfg.obstruct else []
        routed_def, rc, failed = reroute(best, nets, before, rdir)
        cand = signoff(routed_def, rc, failed, rdir)
        entry = {"round": k, "strategy": s.__dict__, "obstructions": len(before), "nets": sorted(nets)[:40],
                 "before": best.problems, "after": cand.problems, "drc": cand.drc.total,
                 "lvs_opens": len(cand.lvs.opens), "lvs_shorts": len(cand.lvs.shorts), "unrouted": len(cand.failed)}
        if cand.problems < best.problems:
            best, strategy = cand, 0
            entry["result"] = "kept"
        else:
            strategy += 1
            entry["result"] = "discarded"
        log.rounds.append(entry)
    return best, log
