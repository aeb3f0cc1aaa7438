"""How the firdma oracle fails: every failure names the requirement of
oracles/firdma/requirements.toml it judges, also when a design output is X or Z where a check reads
it (an unknown value is a wrong value, never a simulator error or a bench model's crash)."""

from __future__ import annotations


class OracleFailure(AssertionError):
    pass


def check(condition: bool, req: str, message: str) -> None:
    """Fail with `[req] message` unless `condition`; `req` is a requirement id."""
    if not condition:
        raise OracleFailure(f"[{req}] {message}")


def known(signal, req: str, what: str) -> int:
    """The integer value of a design output, or an `[req]` failure naming the signal if any of its
    bits is X or Z."""
    value = signal.value
    if not value.is_resolvable:
        raise OracleFailure(f"[{req}] {what}: {signal._name} is {value} (X or Z), expected a 0/1 value")
    return int(value)
