"""Counter-based randomness keyed by physical coordinates and history.

Every random quantity of the virtual chip comes from a Philox generator whose
128-bit key hashes (chip seed, purpose, block, wordline, P/E count, ...). The
same physical operation therefore sees the same noise whatever else the
caller did before, on this block or any other.
"""
from __future__ import annotations

import numpy as np

_MASK = (1 << 64) - 1


def _splitmix(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def key(*parts: int) -> int:
    """A 128-bit key from integers (negative ones allowed)."""
    a, b = 0x6A09E667F3BCC908, 0xBB67AE8584CAA73B
    for p in parts:
        p &= _MASK
        a = _splitmix(a ^ p)
        b = _splitmix(b ^ a ^ (p * 0x9E3779B97F4A7C15 & _MASK))
    return (a << 64) | b


def generator(*parts: int) -> np.random.Generator:
    return np.random.Generator(np.random.Philox(key=key(*parts)))


def uniform(*parts: int) -> float:
    """One uniform draw in [0, 1) without building a generator."""
    return (key(*parts) >> 75) / float(1 << 53)


# purposes: keep distinct so streams never collide
PROGRAM_NOISE, TAIL, RETENTION, READ_NOISE, TIMING, STAT_READ, VARIATION, DEFECT, COMPOSITION = range(1, 10)
