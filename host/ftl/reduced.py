"""Logical pages in reduced state (FlexLevel's LevelAdjust with ReduceCode; characterization/reduced_level.py) in
an FTL block: every two wordlines hold three logical pages, 3 data bits per pair of cells, so a reduced block
holds three quarters of what it holds in MLC.

A group of two wordlines has 2 R cells (R: a raw page's bits, spare included: in reduced state every cell holds
data) for 3 R data bits; its three logical pages' bits go in one after another (the rest left 0, cells at L0).
A logical page is read back from the wordlines its cells lie on: both pages of each, with VR2 and VR3 moved to
the middle of L1 and L3 (read retry). The data of a logical page in reduced state is its own pattern, made from
its seed alone, so where it lies does not change what it holds.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nandrig.characterization import reduced_level
from nandrig.chip.geometry import PageMap, PageType
from nandrig.chip.pattern import bits, prbs31_bytes

CONTENT_KEY = 0x5EDC0DE  # keeps a reduced page's pattern apart from the rig's page patterns of the same seed


def content_bits(seed: int, page_bytes: int) -> np.ndarray:
    """The bits a logical page written with ``seed`` holds, stored in reduced state."""
    return bits(prbs31_bytes((seed ^ CONTENT_KEY) & 0x7FFF_FFFF or 1, page_bytes))


@dataclass(frozen=True)
class ReducedLayout:
    page_map: PageMap
    page_bytes: int  # a logical page's data
    raw_page_bytes: int  # a physical page, spare included

    @property
    def cells(self) -> int:
        return self.raw_page_bytes * 8

    @property
    def slots(self) -> int:
        """Logical pages a reduced block holds: three per two wordlines."""
        return 3 * (len(self.page_map.pages) // 2 // 2)

    def _cell_span(self, slot: int) -> tuple[int, int]:
        """The cells (first, end) within its group that hold slot's bits, whole triples of bits (pairs of cells)."""
        n = self.page_bytes * 8
        k = slot % 3
        return (k * n // 3) * 2, -(-((k + 1) * n) // 3) * 2

    def wordlines_of(self, slot: int) -> tuple[int, ...]:
        """The wordlines a read of ``slot`` needs."""
        lo, hi = self._cell_span(slot)
        g = slot // 3
        return tuple(2 * g + w for w in range(lo // self.cells, (hi - 1) // self.cells + 1))

    def block_pages(self, seeds: list[int]) -> list[bytes]:
        """Every physical page's bytes, in page order, for the logical pages ``seeds`` in slot order (a block's
        worth: ``slots``); b"" for a page left erased."""
        if len(seeds) != self.slots:
            raise ValueError(f"a reduced block takes {self.slots} logical pages, not {len(seeds)}")
        out = [b""] * len(self.page_map.pages)
        n = self.page_bytes * 8
        for g in range(self.slots // 3):
            data = np.zeros(3 * self.cells, np.uint8)
            for k in range(3):
                data[k * n:(k + 1) * n] = content_bits(seeds[3 * g + k], self.page_bytes)
            levels = reduced_level.levels_of(data)
            for w in range(2):
                lower, upper = reduced_level.page_bits(levels[w * self.cells:(w + 1) * self.cells])
                wl = 2 * g + w
                out[self.page_map.page_of(wl, PageType.LOWER)] = np.packbits(lower).tobytes()
                out[self.page_map.page_of(wl, PageType.UPPER)] = np.packbits(upper).tobytes()
        return out  # an odd wordline left over: b"", not programmed

    def slot_bits(self, slot: int, reads: dict[int, tuple[bytes, bytes]]) -> np.ndarray:
        """Slot's data bits from its wordlines' reads {wordline: (lower page, upper page)} (``wordlines_of``)."""
        g, k = divmod(slot, 3)
        levels = np.zeros(2 * self.cells, np.uint8)
        for wl, (lower, upper) in reads.items():
            w = wl - 2 * g
            levels[w * self.cells:(w + 1) * self.cells] = reduced_level.levels_read(bits(lower)[:self.cells],
                                                                                     bits(upper)[:self.cells])
        lo, hi = self._cell_span(slot)
        data, _ = reduced_level.bits_of(levels[lo:hi])
        n = self.page_bytes * 8
        skip = k * n - (lo // 2) * 3  # the span starts on a whole triple at or before the slot's first bit
        return data[skip:skip + n]
