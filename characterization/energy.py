"""Energy per operation and bit, and the published figures to hold it against.

Grupp et al. (MICRO'09) Table 3, the MLC parts (B-MLC8, B-MLC32, C-MLC64, D-MLC32, E-MLC8), measured with a
current probe for single operations, transfers excluded (their peak powers list the transfer apart). The ranges
leave out E-MLC8's read (0.002 nJ/bit) and erase (0.0057 nJ/bit), which the paper itself calls remarkable.
"""
from __future__ import annotations

from dataclasses import dataclass

GRUPP_MLC_NJ_PER_BIT = {"read": (0.093, 0.19), "program_lower": (0.46, 1.09), "program_upper": (2.07, 3.31),
                        "erase": (0.038, 0.070)}  # "fast" and "slow" pages: lower and upper on these chips
GRUPP_MLC_IDLE_MW = (8.5, 27.3)
GRUPP_MLC_TRANSFER_MW = {"read": (29.1, 42.8), "program": (22.4, 65.2)}  # peak power during the data transfer


@dataclass(frozen=True)
class OpEnergy:
    busy_nj_per_bit: float  # over R/B# low: the array's work
    transfer_nj_per_bit: float  # moving the page on the bus
    busy_mw: float  # mean power while busy
    transfer_mw: float


def per_bit(busy_pj: int, busy_ns: int, transfer_pj: int, transfer_ns: int, bits: int) -> OpEnergy:
    """One operation's energy per data bit (a page's for program and read, a block's for erase)."""
    return OpEnergy(busy_pj / 1e3 / bits, transfer_pj / 1e3 / bits, busy_pj / busy_ns if busy_ns else 0.0,
                    transfer_pj / transfer_ns if transfer_ns else 0.0)  # pJ/ns = mW


def within(value: float, band: tuple[float, float], factor: float = 2.0) -> bool:
    """Inside the published range widened by ``factor`` at each end."""
    return band[0] / factor <= value <= band[1] * factor
