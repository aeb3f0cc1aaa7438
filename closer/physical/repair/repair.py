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
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from closer import procs
from closer.physical import deadline
from closer.physical.io.defnets import block_name, net_blocks, stubs, with_stubs
from closer.physical.signoff import drc, lvs
from closer.physical.signoff.gds import LAYERS

POWER_NETS = ("VPWR", "VGND")
ROUTING_LAYERS = ("li1", "met1", "met2", "met3", "met4", "met5")
Box = tuple[float, float, float, float]  # um: x1, y1, x2, y2
Window = tuple[str, Box]                  # (layer, box): a marker or a located short

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
    rounds: int = 8           # batch rounds (every problem rerouted at once)
    item_rounds: int = 24     # then rounds on one problem at a time
    # no new round starts after this many CPU seconds of the repair (this process and the tools it
    # ran: closer.procs.tree_cpu_s): a safety net behind the rounds; CPU, not wall, so the machine's load does
    # not decide where a repair stops (a cut is still flagged: closer__repair__out_of_time)
    max_cpu_s: float = 480.0
    obstruct: bool = True     # False: never add obstructions (the strategies' net windows only)
    fill: bool = True         # every candidate gets the same-net fills (closer.physical.repair.cleanup)
                              # before DRC, so rounds are spent only on what a fill cannot fix
    # from this many instances a round's DRC checks only the rerouted nets' boxes (closer.physical.
    # signoff.drc windows) and takes the rest from the round it started from; the kept layout is
    # checked whole once at the end (PicoRV32: a whole-chip DRC is ~42 s a round)
    windowed_min_instances: int = 3000
    # no round on a layout with more unrouted nets than this (None: always): a round reroutes every
    # problem net against fixed dense wiring, and at this scale qrouter's rip-up does not free them
    # (PicoRV32 205 and 1,038 unrouted, firdma full 236: 788-954 s of rounds, none kept); the step
    # records why (closer__repair__skipped) and the layout goes on unchanged
    max_unrouted: int | None = 100


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
    short_windows: list[list[Window]] = field(default_factory=list)

    @property
    def problems(self) -> int:
        return 10 * len(self.failed) + self.drc.total + len(self.lvs.opens) + len(self.lvs.shorts)


@dataclass
class RepairLog:
    rounds: list[dict] = field(default_factory=list)


def marker_windows(result: drc.DrcResult) -> list[Window]:
    """(rule layer, marker box) for every DRC marker."""
    from closer.physical.signoff.drc_deck import RULES

    layer_of = {r.name: r.layer for r in RULES}
    out = []
    for rule, boxes in result.boxes.items():
        for box in boxes:
            out.append((layer_of[rule], box))
    return out


def _def_layout(final_def: Path, tech_lef: Path, cell_lef: Path):
    """The routed DEF with each wire's net name as a shape property (cells left empty)."""
    from closer.physical.signoff.gds import read_def

    return read_def(final_def, tech_lef, cell_lef, net_names=True)


def nets_at(final_def: Path, tech_lef: Path, cell_lef: Path,
            windows: list[Window], grow_um: float) -> set[str]:
    """Signal nets with wiring on a window's metals inside the grown window."""
    import klayout.db as kdb

    layout = _def_layout(final_def, tech_lef, cell_lef)
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


