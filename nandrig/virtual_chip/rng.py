"""Counter-based randomness keyed by physical coordinates and history.

Every random quantity of the virtual chip comes from a Philox generator whose
128-bit key hashes (chip seed, purpose, block, wordline, P/E count, ...). The
same physical operation therefore sees the same noise whatever else the
caller did before, on this block or any other.
"""
from __future__ import annotations

import numpy as np

from nandrig.chip.pattern import key  # the page seed hashes with the same key


def generator(*parts: int) -> np.random.Generator:
    return np.random.Generator(np.random.Philox(key=key(*parts)))


def uniform(*parts: int) -> float:
    """One uniform draw in [0, 1) without building a generator."""
    return (key(*parts) >> 75) / float(1 << 53)


# purposes: keep distinct so streams never collide
PROGRAM_NOISE, TAIL, RETENTION, READ_NOISE, TIMING, STAT_READ, VARIATION, DEFECT, COMPOSITION, STAT_DECODE = range(1, 11)
