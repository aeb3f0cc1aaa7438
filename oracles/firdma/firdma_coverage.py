"""Functional coverage of one firdma oracle test: which bins of the specification's space it hit.

Bins (a fixed set, so every run reports the same denominator):
  register map   read and write of each register, one COEF, an unmapped address; reply code per kind
  responses      AXI4 read and write responses OKAY / EXOKAY / SLVERR / DECERR
  bursts         AR and AW burst lengths 1..16; a burst that ends exactly at a 4 KB boundary
  backpressure   each channel seen waiting (VALID high, READY low): m_axi AW, W, AR, R, B; lite B, R
  timing         abort while only reads are issued / with writes in flight; error on a read / write
Reported in the test's report (`coverage`: hit bins, missed bins, percentage) and in the log; not
a gate (the checks are).
"""

from __future__ import annotations

REGISTERS = ("ID", "CTRL", "STATUS", "SRC_ADDR", "DST_ADDR", "LEN", "SHIFT", "BURST", "CYCLES", "NTAPS")
RESP_NAMES = ("OKAY", "EXOKAY", "SLVERR", "DECERR")
WAIT_CHANNELS = ("AW", "W", "AR", "R", "B", "lite B", "lite R")


def all_bins() -> list[str]:
    bins = []
    for kind in ("read", "write"):
        bins += [f"reg {kind} {name}" for name in (*REGISTERS, "COEF", "unmapped")]
        bins += [f"lite {kind} reply OKAY", f"lite {kind} reply SLVERR"]
    bins += [f"axi {ch} {resp}" for ch in ("R", "B") for resp in RESP_NAMES]
    bins += [f"{ch} burst {n}" for ch in ("AR", "AW") for n in range(1, 17)]
    bins += ["AR burst ends at 4 KB", "AW burst ends at 4 KB"]
    bins += [f"wait {ch}" for ch in WAIT_CHANNELS]
    bins += ["abort during reads", "abort with writes in flight", "error on read", "error on write"]
    return bins


class Coverage:
    def __init__(self) -> None:
        self.hits: set[str] = set()

    def hit(self, bin_name: str) -> None:
        self.hits.add(bin_name)

    def register_access(self, kind: str, addr: int, resp: int, ntaps: int) -> None:
        word = (addr & 0xFFF) & ~3
        names = dict(zip(range(0, 0x28, 4), REGISTERS))
        if word in names:
            self.hit(f"reg {kind} {names[word]}")
        elif 0x100 <= word < 0x100 + 4 * max(ntaps, 1):
            self.hit(f"reg {kind} COEF")
        else:
            self.hit(f"reg {kind} unmapped")
        if resp in (0, 2):
            self.hit(f"lite {kind} reply {RESP_NAMES[resp]}")

    def summary(self) -> dict:
        bins = all_bins()
        hit = [b for b in bins if b in self.hits]
        return {"bins": len(bins), "hit": len(hit), "percent": round(100.0 * len(hit) / len(bins), 1),
                "missed": [b for b in bins if b not in self.hits]}

    def merge(self, other: "Coverage") -> None:
        self.hits |= other.hits
