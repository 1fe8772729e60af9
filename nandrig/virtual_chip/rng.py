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


class Rekeyed:
    """One Philox generator keyed afresh for each use: the draws ``generator(*parts)`` gives, without building a
    generator (the statistical read path keys one per page read). A use ends before the next keying."""

    def __init__(self) -> None:
        self._bits = np.random.Philox(key=0)
        self._gen = np.random.Generator(self._bits)
        self._state = self._bits.state

    def __call__(self, *parts: int) -> np.random.Generator:
        k = key(*parts)
        st = self._state
        st["state"]["counter"] = np.zeros(4, np.uint64)
        st["state"]["key"] = np.array([k & 0xFFFF_FFFF_FFFF_FFFF, k >> 64], np.uint64)
        st["buffer_pos"], st["has_uint32"], st["uinteger"] = 4, 0, 0
        self._bits.state = st
        return self._gen


def uniform(*parts: int) -> float:
    """One uniform draw in [0, 1) without building a generator."""
    return (key(*parts) >> 75) / float(1 << 53)


# purposes: keep distinct so streams never collide
PROGRAM_NOISE, TAIL, RETENTION, READ_NOISE, TIMING, STAT_READ, VARIATION, DEFECT, COMPOSITION, STAT_DECODE = range(1, 11)