def short_windows(final_def: Path, tech_lef: Path, cell_lef: Path, short_nets: list[set[str]],
                  near_um: float = 0.2) -> list[list[Window]]:
    """Per LVS short, where the shorted nets' wires touch or come within `near_um` of each other
    on one metal (the LVS extraction knows the nets are joined, not where): the areas a
    reroute of those nets should avoid. The joint is often a wire against a via pad, and via
    pads carry no net name in KLayout's DEF import; the nearby wires locate it."""
    import klayout.db as kdb

    layout = _def_layout(final_def, tech_lef, cell_lef)
    top = layout.top_cell()
    d = round(near_um / layout.dbu)
    out: list[list[Window]] = []
    for nets in short_nets:
        windows: list[Window] = []
        for metal in ROUTING_LAYERS:
            idx = layout.find_layer(*LAYERS[metal])
            if idx is None:
                continue
            per_net: dict[str, kdb.Region] = {}
            for shape in top.shapes(idx).each():
                net = shape.property("net")
                if net in nets:
                    per_net.setdefault(str(net), kdb.Region()).insert(shape.polygon)
            names = sorted(per_net)
            for i, a in enumerate(names):
                for b in names[i + 1:]:
                    ra, rb = per_net[a], per_net[b]
                    boxes = [p.bbox() for p in (ra & rb).each()] + [e.bbox() for e in ra.separation_check(rb, d).each()]
                    windows += [(metal, (bx.left * layout.dbu, bx.bottom * layout.dbu, bx.right * layout.dbu,
                                         bx.top * layout.dbu)) for bx in boxes]
        out.append(windows)
    return out


def lvs_nets(result: lvs.LvsResult) -> set[str]:
    nets = {o["net"] for o in result.opens}
    for short in result.shorts:
        nets.update(n for n in short["nets"] if not n.startswith("<"))
    return nets - set(POWER_NETS)


# ---- DEF surgery --------------------------------------------------------------------------

def strip_routes(text: str, nets: set[str]) -> str:
    """The DEF with the wiring of `nets` removed, their pin stubs included (their connectivity kept)."""
    start, end, blocks = net_blocks(text)
    out = []
    for block in blocks:
        if block_name(block) in nets:
            cut = block.find("+ ROUTED")
            if cut >= 0:
                block = block[:cut].rstrip() + " ;"
        out.append(block)
    text = text[:start] + "\n".join(out).rstrip() + "\n" + text[end:]
    return with_stubs(text, [b for b in stubs(text) if block_name(b) not in nets])


def splice_routes(base: str, rerouted: str, nets: set[str]) -> str:
    """`base` with the NETS entries and pin stubs of `nets` taken from `rerouted` (a stale stub of
    the old wiring would stay as dangling metal, a missing new one leaves a pin unconnected); a net
    of `nets` that only `rerouted` has (a setup repair's buffer output) is added, and the NETS
    count follows."""
    new = {block_name(b): b for b in net_blocks(rerouted)[2] if block_name(b) in nets}
    start, end, blocks = net_blocks(base)
    have = {block_name(b) for b in blocks}
    out = [new.get(block_name(b), b) if block_name(b) in nets else b for b in blocks]
    out += [b for n, b in new.items() if n not in have]
    section = "\n".join(b.rstrip() for b in out) + "\n"
    if len(out) > len(blocks):
        section = re.sub(r"^\nNETS \d+ ;", f"\nNETS {sum(1 for b in out if block_name(b))} ;", section, count=1)
    text = base[:start] + section + base[end:]
    new_stubs: dict[str, str] = {}
    for b in stubs(rerouted):  # its own section comes first
        if block_name(b) in nets:
            new_stubs.setdefault(block_name(b), b)
    return with_stubs(text, [b for b in stubs(text) if block_name(b) not in nets] + list(new_stubs.values()))


def splice_rc(base: Path, rerouted: Path, nets: set[str], out: Path) -> Path:
    """`base`'s RC trees with those of `nets` from `rerouted` (a net new in `rerouted` appended)."""
    new = {line.split(" ", 1)[0]: line for line in rerouted.read_text().splitlines() if line.strip()}
    lines, seen = [], set()
    for line in base.read_text().splitlines():
        name = line.split(" ", 1)[0] if line.strip() else None
        seen.add(name)
        lines.append(new[name] if name in nets and name in new else line)
    lines += [line for name, line in new.items() if name in nets and name not in seen]
    out.write_text("\n".join(lines) + "\n")
    return out


