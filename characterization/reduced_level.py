"""Reduced-level programming (FlexLevel's LevelAdjust with ReduceCode) through a chip's standard lower- and
upper-page programs: every cell of a wordline holds one of three states, 3 data bits over each pair of cells.

With the Gray map every MLC chip here uses (state: lower bit, upper bit; L0 11, L1 10, L2 00, L3 01), a cell
never reaches L2 when its lower and upper bits are never both 0: the three states are L0, L1 and L3, so the
gap below L3, the state that loses charge fastest, is twice the normal one. A wordline is read with VR2 and VR3
both moved to the middle of that gap (read retry), so a lower-page 0 and an upper-page 1 above it mean L3.

ReduceCode: the 8 values of 3 bits go to 8 of the 9 pairs of levels (a, b) (0: L0, 1: L1, 2: L3), leaving out
(L3, L3), the pair with most charge to lose. Walking the pairs (0,0) (0,1) (0,2) (1,2) (1,1) (1,0) (2,0) (2,1)
the values follow the reflected Gray code (0 1 3 2 6 7 5 4), so a cell read one level low after charge loss from
L3 costs one bit wherever it happens (L1 read as L0 costs one bit on four of the six pairs, three on the other
two). The capacity cost is 25 %: 3 bits per 2 cells against 4.
"""
from __future__ import annotations

import numpy as np

from nandrig.errors import NandrigError

# (level of the first cell, level of the second) per 3-bit value, 0..7
PAIRS = ((0, 0), (0, 1), (1, 2), (0, 2), (2, 1), (2, 0), (1, 1), (1, 0))
_VALUE_OF_PAIR = {pair: v for v, pair in enumerate(PAIRS)}
# level -> (lower bit, upper bit): L0, L1, L3
LEVEL_BITS = ((1, 1), (1, 0), (0, 1))
CAPACITY = 0.75  # data bits per cell over a normal MLC wordline's
# what tells a wordline that is not in reduced state, read as one: cells nearly all at L0 (erased), or more cell
# pairs at (L3, L3) than charge gain from L1 could put there (random data in normal state reads about a seventh
# of its pairs so: 15 % on mlc-small, tests/host/test_cli_rig.py)
ERASED_SHARE = 0.99
NOT_REDUCED_SHARE = 0.01


def levels_of(data_bits: np.ndarray) -> np.ndarray:
    """Cell levels (0, 1, 2) for data bits, 3 per pair of cells (a length that is a multiple of 3)."""
    d = np.asarray(data_bits, np.int64)
    if d.size % 3:
        raise NandrigError(f"ReduceCode takes 3 bits at a time, not {d.size}")
    values = d.reshape(-1, 3) @ np.array([4, 2, 1])
    return np.asarray(PAIRS, np.uint8)[values].ravel()


def bits_of(levels: np.ndarray) -> tuple[np.ndarray, int]:
    """Data bits from pairs of cell levels, and how many pairs were (L3, L3), which no value maps to (each read
    as the nearest pair that is, (L3, L1): a cell read one level low)."""
    lv = np.asarray(levels, np.int64).reshape(-1, 2)
    unknown = (lv[:, 0] == 2) & (lv[:, 1] == 2)
    lv = np.where(unknown[:, None], [2, 1], lv)
    table = np.full((3, 3), -1, np.int64)
    for (a, b), v in _VALUE_OF_PAIR.items():
        table[a, b] = v
    values = table[lv[:, 0], lv[:, 1]]
    return ((values[:, None] >> np.array([2, 1, 0])) & 1).astype(np.uint8).ravel(), int(unknown.sum())


def check_reduced(levels: np.ndarray, where: str) -> int:
    """The (L3, L3) pairs of a wordline read as reduced; refused (one line naming ``where``) when its levels say it
    is not in reduced state: erased, or too many pairs at (L3, L3)."""
    lv = np.asarray(levels).reshape(-1, 2)
    if np.mean(lv == 0) >= ERASED_SHARE:
        raise NandrigError(f"{where} reads erased: it holds no reduced-state data")
    forbidden = int(np.sum((lv[:, 0] == 2) & (lv[:, 1] == 2)))
    if forbidden > NOT_REDUCED_SHARE * len(lv):
        raise NandrigError(f"{where} is not in reduced state: {forbidden / len(lv):.1%} of its cell pairs read (L3, L3), "
                           f"which ReduceCode never writes (a reduced wordline: under {NOT_REDUCED_SHARE:.0%})")
    return forbidden


def page_bits(levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower page bits, upper page bits) that program cells to ``levels`` through standard programs."""
    lb = np.asarray(LEVEL_BITS, np.uint8)[np.asarray(levels, np.int64)]
    return lb[:, 0], lb[:, 1]


def levels_read(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Cell levels from a reduced wordline's two page reads (VR2 and VR3 at the same place): lower bit 0 is L3,
    else the upper bit tells L0 (1) from L1 (0)."""
    lo, up = np.asarray(lower, np.int64), np.asarray(upper, np.int64)
    return np.where(lo == 0, 2, np.where(up == 1, 0, 1)).astype(np.uint8)


def reference_offsets(vref: tuple[float, float, float], mu: tuple[float, float, float, float],
                      retry_step: float) -> tuple[int, int, int]:
    """Read-retry offsets (steps) that put VR2 and VR3 at the middle of L1 and L3 (from the states' means, as a
    vth-states sweep measures them), VR1 where it is."""
    mid = (mu[1] + mu[3]) / 2
    return 0, round((mid - vref[1]) / retry_step), round((mid - vref[2]) / retry_step)


def wordline_pages(data_bits: np.ndarray) -> tuple[bytes, bytes]:
    """(lower page, upper page) bytes that store ``data_bits`` (3 per pair of cells; 8 cells a byte) in reduced
    state."""
    lower, upper = page_bits(levels_of(data_bits))
    return np.packbits(lower).tobytes(), np.packbits(upper).tobytes()


def data_bits_per_wordline(raw_page_bytes: int) -> int:
    """Data bits a reduced wordline of ``raw_page_bytes`` pages holds: 3 per pair of cells."""
    return raw_page_bytes * 8 // 2 * 3
