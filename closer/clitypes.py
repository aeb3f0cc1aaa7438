"""Click parameter types for numbers: finite and in range (click's FloatRange lets NaN through,
since every comparison with NaN is false)."""

from __future__ import annotations

import math

import click


class FiniteFloat(click.ParamType):
    """A finite float in [min, max]; `min_open` makes the lower bound exclusive."""

    name = "number"

    def __init__(self, min: float | None = None, max: float | None = None, min_open: bool = False):
        self.min, self.max, self.min_open = min, max, min_open

    def convert(self, value, param, ctx) -> float:
        if isinstance(value, float) and math.isfinite(value):
            number = value
        else:
            try:
                number = float(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.min is not None and (number < self.min or (self.min_open and number == self.min)):
            self.fail(f"{number:g} must be {'>' if self.min_open else '>='} {self.min:g}", param, ctx)
        if self.max is not None and number > self.max:
            self.fail(f"{number:g} must be <= {self.max:g}", param, ctx)
        return number


POSITIVE = FiniteFloat(min=0, min_open=True)
REWARD = FiniteFloat(min=0, max=1)