def obstructions(windows: list[Window], grow_um: float = 0.0,
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


# batch phase: every problem at once, strategies tried in order while rounds are discarded (back
# to the first after a kept round); then one problem at a time with the item strategies
STRATEGIES: tuple[Strategy, ...] = (
    Strategy(0.3), Strategy(0.3, True, 0.15, above=True), Strategy(1.0), Strategy(1.0, True, 0.15, above=True),
    Strategy(0.3, obstruct=False), Strategy(2.5))
# per problem kind; a problem without windows (unrouted net, open) has one thing to try, since
# qrouter is deterministic. For a metal spacing marker the layer-above obstruction comes first:
# it is what moves an M1M2 via off the row next to a pin's L1M1 pad (the common m1.2 case).
ITEM_STRATEGIES: dict[str, tuple[Strategy, ...]] = {
    "drc": (Strategy(0.3, True, 0.15, above=True), Strategy(0.3), Strategy(1.0), Strategy(0.3, obstruct=False)),
    "short": (Strategy(0.3), Strategy(0.3, obstruct=False)),
    # the net alone first; then with the nets wired around its cells (`NetWindows`): a held
    # reroute's unrouted net is walled in by kept wiring near its pins, and the net alone comes
    # back unrouted round after round (PicoRV32, setup repair's diode round: six rounds of ~100 s)
    "net": (Strategy(0.0, obstruct=False), Strategy(1.0, obstruct=False), Strategy(3.0, obstruct=False)),
}

FindNets = Callable[[Candidate, list[Window], float], set[str]]
# a net -> the windows around its cells (where the wiring that walls in its pins lies)
NetWindows = Callable[[str], list[Window]]


@dataclass
class Problem:
    """One DRC marker, LVS open/short or unrouted net: what a per-problem round reroutes."""

    label: str
    kind: str  # drc | short | net (unrouted or open)
    windows: list[Window] = field(default_factory=list)
    nets: set[str] = field(default_factory=set)


def problems_of(cand: Candidate, net_windows: NetWindows | None = None) -> list[Problem]:
    def around(net: str) -> list[Window]:
        return net_windows(net) if net_windows else []

    out = [Problem(f"unrouted {n}", "net", around(n), nets={n}) for n in cand.failed]
    out += [Problem(f"lvs open {o['net']}", "net", around(o["net"]), nets={o["net"]}) for o in cand.lvs.opens]
    for i, s in enumerate(cand.lvs.shorts):
        windows = cand.short_windows[i] if i < len(cand.short_windows) else []
        out.append(Problem(f"lvs short {'/'.join(s['nets'][:3])}", "short", windows=windows,
                           nets={n for n in s["nets"] if not n.startswith("<")}))
    out += [Problem(f"drc {w[0]} at {w[1][0]:.2f},{w[1][1]:.2f}", "drc", windows=[w]) for w in marker_windows(cand.drc)]
    return out


def repair(first: Candidate, reroute: Callable[[Candidate, set[str], list[str], Path], tuple[Path, Path, list[str]]],
           signoff: Callable[[Path, Path, list[str], Path, Candidate, set[str]], Candidate], find_nets: FindNets, work: Path,
           cfg: RepairConfig, net_windows: NetWindows | None = None) -> tuple[Candidate, RepairLog]:
    """Rip-up-and-reroute rounds; returns the best candidate (a round is kept only when the
    signed-off result has strictly fewer problems).

    reroute(base, nets, tcl_before_read, dir) -> (routed_def, rc, failed): qrouter on `nets` only,
        the rest of `base`'s wiring kept
    signoff(routed_def, rc, failed, dir, base, nets) -> Candidate: finalize, GDS, DRC, LVS (`base`:
        the candidate the round started from, `nets`: the nets it rerouted)
    find_nets(candidate, windows, grow_um) -> the nets with wiring in the grown windows
    net_windows(net) -> the windows around a net's cells, for an unrouted net or an open (whose
        strategies with a grow reroute the nets wired there too; no obstruction is added)
    """
    state = {"best": first, "k": 0, "base": 0}  # base: the round that made `best`
    log = RepairLog()
    # qrouter is deterministic: the same nets rerouted with the same obstructions from the same
    # layout give the same round, so a repeat is skipped (PicoRV32: one repair ran six identical
    # rounds of ~100 s on an unrouted net whose strategies all chose the same nets)
    tried_rounds: dict[tuple, int] = {}
    cpu_end = procs.tree_cpu_s() + cfg.max_cpu_s
    last_round_s = [0.0]  # a round is expected to take as long as the last one (the flow's deadline)

    def out_of_time() -> bool:
        in_budget = procs.tree_cpu_s() < cpu_end
        in_deadline = deadline.allows(last_round_s[0])
        if in_budget and in_deadline:
            return False
        if not log.rounds or log.rounds[-1].get("result") != "out of time":
            log.rounds.append({"round": state["k"], "result": "out of time", "max_cpu_s": cfg.max_cpu_s,
                               "deadline": not in_deadline})
        return True

    def attempt(problem: Problem, s: Strategy, phase: str) -> bool:
        best = state["best"]
        # a net problem's windows are where to look for neighbours: with no grow, the net alone
        grown = problem.windows and (problem.kind != "net" or s.nets_grow_um > 0)
        nets = set(problem.nets) | (find_nets(best, problem.windows, s.nets_grow_um) if grown else set())
        if not nets:
            return False
        obstruct = s.obstruct and cfg.obstruct and problem.kind != "net"
        before = obstructions(problem.windows, s.obstruct_grow_um, s.above) if obstruct else []
        key = (state["base"], frozenset(nets), tuple(before))
        if key in tried_rounds:
            log.rounds.append({"round": None, "phase": phase, "problem": problem.label, "strategy": s.__dict__,
                               "result": "repeat", "same_as_round": tried_rounds[key]})
            return False
        state["k"] += 1
        tried_rounds[key] = state["k"]
        rdir = work / f"round{state['k']}"
        shutil.rmtree(rdir, ignore_errors=True)
        rdir.mkdir(parents=True)
        started = time.monotonic()
        routed_def, rc, failed = reroute(best, nets, before, rdir)
        cand = signoff(routed_def, rc, failed, rdir, best, nets)
        last_round_s[0] = time.monotonic() - started
        kept = cand.problems < best.problems
        log.rounds.append({"round": state["k"], "phase": phase, "problem": problem.label, "strategy": s.__dict__,
                           "obstructions": len(before), "nets": sorted(nets)[:40], "before": best.problems,
                           "after": cand.problems, "drc": cand.drc.total, "lvs_opens": len(cand.lvs.opens),
                           "lvs_shorts": len(cand.lvs.shorts), "unrouted": len(cand.failed),
                           "result": "kept" if kept else "discarded"})
        if kept:
            state["best"], state["base"] = cand, state["k"]
        return kept

    strategy = 0
    while state["k"] < cfg.rounds and state["best"].problems and strategy < len(STRATEGIES) and not out_of_time():
        items = problems_of(state["best"], net_windows)
        # the batch obstructs DRC markers only: a short's located windows are long stretches of
        # two wires, and blocking them all at once cost more than it fixed (measured on gcd)
        batch = Problem("all", "batch", [w for p in items if p.kind == "drc" for w in p.windows],
                        {n for p in items for n in p.nets})
        strategy = 0 if attempt(batch, STRATEGIES[strategy], "batch") else strategy + 1
    tried: set[str] = set()  # problems are recomputed after a kept round (it may fix others too)
    while True:
        todo = [p for p in problems_of(state["best"], net_windows) if p.label not in tried]
        if not todo:
            return state["best"], log
        problem = todo[0]
        tried.add(problem.label)
        for s in ITEM_STRATEGIES[problem.kind]:
            if state["k"] >= cfg.rounds + cfg.item_rounds or not state["best"].problems or out_of_time():
                return state["best"], log
            if attempt(problem, s, "item"):
                break
