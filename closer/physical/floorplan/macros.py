from dataclasses import dataclass


@dataclass(frozen=True)
class MacroPlacement:
    instance: str
    x_um: float
    y_um: float
    orient: str = "N"
    halo_um: float = 10.0
