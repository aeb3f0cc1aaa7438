"""Windowed DRC against the whole-chip check on a routed layout (issue 19: "a repair round checks
only the windows it changed, so a round on 10k cells costs seconds").

    .venv/bin/python bench/drc_windows.py PHYS_DIR [--nets 1 10 50] [--goal-s 10]

PHYS_DIR is a closer.physical run directory (final.def and <top>.gds), e.g. a flow-scaling run's
`.../job/pnr/0/phys`. For each count, that many routed nets (seeded choice) are taken as a
round's rerouted nets; the DRC reads only their wire and via boxes (the Repair step's windows)
with the whole-chip result as the base. Prints CPU seconds, the ratio against the goal, and
whether the windowed counts equal the whole check's (they must: nothing changed).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from closer.physical.steps.checks import WINDOW_GROW_UM  # noqa: E402
from closer.physical.io.defio import net_segment_boxes, read_routed_nets  # noqa: E402
from closer.physical.signoff import drc  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("phys", type=Path)
    ap.add_argument("--nets", type=int, nargs="+", default=[1, 10, 50])
    ap.add_argument("--goal-s", type=float, default=10.0, help="CPU seconds a round's DRC may take")
    args = ap.parse_args()
    final = args.phys / "final.def"
    gds = [g for g in args.phys.glob("*.gds")]
    if not final.is_file() or len(gds) != 1:
        sys.exit(f"error: {args.phys}: expected final.def and one GDS")
    t0 = time.process_time()
    whole = drc.run_drc(gds[0])
    whole_s = time.process_time() - t0
    print(f"{args.phys}: whole-chip DRC {whole_s:.1f} s CPU, {whole.total} markers")
    nets = sorted(n for n, r in read_routed_nets(final).items() if r.has_wiring)
    rng = random.Random(1)
    for k in args.nets:
        pick = set(rng.sample(nets, min(k, len(nets))))
        windows = [(a - WINDOW_GROW_UM, b - WINDOW_GROW_UM, c + WINDOW_GROW_UM, d + WINDOW_GROW_UM)
                   for boxes in net_segment_boxes(final, pick).values() for a, b, c, d in boxes]
        t0 = time.process_time()
        part = drc.run_drc(gds[0], windows=windows, base=whole)
        cpu = time.process_time() - t0
        print(f"  {k} nets ({len(windows)} windows): {cpu:.1f} s CPU, ratio to goal {cpu / args.goal_s:.2f}, "
              f"{whole_s / max(cpu, 1e-3):.0f}x faster; counts equal the whole check: {part.counts == whole.counts}")


if __name__ == "__main__":
    main()
