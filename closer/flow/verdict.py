"""The sign-off verdict of a flow run, read from its metadata.json: routing complete, DRC clean
(the official deck), LVS clean, no antenna violation, and at every STA corner setup and hold met with no max-slew or max-capacitance
violation (the routed-SPEF `finish__` keys); LEC when the run has a result for it.

`closer flow run` prints `Verdict.line()` last; `--strict` exits 1 when `Verdict.passed` is false
(also when the run stopped before the physical flow, where there is nothing to sign off).
"""

from __future__ import annotations

from pydantic import BaseModel

from closer import metrics as mk

CORNER_CHECKS = (("setup", "finish__timing__setup__ws"), ("hold", "finish__timing__hold__ws"))
DRV_CHECKS = (("slew", mk.DRV_MAX_SLEW), ("cap", mk.DRV_MAX_CAP))
LEC_KEY = "closer__lec__result"


class Check(BaseModel):
    name: str        # e.g. "route", "drc", "sta ss_100C_1v60"
    passed: bool
    detail: str      # what was read, for the line


class Verdict(BaseModel):
    reached: bool    # the physical flow ran (there is a layout to sign off)
    checks: list[Check]

    @property
    def passed(self) -> bool:
        return self.reached and all(c.passed for c in self.checks)

    def line(self) -> str:
        if not self.reached:
            return "sign-off: not reached (the run stopped before pnr)"
        word = "PASS" if self.passed else "FAIL"
        return f"sign-off: {word} | " + " | ".join(
            f"{c.name} {c.detail}{'' if c.passed else ' ✗'}" for c in self.checks)


def corners_of(meta: dict) -> list[str]:
    """The STA corners the run reported, signoff corner first, as recorded."""
    prefix = "finish__timing__setup__ws" + mk.CORNER_QUALIFIER
    return sorted((k[len(prefix):] for k in meta if k.startswith(prefix)),
                  key=lambda c: (c != "tt_025C_1v80", c))


def verdict(meta: dict) -> Verdict:
    if mk.ROUTE_DRC_ERRORS not in meta:
        return Verdict(reached=False, checks=[])
    checks = [_route(meta), _count("drc", meta.get(mk.SIGNOFF_DRC_ERRORS), "errors"),
              _count("lvs", meta.get(mk.SIGNOFF_LVS_ERRORS), "errors"),
              _count("antenna", meta.get(mk.ANTENNA_VIOLATING_NETS), "nets")]
    checks += [_corner(meta, corner) for corner in corners_of(meta)]
    if LEC_KEY in meta:
        checks.append(Check(name="lec", passed=meta[LEC_KEY] == "equivalent", detail=str(meta[LEC_KEY])))
    return Verdict(reached=True, checks=checks)


def _route(meta: dict) -> Check:
    unrouted = meta.get(mk.ROUTE_UNROUTED_NETS)
    ok = unrouted == 0
    return Check(name="route", passed=ok, detail=f"{'?' if unrouted is None else unrouted} unrouted")


def _count(name: str, value, unit: str) -> Check:
    ok = value == 0
    return Check(name=name, passed=ok, detail="clean" if ok else f"{'?' if value is None else value} {unit}")


def _corner(meta: dict, corner: str) -> Check:
    q = mk.CORNER_QUALIFIER + corner
    parts, ok = [], True
    for label, key in CORNER_CHECKS:
        value = meta.get(key + q)
        ok = ok and value is not None and value >= 0
        parts.append(f"{label} {'?' if value is None else f'{value:+.3f}'}")
    for label, key in DRV_CHECKS:
        value = meta.get(key + q)
        ok = ok and value == 0
        parts.append(f"{label} {'?' if value is None else value}")
    return Check(name=f"sta {corner}", passed=ok, detail=" ".join(parts))
