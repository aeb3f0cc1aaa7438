"""Detailed routing with qrouter 1.4.88 (built by scripts/build-qrouter.sh).

Best configuration measured (see docs/physical.md): the real tech LEF; the derived pin-access
cell LEF (`pinaccess`); li1 obstructed (no qrouter-made L1M1 vias at all); `via stack all`;
fixed default vias (`via use ...`); and qrouter's rip-up schedule stopped at its best pass:
qrouter is deterministic, so when later passes get worse the run is replayed capped there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from closer.errors import ToolError, ToolMissing, ToolTimeout
from closer.paths import repo_paths
from closer.physical.floorplan.floorplan import DBU, Layout
from closer.physical.io.lef import Macro, read_tech
from closer.physical.io.netlist import Netlist
from closer.physical.route import blockpins
from closer.physical.route.pinaccess import AccessPoint
from closer.procs import Command, run
from closer.toolchain import QROUTER_PREFIX_ENV

QROUTER_VERSION = "1.4.88"
SCHEDULE = (("10", 10), ("20", 10), ("30", 10), ("40", 10), ("50", 10), ("60", 10), ("70", 10),
            ("80", 10), ("90", 10), ("100", 10), ("none", 20), ("none", 40), ("none", 60),
            ("none", 80), ("none", 100))


@dataclass
class RouteConfig:
    layers: int = 5                      # li1..met4 (met5 is left for nothing; 3.4 um pitch)
    fixed_vias: tuple[str, ...] = ("L1M1_PR", "M1M2_PR", "M2M3_PR", "M3M4_PR", "M4M5_PR")
    block_li1: bool = False              # li1 obstructed everywhere (measured: no gain)
    cap_at_best_pass: bool = True        # replay (qrouter is deterministic) stopped at the best pass
    save_best_min_nets: int = 1000       # from this many nets the best pass is written during the run
                                         # and taken instead of a replay (which doubles a long routing)
    max_passes: int = len(SCHEDULE)      # stage2 passes in the first run
    schedule: tuple[tuple[str, int], ...] = SCHEDULE  # stage 2's (mask, effort) per pass
    patience: int = 4                    # stop after this many passes without a new best
    priority_min_pins: int = 0           # >0: nets with that many pins routed first (gcd: 3 -> 20 unrouted, off)
    pass_budget_s: float = 1200.0        # no rip-up pass starts after this much routing time (the
                                         # best pass so far is taken); mac16x2 (3,346 cells) was at
                                         # 6 failed nets after 11 passes and ~20 min on 2 shared cores
    timeout_s: float = 1800.0            # hard limit: qrouter is killed (the saved best pass, if
                                         # any, is still taken)
    # QROUTER_CLOSER_PATCH per attempt: the first always; the next only when the previous left
    # nets unrouted, on designs below save_best_min_nets nets (the fewest failed nets wins).
    # qrouter's rip-up is chaotic: the pin reserve takes the weak gcd (off) from 10 unrouted nets
    # to 0 but leaves the weak gcd (defaults) at 12 where the keep-out alone routes it, and the
    # keep-out alone routes every design that routed before the reserve (docs/physical.md)
    patch_variants: tuple[str, ...] = ("keepout,tracks", "on")
    # from this many nets a global route (closer.physical.route.groute) guides stage 1: each net is
    # searched inside its GCells first (patch 03); 0: never. On PicoRV32 with net order 1 it is
    # the wide nets, routed last, that fail without it (docs/physical.md "Routing large designs")
    guides_min_nets: int = 3000
    guide_halo: int = 0                  # GCells the guides are grown by
    # qrouter's net order (patch 04): 0 upstream's (most pins first), 1 the bounding box's smaller
    # side first (narrow nets, which have the least room to move, go down before the wide ones)
    net_order: int = 0
    # stage 2 ends when `effort` rip-ups in a row made no progress; with thousands of failed nets a
    # fixed effort of 10 ends each pass after a few dozen nets. The effort of a pass is at least
    # this share of the nets still failed (0: the schedule's fixed efforts). Measured on PicoRV32 at
    # 1.0: each pass took minutes and ended above stage 1 (1,038 -> 1,532, 1,423), so it is off
    effort_per_failed: float = 0.0
    # from this many nets net order 1 and the one patch variant large_patch apply: measured on
    # PicoRV32 (9.5k nets), docs/physical.md "Routing large designs"; the suite's designs (at most
    # ~1.8k nets) keep the schedule their sign-off was measured with
    large_min_nets: int = 3000
    large_patch: str = "on"              # the one variant from large_min_nets nets (with net order 1,
                                         # stage 1 on PicoRV32: 1,769 failed against the keep-out's 2,023)
    # qrouter's `passes`: search rounds per route, each doubling the cost bound or widening the
    # search mask by a track (upstream 10; most of PicoRV32's stage-1 failures ran out of them).
    # From large_min_nets nets large_passes: PicoRV32 stage 1 1,038 -> 938 at 40 (979 at 20), with
    # fanout trees by placement 504 -> 432 (docs/physical.md)
    passes: int = 10
    large_passes: int = 40
    # qrouter's stage 3 after a complete route: every net of more than four segments ripped up and
    # routed again against the final wiring, one at a time. On PicoRV32 the full route took 927 s
    # with it (loaded machine) and 339 s without (alone), but what it leaves is clean: without it
    # 143 Closer-deck markers (m3.2 109,
    # m3.6 27) and LVS opens against 4 markers; firdma small 79 against 8 (docs/physical.md).
    # From large_min_nets nets large_stage3 applies
    stage3: bool = True
    large_stage3: bool = True

    def for_nets(self, nets: int) -> "RouteConfig":
        """The settings a design of `nets` nets is routed with."""
        if self.large_min_nets and nets >= self.large_min_nets:
            return replace(self, net_order=self.net_order or 1, patch_variants=(self.large_patch,),
                           passes=max(self.passes, self.large_passes), stage3=self.stage3 and self.large_stage3)
        return self


@dataclass
class RouteResult:
    routed_def: Path
    rc_file: Path
    failed_nets: int
    passes: list[int] = field(default_factory=list)  # failures after stage1 and each stage2 pass
    failed: list[str] = field(default_factory=list)  # names of the nets qrouter left unrouted
    capped_at: int | None = None
    wall_s: float = 0.0
    peak_rss_mb: float = 0.0
    time_limited: bool = False  # the pass budget or the hard limit ended the rip-up schedule
    patch: str | None = None    # the QROUTER_CLOSER_PATCH value it was routed with (None: the environment's)
    tried: list[tuple[str | None, int]] = field(default_factory=list)  # (patch, best pass's failed nets) per variant run
    cpu_s: float = 0.0          # qrouter's CPU time (wall times on a shared machine say little)
    log: Path | None = None     # the qrouter log of the run this state comes from
    guides: Path | None = None  # the global route's guides it was routed with (None: unguided)


def qrouter_binary() -> Path:
    """`$CLOSER_QROUTER_PREFIX/bin/qrouter` (another build, e.g. for a before/after measurement),
    else the one scripts/build-qrouter.sh installs into the venv."""
    prefix = os.environ.get(QROUTER_PREFIX_ENV)
    path = (Path(prefix) if prefix else repo_paths().venv / "opt" / "qrouter") / "bin" / "qrouter"
    if not path.is_file():
        raise ToolMissing(f"qrouter {QROUTER_VERSION} not built at {path}: run scripts/build-qrouter.sh")
    return path


def qrouter_version() -> str:
    return f"qrouter {QROUTER_VERSION} (Debian sid orig tarball, built by scripts/build-qrouter.sh)"


def _script(tech_lef: Path, cell_lef: Path, in_def: Path, out_def: Path, rc: Path,
            layout: Layout, cfg: RouteConfig, max_pass: int, priority: list[str] = (),
            before_read: list[str] = (), after_read: list[str] = (), save_best: Path | None = None) -> str:
    """`before_read` / `after_read`: Tcl lines for the repair step (`obstruction` must come
    before read_def, which applies user obstructions; `ignore` after it, which names nets).
    `save_best`: a folder where each new best state is written (DEF, RC, failed nets), as it
    stands (qrouter's final `cleanup` runs only at the end; measured on mac16 at density 0.30,
    before qrouter patch 02 made repeated `write_def`s complete: 47 unrouted / 112 DRC this way,
    74 / 167 with a `cleanup all` before each save)."""
    masks = " ".join(m for m, _ in cfg.schedule)
    efforts = " ".join(str(e) for _, e in cfg.schedule)
    lines = _setup(tech_lef, cell_lef, cfg)
    lines += outside_die(layout, [layer.name for layer in read_tech(tech_lef).routing_layers])
    if cfg.block_li1:
        lines.append(f"obstruction 0 0 {layout.die_w / DBU} {layout.die_h / DBU} li1")
    if cfg.passes != 10:  # qrouter's default: the suite's scripts stay as they were measured
        lines.append(f"passes {cfg.passes}")
    lines += list(before_read)
    lines += [
        f"read_def {in_def}",
        *after_read,
        *([f"priority {' '.join(priority)}"] if priority else []),
        *([f"proc closer_save {{}} {{ write_def {{{save_best / 'best.def'}}}; write_delays {{{save_best / 'best.rc'}}}; "
           f"set f [open {{{save_best / 'best_failed.txt'}}} w]; puts $f [failing]; close $f }}"] if save_best else []),
        "set t0 [clock seconds]",
        "set r [stage1]",
        'puts "CLOSER_PASS 0 $r"',
        "set pass 0",
        "set best $r",
        "set since 0",
        *(["if {$r > 0} closer_save"] if save_best else []),
        f"foreach m {{{masks}}} e {{{efforts}}} {{",
        f"  if {{$r == 0 || $pass >= {max_pass} || $since >= {cfg.patience}}} break",
        f"  if {{[clock seconds] - $t0 >= {cfg.pass_budget_s:.0f}}} {{ puts CLOSER_TIME_LIMIT; break }}",
        "  incr pass",
        ("  set r [stage2 mask $m effort [expr {max($e, int(ceil(%s * $r)))}]]" % repr(cfg.effort_per_failed)
         if cfg.effort_per_failed > 0 else "  set r [stage2 mask $m effort $e]"),
        '  puts "CLOSER_PASS $pass $r"',
        "  if {$r < $best} { set best $r; set since 0"
        + ("; if {$r > 0} closer_save" if save_best else "") + " } else { incr since }",
        "}",
        *(["if {$r == 0} {",
           "  set r [stage3]",
           '  puts "CLOSER_STAGE3 $r"',
           "  if {$r > 0} { set r [stage2 mask none] }",
           "}"] if cfg.stage3 else []),
        "cleanup all",
        'puts "CLOSER_FINAL $r"',
        f"write_def {out_def}",
        f"write_delays {rc}",
        "quit",
    ]
    return "\n".join(lines) + "\n"


OUTSIDE_DIE_UM = 20.0  # wider than qrouter's grid runs past the die (a few pitches of the coarsest layer)


def outside_die(layout: Layout, layers: list[str]) -> list[str]:
    """qrouter `obstruction` lines for a band OUTSIDE_DIE_UM wide around the die on every routing
    layer. qrouter 1.4.88 takes each layer's TRACKS as reaching start + step * DO (one pitch past the
    last track) and sizes one grid for all layers from the widest, so its met1/met2 grid has tracks
    up to 2.5 µm beyond PicoRV32's die. A full route rarely strays there (stage 1 follows the global
    route's guides); rip-up passes do, and PicoRV32's first diode round (then unguided) drew 16 wires above
    the die, 0.1 µm from the top-edge IO pins (18 m2.2 markers the repair could not mend). A user
    obstruction blocks the grid points within half a wire width of it, so the tracks inside the die
    stay free (docs/physical.md)."""
    w, h, m = layout.die_w / DBU, layout.die_h / DBU, OUTSIDE_DIE_UM
    bands = ((-m, -m, 0.0, h + m), (w, -m, w + m, h + m), (0.0, -m, w, 0.0), (0.0, h, w, h + m))
    return [f"obstruction {x1:.3f} {y1:.3f} {x2:.3f} {y2:.3f} {layer}" for layer in layers for x1, y1, x2, y2 in bands]


def _setup(tech_lef: Path, cell_lef: Path, cfg: RouteConfig) -> list[str]:
    """The lines every qrouter script starts with: LEFs, layers, vias, power nets."""
    return [
        f"read_lef {tech_lef}",
        f"read_lef {cell_lef}",
        f"catch {{layers {cfg.layers}}}",
        "via stack all",
        f"via use {' '.join(cfg.fixed_vias)}",
        "vdd VPWR",
        "gnd VGND",
    ]


def rc_from_def(tech_lef: Path, cell_lef: Path, routed_def: Path, out_rc: Path, cfg: RouteConfig, work: Path) -> Path:
    """Every net's RC tree from a routed DEF qrouter did not route in one run (band routing's
    merged layout): qrouter reads it and writes its delays, routing nothing."""
    tcl = work / "rc_from_def.tcl"
    tcl.write_text("\n".join([*_setup(tech_lef, cell_lef, cfg), f"read_def {routed_def}", f"write_delays {out_rc}", "quit"]) + "\n")
    run(Command([str(qrouter_binary()), "-noc", "-nog", "-s", str(tcl)], cwd=work, timeout_s=cfg.timeout_s,
                env=_qrouter_env(None, None, 0)), work / "rc_from_def.log")
    if not out_rc.is_file():
        raise ToolError(f"qrouter wrote no RC file from {routed_def}; log: {work / 'rc_from_def.log'}")
    return out_rc


def failed_nets(log: Path) -> list[str]:
    text = log.read_text(errors="replace")
    if "List of failed nets follows:" not in text:
        return []
    return text.rsplit("List of failed nets follows:", 1)[1].split("-----", 1)[0].split()


_FELL_THROUGH = re.compile(r"^Fell through \d+ passes\n\(([-\d.]+),([-\d.]+)\) net=(\S+)$", re.M)


def fall_through_points(log: Path, nets: list[str]) -> dict[str, tuple[float, float]]:
    """Per net of `nets`, the point (um) where qrouter's last search for it that ran out of
    passes started (qrouter's "Fell through N passes" and the tap under it); nets whose search
    never fell through (a route start or end node not found) are not listed."""
    wanted = set(nets)
    found = {net: (float(x), float(y)) for x, y, net in _FELL_THROUGH.findall(log.read_text(errors="replace"))
             if net in wanted}
    return {net: found[net] for net in nets if net in found}


def _passes(log_text: str) -> list[int]:
    return [int(v) for v in re.findall(r"^CLOSER_PASS \d+ (\d+)", log_text, re.M)]


def _parse(log: Path) -> tuple[list[int], int]:
    text = log.read_text(errors="replace")
    passes = _passes(text)
    final = re.findall(r"^CLOSER_FINAL (\d+)", text, re.M)
    if not final:
        raise ToolError(f"qrouter did not finish its schedule; log: {log}")
    return passes, int(final[-1])


PATCH_ENV = "QROUTER_CLOSER_PATCH"
SEARCH_PARTS = ("keepout", "tracks", "reserve")  # the parts "on" names besides release
HOLD, RELEASE = "hold", "release"  # what a reroute's stage 2 may do to the nets it keeps


GUIDES_ENV = "QROUTER_CLOSER_GUIDES"  # patch 03: the global route's guides for stage 1


ORDER_ENV = "QROUTER_CLOSER_ORDER"    # patch 04: the net order method


def _patch_env(patch: str | None, guides: Path | None = None, order: int = 0) -> dict[str, str]:
    return {**({PATCH_ENV: patch} if patch else {}), **({GUIDES_ENV: str(guides)} if guides else {}),
            **({ORDER_ENV: str(order)} if order else {})}


def _qrouter_env(patch: str | None, guides: Path | None, order: int) -> dict[str, str]:
    """qrouter's environment: the patch switches, with the guides and the net order always set
    (empty / 0 when unused), so that an outer environment cannot change what the config routes."""
    return {GUIDES_ENV: "", ORDER_ENV: "0", **_patch_env(patch, guides, order)}


def route(tech_lef: Path, router_lef: Path, in_def: Path, layout: Layout, work: Path,
          cfg: RouteConfig, netlist: Netlist | None = None, guides: Path | None = None,
          before_read: tuple[str, ...] = (), first: tuple[str, ...] = ()) -> RouteResult:
    """qrouter with each of `cfg.patch_variants` in turn (the first in `work`, the others in a
    subfolder each) until one leaves no net unrouted; else the one whose best pass failed the
    fewest nets, and only that one is replayed to its best pass (see `_route_once`). A
    QROUTER_CLOSER_PATCH set in the environment is the only variant. `guides`: the global route's
    guides file (groute.write_guides), which stage 1 searches inside first (patch 03).
    `before_read`: Tcl lines before read_def (`obstruction`s); `first`: nets routed before the others
    (qrouter's `priority`), in that order."""
    cfg = cfg.for_nets(len(netlist.nets)) if netlist is not None else cfg
    small = netlist is None or len(netlist.nets) < cfg.save_best_min_nets
    variants: tuple[str | None, ...] = (None,) if PATCH_ENV in os.environ else (
        cfg.patch_variants if small else cfg.patch_variants[:1])
    runs: list[_FullRun] = []
    for i, patch in enumerate(variants):
        folder = work / (patch or "").replace(",", "_") if i else work
        runs.append(_route_once(tech_lef, router_lef, in_def, layout, folder, cfg, netlist, patch, guides=guides,
                                before_read=before_read, first=first))
        if runs[-1].result is not None and runs[-1].result.failed_nets == 0:
            break
    chosen = min(runs, key=lambda r: r.best_failed)  # the first on a tie
    result = chosen.result or chosen.replay()
    result.wall_s = sum(r.wall_s for r in runs) + (result.wall_s if chosen.result is None else 0.0)
    result.cpu_s = sum(r.cpu_s for r in runs) + (result.cpu_s if chosen.result is None else 0.0)
    result.tried = [(r.patch, r.best_failed) for r in runs]
    return result


@dataclass
class _FullRun:
    """One variant's full schedule: its result, or (when its last pass was worse than its best,
    below save_best_min_nets nets) what replaying it capped at its best pass needs, deferred so
    that a variant another one beats is never replayed."""
    patch: str | None
    best_failed: int
    wall_s: float
    cpu_s: float
    result: RouteResult | None = None
    replay: Callable[[], RouteResult] | None = None


def _route_once(tech_lef: Path, router_lef: Path, in_def: Path, layout: Layout, work: Path,
                cfg: RouteConfig, netlist: Netlist | None, patch: str | None, guides: Path | None = None,
                before_read: tuple[str, ...] = (), first: tuple[str, ...] = ()) -> _FullRun:
    binary = qrouter_binary()
    work.mkdir(parents=True, exist_ok=True)
    out_def, rc = work / f"{layout.top}_route.def", work / f"{layout.top}.rc"

    # optional: high-fanout nets first (measured on gcd: worse, 3 -> 20 unrouted; off by default)
    priority = sorted((n for n, t in (netlist.nets.items() if netlist else []) if len(t) >= cfg.priority_min_pins),
                      key=lambda n: -len(netlist.nets[n])) if cfg.priority_min_pins else []
    priority = list(first) + [n for n in priority if n not in set(first)]

    best_dir = work / "best" if netlist is not None and len(netlist.nets) >= cfg.save_best_min_nets else None
    if best_dir is not None:
        shutil.rmtree(best_dir, ignore_errors=True)
        best_dir.mkdir()

    def attempt(max_pass: int, tag: str):
        tcl = work / f"route_{tag}.tcl"
        tcl.write_text(_script(tech_lef, router_lef, in_def, out_def, rc, layout, cfg, max_pass, priority,
                               before_read=list(before_read), save_best=best_dir if tag == "full" else None))
        done = run(Command([str(binary), "-noc", "-nog", "-s", str(tcl)], cwd=work, timeout_s=cfg.timeout_s,
                           env=_qrouter_env(patch, guides, cfg.net_order)), work / f"qrouter_{tag}.log", check=False)
        passes, final = _parse(done.log)
        return done, passes, final

    def saved_best(passes: list[int], wall: float, rss: float, limited: bool, cpu: float = 0.0) -> RouteResult:
        shutil.copyfile(best_dir / "best.def", out_def)
        shutil.copyfile(best_dir / "best.rc", rc)
        failed = list(dict.fromkeys((best_dir / "best_failed.txt").read_text().split()))  # listed once each
        return RouteResult(out_def, rc, len(failed), passes, failed, passes.index(min(passes)), wall, rss, limited,
                           patch, cpu_s=cpu, log=work / "qrouter_full.log")

    def finished(result: RouteResult) -> _FullRun:
        return _FullRun(patch, result.failed_nets, result.wall_s, result.cpu_s, result)

    try:
        done, passes, final = attempt(cfg.max_passes, "full")
    except ToolTimeout:
        if best_dir is None or not (best_dir / "best.def").is_file():
            raise
        return finished(saved_best(_passes((work / "qrouter_full.log").read_text(errors="replace")),
                                   cfg.timeout_s, 0.0, True))
    limited = time_limited(done.log)
    if best_dir is not None and final > 0 and passes and min(passes) < final and (best_dir / "best.def").is_file():
        return finished(saved_best(passes, done.wall_s, done.peak_rss_mb, limited, done.cpu_s))
    if not out_def.is_file():
        raise ToolError(f"qrouter wrote no DEF; log: {done.log}")
    if cfg.cap_at_best_pass and final > 0 and passes and min(passes) < final:
        best = passes.index(min(passes))

        def replay() -> RouteResult:
            done2, _, final2 = attempt(best, f"capped{best}")
            return RouteResult(out_def, rc, final2, passes, failed_nets(done2.log) if final2 else [], best,
                               done2.wall_s, max(done.peak_rss_mb, done2.peak_rss_mb), limited, patch,
                               cpu_s=done2.cpu_s, log=done2.log)

        return _FullRun(patch, min(passes), done.wall_s, done.cpu_s, replay=replay)
    return finished(RouteResult(out_def, rc, final, passes, failed_nets(done.log) if final else [], None,
                                done.wall_s, done.peak_rss_mb, limited, patch, cpu_s=done.cpu_s, log=done.log))


def finalize_def(routed_def: Path, layout: Layout, netlist: Netlist, macros: dict[str, Macro],
                 table: dict[str, dict[str, AccessPoint | None]], out_def: Path,
                 mode: str = "hybrid", failed: list[str] | None = None) -> Path:
    """Merge qrouter's trailing stub SPECIALNETS into the power section and add the pin-access
    L1M1_PR vias (one per connected pin) as special wiring of their nets. Nets qrouter left
    unrouted get no access vias: their pads would be dangling metal (they are opens anyway)."""
    skip = set(failed or [])
    text = on_grid_rows(routed_def.read_text())
    end_nets = text.index("END NETS")
    tail = text[end_nets:]
    stubs: list[str] = []
    m = re.search(r"\nSPECIALNETS\s+\d+\s*;\s*\n(.*?)(?:END SPECIALNETS\s*\n)?END DESIGN", tail, re.S)
    if m:
        stubs = [e.strip() for e in re.split(r"\n(?=- )", m.group(1).strip()) if e.strip()]
        text = text[:end_nets] + tail[:m.start()] + "\nEND DESIGN\n"
    vias: dict[str, list[tuple[int, int]]] = {}
    geometry = _net_geometry(text)
    for net, terms in netlist.nets.items():
        if len(terms) < 2 or net in skip:
            continue
        for inst_name, pin in terms:
            if inst_name == "PIN":
                continue
            inst = netlist.instances[inst_name]
            ap = table.get(inst.master, {}).get(pin)
            if ap is None or mode == "lef":
                continue
            placed = layout.cells[inst_name]
            macro = macros[inst.master]

            def die(x: int, y: int) -> tuple[int, int]:
                return placed.x + x, placed.y + (y if placed.orient == "N" else round(macro.height * DBU) - y)

            if ap.needs_pad or mode == "pads":
                vias.setdefault(net, []).append(die(ap.x, ap.y))
                continue
            # qrouter sometimes ends a route on met1 exactly on an li1 pin spot without writing
            # the L1M1 via (measured on gcd: 4 nets "routed" but open); add the missing via
            segs, l1m1 = geometry.get(net, ([], set()))
            for sx, sy in ap.on_grid:
                pt = die(sx, sy)
                if pt not in l1m1 and any(_on_segment(pt, seg) for seg in segs):
                    vias.setdefault(net, []).append(pt)
    entries = list(stubs)
    for net, pts in sorted(vias.items()):
        body = "\n    NEW ".join(f"li1 0 ( {x} {y} ) L1M1_PR" for x, y in pts)
        entries.append(f"- {net}\n  + ROUTED {body} ;")
    for net, paths in sorted(blockpins.special_wiring(layout.pin_reaches, skip).items()):
        entries.append(f"- {net}\n  + ROUTED " + "\n    NEW ".join(paths) + " ;")
    sm = re.search(r"SPECIALNETS\s+(\d+)\s*;", text)
    if sm is None:
        raise ToolError(f"{routed_def}: no SPECIALNETS section (power grid missing)")
    count = int(sm.group(1)) + len(entries)
    end_sp = text.index("END SPECIALNETS", sm.end())
    text = (text[:sm.start()] + f"SPECIALNETS {count} ;" + text[sm.end():end_sp]
            + "\n".join(entries) + "\n" + text[end_sp:])
    out_def.write_text(text)
    return out_def


GRID_Y0, GRID_PITCH = 170, 340  # qrouter's y grid for every horizontal layer (DEF units, nm)
_OFFSET_SEG = re.compile(
    r"(?P<head>(?:NEW|\+ ROUTED) (?P<layer>met1|met3)) \( (?P<xa>-?\d+) (?P<yo>-?\d+) \) \( (?P<xb>-?\d+) \* \)"
    r"(?P<via> \w+)?(?P<rest>[^\n]*)\n(?P<next>\s*NEW \w+ \( (?P=xb) (?P<yg>-?\d+) \))")


def on_grid_rows(def_text: str) -> str:
    """qrouter's routed DEF with its offset wires back on the grid rows it routed them on (the
    two passes below): the wiring the final DEF has, and the wiring a reroute must read. Read
    as written, an offset wire lands on the neighbouring row ("Coordinate ... corrected to"),
    and the row it really holds looks free: PicoRV32's first diode reroute put `fo_net_144` on
    the met1 row under `fo_net_185`'s offset wire, an LVS short once both were finalized."""
    text, _ = snap_offset_segments(def_text)
    text, _ = snap_offset_wires_to_net_rows(text)
    return text


def snap_offset_segments(def_text: str) -> tuple[str, int]:
    """Undo qrouter's offset on whole wires. When a tap is off the grid, qrouter 1.4.88 writes
    the last horizontal wire of the route (and the via at its far end) shifted by the tap's
    offset, although it routed (and reserved) the grid row: measured on gcd, such a met1 wire
    0.155 um off its row touched another net's M1M2 pad (an LVS short) or made m1.2/m2.2
    errors. The wire and via go back to the grid row the next segment continues on, and a short
    jog at the tap end reaches the tap, which is how qrouter draws every other offset tap."""
    count = 0

    def fix(m: re.Match) -> str:
        nonlocal count
        yo, yg = int(m["yo"]), int(m["yg"])
        if (yo - GRID_Y0) % GRID_PITCH == 0 or (yg - GRID_Y0) % GRID_PITCH or abs(yo - yg) >= GRID_PITCH:
            return m.group(0)
        count += 1
        indent = re.match(r"\s*", m["next"]).group(0)
        return (f"{m['head']} ( {m['xa']} {yg} ) ( {m['xb']} * ){m['via'] or ''}{m['rest']}\n"
                f"{indent}NEW {m['layer']} ( {m['xa']} {yg} ) ( * {yo} )\n{m['next']}")

    return _OFFSET_SEG.sub(fix, def_text), count



_WIRE_PIECE = re.compile(r"(?P<head>(?:NEW|\+ ROUTED) (?P<layer>met1|met3)) \( (?P<xa>-?\d+) (?P<yo>-?\d+) \) "
                         r"\( (?P<xb>-?\d+) \* \)(?P<tail>[^\n]*)")


def _piece_points(block: str) -> list[tuple[int, int]]:
    """Every vertex of a net's routing, `*` resolved against the piece's previous vertex."""
    points: list[tuple[int, int]] = []
    for piece in re.split(r"\+\s*ROUTED|\bNEW\b", block)[1:]:
        prev = None
        for xs, ys in re.findall(r"\(\s*(\S+)\s+(\S+)(?:\s+\S+)?\s*\)", piece):
            if prev is None and "*" in (xs, ys):
                break
            prev = (prev[0] if xs == "*" else int(xs), prev[1] if ys == "*" else int(ys))
            points.append(prev)
    return points


VIA_LAYERS = {"L1M1": ("li1", "met1"), "M1M2": ("met1", "met2"), "M2M3": ("met2", "met3"), "M3M4": ("met3", "met4"),
              "M4M5": ("met4", "met5")}
Span = tuple[int, int, int, int]  # a wire's centre line or a via point: x1, y1, x2, y2 (x1 <= x2, y1 <= y2)


def _layer_spans(block: str) -> dict[str, list[Span]]:
    """A net's routing per layer: every wire's centre line and every via point (on both its layers)."""
    out: dict[str, list[Span]] = {}
    for piece in re.split(r"\+\s*ROUTED|\bNEW\b", block)[1:]:
        layer = piece.split()[0] if piece.split() else ""
        prev = None
        for xs, ys in re.findall(r"\(\s*(\S+)\s+(\S+)(?:\s+\S+)?\s*\)", piece):
            if prev is None and "*" in (xs, ys):
                break
            point = (prev[0] if xs == "*" else int(xs), prev[1] if ys == "*" else int(ys))
            a = prev or point
            out.setdefault(layer, []).append((min(a[0], point[0]), min(a[1], point[1]),
                                              max(a[0], point[0]), max(a[1], point[1])))
            prev = point
        via = re.search(r"\b(L1M1|M1M2|M2M3|M3M4|M4M5)_\w+\s*;?\s*$", piece)
        if via and prev is not None:
            for via_layer in VIA_LAYERS[via.group(1)]:
                out.setdefault(via_layer, []).append((prev[0], prev[1], prev[0], prev[1]))
    return out


def snap_offset_wires_to_net_rows(def_text: str) -> tuple[str, int]:
    """The same qrouter offset when the shifted wire ends in a via instead of continuing (so
    `snap_offset_segments` sees no next segment on the grid row). The row is the one where the
    net's other routing meets the wire (a via landing on it), within one pitch of the written y.
    Measured on fifo8: a Q-to-mux met1 wire written 0.155 um above its row touched the L1M1 pad
    of the next pin (an LVS short the repair could not remove: every reroute wrote it again).
    Without that evidence (or with two such rows), the row is the one of the two grid rows
    within a pitch that no other net's routing on the layer crosses inside the wire's span:
    qrouter never puts two nets on one grid point. Measured on timer_arst `wide`: a mux A0 pad to
    flop Q wire written 0.185 um above its row, over another net's M1M2 pad on that row (the
    short `_004_`/`bank_185_` every repair round rewrote). First of all, a point of the net at the
    wire's far end on a row within a pitch is the row (the end via lands on the net's own via)."""
    count = 0
    start = def_text.index("\nNETS ")
    end = def_text.index("END NETS", start)
    blocks = re.split(r"\n(?=- )", def_text[start:end])
    spans = {i: _layer_spans(block) for i, block in enumerate(blocks)}

    def taken(row: int, xa: int, xb: int, layer: str, own: int) -> bool:
        lo, hi = min(xa, xb), max(xa, xb)
        return any(y1 <= row <= y2 and x1 <= hi and x2 >= lo
                   for i, layers in spans.items() if i != own for x1, y1, x2, y2 in layers.get(layer, ()))

    for i, block in enumerate(blocks):
        points = _piece_points(block)

        def fix(m: re.Match) -> str:
            nonlocal count
            yo, xa, xb = int(m["yo"]), int(m["xa"]), int(m["xb"])
            if (yo - GRID_Y0) % GRID_PITCH == 0:
                return m.group(0)
            near = {(x, y) for x, y in points if (y - GRID_Y0) % GRID_PITCH == 0 and abs(y - yo) < GRID_PITCH}
            # the wire's end via on the net's own routing at that x (firdma: the end of a met2 wire
            # whose via sits on the row; left as written, the two cuts were 0.035 um apart, via.2)
            rows = {y for x, y in near if x == xb}
            if len(rows) != 1:
                rows = {y for x, y in near if min(xa, xb) < x < max(xa, xb)}
            if len(rows) != 1:
                below = yo - (yo - GRID_Y0) % GRID_PITCH
                rows = {r for r in (rows or {below, below + GRID_PITCH}) if not taken(r, xa, xb, m["layer"], i)}
            if len(rows) != 1:
                return m.group(0)
            yg = rows.pop()
            count += 1
            tail = m["tail"].rstrip()
            end = " ;" if tail.endswith(";") else ""  # the net's last statement: the jog goes before its ;
            return (f"{m['head']} ( {xa} {yg} ) ( {xb} * ){tail.removesuffix(';').rstrip()} "
                    f"\n  NEW {m['layer']} ( {xa} {yg} ) ( * {yo} ){end}")

        blocks[i] = _WIRE_PIECE.sub(fix, block)
    return def_text[:start] + "\n".join(blocks) + def_text[end:], count


def _net_geometry(def_text: str) -> dict[str, tuple[list, set]]:
    """Per net of the NETS section: met1 segments ((x1, y1), (x2, y2)) and L1M1_PR via points."""
    start = def_text.index("\nNETS ")
    end = def_text.index("END NETS", start)
    out: dict[str, tuple[list, set]] = {}
    for block in re.split(r"\n(?=- )", def_text[start:end]):
        m = re.match(r"- (\S+)", block)
        if not m or "ROUTED" not in block:
            continue
        segs, vias = [], set()
        for piece in re.split(r"\+\s*ROUTED|\bNEW\b", block)[1:]:
            toks = re.findall(r"\(\s*(\S+)\s+(\S+)(?:\s+\S+)?\s*\)|([A-Za-z]\w*)", piece)
            layer, prev, pts = None, None, []
            for xs, ys, word in toks:
                if word:
                    if layer is None:
                        layer = word
                    elif word.startswith("L1M1") and prev is not None:
                        vias.add(prev)
                    continue
                x = prev[0] if xs == "*" else int(xs)
                y = prev[1] if ys == "*" else int(ys)
                if prev is not None and layer == "met1":
                    segs.append((prev, (x, y)))
                prev = (x, y)
                pts.append(prev)
            if layer == "met1" and len(pts) == 1:
                segs.append((pts[0], pts[0]))
        out[m.group(1)] = (segs, vias)
    return out


def _on_segment(pt: tuple[int, int], seg) -> bool:
    (x1, y1), (x2, y2) = seg
    return min(x1, x2) <= pt[0] <= max(x1, x2) and min(y1, y2) <= pt[1] <= max(y1, y2) and (
        x1 == x2 == pt[0] or y1 == y2 == pt[1])


def time_limited(log: Path) -> bool:
    """The run's rip-up schedule was stopped by its pass budget (`pass_budget_s`)."""
    return "\nCLOSER_TIME_LIMIT" in log.read_text(errors="replace")


def have_qrouter() -> bool:
    try:
        qrouter_binary()
        return shutil.which("wish") is not None or Path("/usr/bin/tclsh").exists()
    except ToolMissing:
        return False


def reroute(tech_lef: Path, router_lef: Path, routed_def: Path, rc_file: Path, layout: Layout, work: Path,
            cfg: RouteConfig, nets: set[str], before_read: list[str],
            patch: str | None = None, priority: list[str] = (),
            kept_nets: str = RELEASE, guides: Path | None = None) -> tuple[Path, Path, list[str]]:
    """Reroute only `nets` against the rest of `routed_def`'s wiring (see closer.physical.repair.repair),
    with the QROUTER_CLOSER_PATCH parts `patch` the routing used, the `priority` nets first;
    returns the spliced routed DEF and RC file and the nets qrouter left unrouted. `kept_nets` says
    what qrouter's stage 2 may do to the other nets (patches/qrouter-x-reroute-ignored-nets.patch):
    HOLD, never rip one up; RELEASE, rip up what blocks a route of `nets` and route it again, and
    then it is taken from qrouter's output with `nets` (`work/released.json` names them). `guides`:
    the full route's guides file, which stage 1 searches inside first (patch 03)."""
    from closer.physical.repair.repair import splice_rc, splice_routes, strip_routes

    binary = qrouter_binary()
    text = routed_def.read_text()
    partial = work / "partial.def"
    # the kept wiring as the final DEF has it (on_grid_rows); the spliced result keeps qrouter's
    # form, which finalize_def puts on the rows again
    partial.write_text(strip_routes(on_grid_rows(text), nets))
    start = text.index("\nNETS ")
    names = re.findall(r"\n- (\S+)", text[start:text.index("END NETS", start)])
    others = [n for n in names if n not in nets]
    out_def, out_rc = work / "rerouted.def", work / "rerouted.rc"
    tcl = work / "reroute.tcl"
    tcl.write_text(_script(tech_lef, router_lef, partial, out_def, out_rc, layout, cfg, cfg.max_passes, list(priority),
                           before_read=before_read, after_read=[f"ignore {' '.join(others)}"] if others else []))
    done = run(Command([str(binary), "-noc", "-nog", "-s", str(tcl)], cwd=work, timeout_s=cfg.timeout_s,
                       env=_qrouter_env(reroute_parts(patch, kept_nets), guides, cfg.net_order)), work / "qrouter_reroute.log",
               check=False)
    _, final = _parse(done.log)
    if not out_def.is_file():
        raise ToolError(f"qrouter wrote no DEF in the repair run; log: {done.log}")
    failed = failed_nets(done.log) if final else []
    released = released_nets(done.log)
    kept_ripped = ripped_nets(done.log) - set(nets) - released
    if kept_ripped:  # a build without the part: the output would lack these nets' new wiring
        raise ToolError(f"qrouter ripped up {len(kept_ripped)} kept nets without releasing them "
                        f"(e.g. {min(kept_ripped)}): rebuild it with scripts/build-qrouter.sh; log: {done.log}")
    (work / "released.json").write_text(json.dumps({"released": sorted(released)}, indent=1))
    taken = set(nets) | released
    merged = work / f"{layout.top}_route.def"
    merged.write_text(splice_routes(text, out_def.read_text(), taken))
    rc = splice_rc(rc_file, out_rc, taken, work / f"{layout.top}.rc")
    return merged, rc, failed


def reroute_parts(patch: str | None, kept_nets: str) -> str:
    """The QROUTER_CLOSER_PATCH value of a reroute: the parts that routed the layout (`patch`, else
    the environment's, else "on") that shape the search, with the part `kept_nets` (HOLD or RELEASE)
    in place of whichever the value named. Whatever parts routed it, a reroute never loses a net's
    wiring; a full route has no ignored net, where the two parts change nothing."""
    if kept_nets not in (HOLD, RELEASE):
        raise ValueError(f"kept_nets: {kept_nets!r} is neither {HOLD!r} nor {RELEASE!r}")
    value = patch if patch is not None else os.environ.get(PATCH_ENV) or "on"
    parts = list(SEARCH_PARTS) if value == "on" else [p for p in value.split(",") if p in SEARCH_PARTS]
    return ",".join([*parts, kept_nets])


_RIPPED = re.compile(r"^Ripping up (?:blocking )?net (\S+)$", re.M)
_RELEASED = re.compile(r"^Released ignored net (\S+)$", re.M)


def ripped_nets(log: Path) -> set[str]:
    """The nets qrouter's log says it ripped up."""
    return set(_RIPPED.findall(log.read_text(errors="replace")))


def released_nets(log: Path) -> set[str]:
    """The ignored nets qrouter's log says it released (ripped up, then routed and written)."""
    return set(_RELEASED.findall(log.read_text(errors="replace")))

