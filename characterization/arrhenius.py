"""Arrhenius acceleration: a bake at temperature T as equivalent hours at a reference.

AF = exp(Ea/k * (1/T_ref - 1/T)), with temperatures in kelvin. Ea defaults to
1.1 eV, the usual assumption for charge-loss retention in JEDEC practice
(JESD22-A117 / JESD218 bake planning).
"""
from __future__ import annotations

import math

from nandrig.errors import NandrigError

BOLTZMANN_EV_PER_K = 8.617333262e-5
DEFAULT_EA_EV = 1.1
DEFAULT_REF_C = 25.0
# where a chip may be: stored or baked unpowered (datasheets' absolute-maximum storage range, -65..150 degC on
# commercial MLC parts; JEDEC retention bakes sit inside it), and run powered at ambient (industrial grade)
STORAGE_RANGE_C = (-65.0, 150.0)
OPERATING_RANGE_C = (-40.0, 85.0)


def check_temperature(temp_c: float, powered: bool, what: str = "--temp") -> None:
    """A temperature the chip survives: its storage range for a bake, its operating range when it sits powered
    at ambient (a wall-clock wait); refused with the range, before anything is worn."""
    lo, hi = OPERATING_RANGE_C if powered else STORAGE_RANGE_C
    if not (math.isfinite(temp_c) and lo <= temp_c <= hi):
        where = "operating range (it waits powered, at ambient)" if powered else "storage range (a bake)"
        raise NandrigError(f"{what} {temp_c:g} degC is outside a NAND chip's {where}, {lo:g}..{hi:g} degC")


def acceleration_factor(temp_c: float, ref_c: float = DEFAULT_REF_C, ea_ev: float = DEFAULT_EA_EV) -> float:
    for name, v in (("temperature", temp_c), ("reference temperature", ref_c)):
        if not math.isfinite(v) or v <= -273.15:
            raise NandrigError(f"{name} must be above absolute zero, got {v} degC")
    if not math.isfinite(ea_ev) or ea_ev <= 0:
        raise NandrigError(f"activation energy must be > 0 eV, got {ea_ev}")
    t, tr = temp_c + 273.15, ref_c + 273.15
    return math.exp(ea_ev / BOLTZMANN_EV_PER_K * (1.0 / tr - 1.0 / t))


def equivalent_hours(hours: float, temp_c: float, ref_c: float = DEFAULT_REF_C, ea_ev: float = DEFAULT_EA_EV) -> float:
    """Hours at ``ref_c`` that produce the same charge loss as ``hours`` at ``temp_c``."""
    if not math.isfinite(hours) or hours < 0:
        raise NandrigError(f"bake time must be >= 0 hours, got {hours}")
    return hours * acceleration_factor(temp_c, ref_c, ea_ev)


def bake_hours_for(target_hours: float, temp_c: float, ref_c: float = DEFAULT_REF_C, ea_ev: float = DEFAULT_EA_EV) -> float:
    """Bake time at ``temp_c`` equivalent to ``target_hours`` at ``ref_c``."""
    if not math.isfinite(target_hours) or target_hours < 0:
        raise NandrigError(f"retention target must be >= 0 hours, got {target_hours}")
    return target_hours / acceleration_factor(temp_c, ref_c, ea_ev)
