"""Small logic helpers shared by the gateware cores."""
from __future__ import annotations

from amaranth import Const


def popcount(v) -> object:
    """Set bits of v, as an adder tree (v at most 15 bits wide: a 4-bit result)."""
    return sum((v[i] for i in range(len(v))), Const(0, 4))
