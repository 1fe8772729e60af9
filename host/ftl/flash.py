"""What the FTL asks of a chip (a rig's target through the protocol): erase a block, program a page with a
pattern under ECC of strength t, read it back compared with that pattern, and what each operation cost.

The content of a logical page is a pattern seed: the rig generates the page from it when programming; a read
returns the decoded bytes, which the host compares with the page the seed makes. That is the end-to-end check:
a codeword the decoder reports uncorrectable is a reported loss; one it reports decoded but that differs from
what was written (a miscorrection: more than t errors decoded to another codeword) is caught there and counted,
never returned as data.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Protocol

from nandrig import protocol as P
from nandrig.chip.geometry import PageMap, PageType
from nandrig.chip.pattern import page_seed, prbs31_bytes
from nandrig.host.link.rig import ChipResult


@dataclass(frozen=True)
class FlashGeometry:
    blocks: int
    pages_per_block: int
    page_bytes: int  # the data area a logical page fills
    page_map: PageMap
    raw_page_bytes: int = 0  # the whole page, spare included (0: the data area's)

    @property
    def raw_bytes(self) -> int:
        return self.raw_page_bytes or self.page_bytes

    def lower_pages(self) -> tuple[int, ...]:
        """A block's pages in pseudo-SLC mode (lower pages only), in program order."""
        return self.page_map.of_type(PageType.LOWER)

    def pages_in(self, pslc: bool) -> tuple[int, ...]:
        """A block's pages in program order: the lower ones in pseudo-SLC, else all."""
        return self.lower_pages() if pslc else tuple(range(self.pages_per_block))

    def page_type(self, page: int) -> PageType:
        return self.page_map.page_type(page)


@dataclass(frozen=True)
class PageRead:
    """A page read under ECC: raw bit errors against its pattern, the bits the decoder corrected, codewords it
    could not decode (reported uncorrectable) and codewords it decoded wrong (its count of corrections differs
    from the errors there were: silent corruption had the check not been made)."""

    busy_ns: int
    raw_errors: int
    corrected: int
    uncorrectable: int
    miscorrected: int


class Flash(Protocol):
    geometry: FlashGeometry
    t_max: int

    def erase(self, block: int) -> ChipResult: ...

    def program(self, block: int, page: int, seed: int, t: int) -> ChipResult: ...

    def read(self, block: int, page: int, seed: int, t: int) -> PageRead: ...

    def program_data(self, block: int, page: int, data: bytes) -> ChipResult:
        """Program explicit bytes (a page of a reduced-state block), no ECC from the rig."""

    def read_wordline(self, block: int, wordline: int, refs: tuple[int, int]) -> tuple[bytes, bytes, int]:
        """A wordline's (lower, upper) pages read raw with VR2 and VR3 at ``refs`` (read retry; back at 0 after),
        and the array's busy time of both reads."""

    def factory_bad(self) -> set[int]: ...

    def idle(self, ns: float) -> None:
        """Time passes with the chip idle at room temperature: its data ages."""

    def energy_pj(self) -> int | None:
        """The chip's supply energy over the FTL's own operations since last asked (bulk wear left out); None
        where the rig has no meter."""

    def wear(self, block: int, cycles: int, pslc: bool) -> tuple[int, bool]:
        """``cycles`` erase + program rounds on ``block`` at once (the chip's bulk cycling), every page or the lower
        ones: the rounds done (a failing one counted: it wore the block) and whether one failed, which ends them."""


class RigFlash:
    """A :class:`Flash` over an open :class:`~nandrig.host.link.rig.Rig` (its selected target), on ``blocks`` (the
    chip's block numbers, the FTL's blocks 0, 1, ... in their order)."""

    def __init__(self, rig, blocks: Sequence[int]) -> None:
        info = rig.info()
        self.rig, self.blocks = rig, blocks
        self.virtual_time = bool(info.capabilities & P.Cap.VIRTUAL_TIME)
        self.t_max = info.t_max
        self.codeword_bytes, self.raw_page_bytes = info.codeword_bytes, info.raw_page_bytes
        self.geometry = FlashGeometry(len(blocks), info.pages_per_block, info.page_bytes,
                                      PageMap.shuffled_mlc(info.pages_per_block), info.raw_page_bytes)
        self.metered = bool(info.capabilities & P.Cap.ENERGY)
        self.kept_pj = 0  # the meter's reading taken while bulk wear ran, not yet given out (a checkpoint keeps it)

    def erase(self, block: int) -> ChipResult:
        return self.rig.erase(self.blocks[block])

    def program(self, block: int, page: int, seed: int, t: int) -> ChipResult:
        return self.rig.program(self.blocks[block], page, seed=seed, t=t)

    def read(self, block: int, page: int, seed: int, t: int) -> PageRead:
        r = self.rig.read(self.blocks[block], page, seed=seed, t=t, raw=True)
        want = prbs31_bytes(page_seed(seed, self.blocks[block], page), self.raw_page_bytes)[:self.geometry.page_bytes]
        return page_read(r, t, self.codeword_bytes, want)

    def program_data(self, block: int, page: int, data: bytes) -> ChipResult:
        return self.rig.program(self.blocks[block], page, data=data)

    def read_wordline(self, block: int, wordline: int, refs: tuple[int, int]) -> tuple[bytes, bytes, int]:
        pm, b = self.geometry.page_map, self.blocks[block]
        self.rig.set_read_refs(0, *refs)
        try:
            reads = [self.rig.read(b, pm.page_of(wordline, t), raw=True) for t in PageType]
        finally:
            self.rig.set_read_refs(0, 0, 0)
        return reads[0].data, reads[1].data, reads[0].busy_ns + reads[1].busy_ns

    def idle(self, ns: float) -> None:
        """On a simulated rig its clock moves on; a real chip ages in real time, so the replay waits it out."""
        if self.virtual_time:
            self.rig.advance(hours=ns / 3.6e12)
        else:
            time.sleep(ns / 1e9)

    def energy_pj(self) -> int | None:
        if not self.metered:
            return None
        out, self.kept_pj = self.kept_pj + self._meter(), 0
        return out

    def _meter(self) -> int:
        """ENERGY's busy and transfer energy since the last ENERGY (which zeroes the meter)."""
        e = self.rig.energy()
        return e[0] + e[2]

    def wear(self, block: int, cycles: int, pslc: bool) -> tuple[int, bool]:
        pages = list(self.geometry.lower_pages()) if pslc else None
        b, done, failed = self.blocks[block], 0, False
        if self.metered:
            self.kept_pj += self._meter()
        while done < cycles and not failed:  # a CYCLE request takes up to CYCLE_MAX_ROUNDS
            r = self.rig.cycle(b, 1, min(cycles - done, P.Limit.CYCLE_MAX_ROUNDS), seed=done + 1, pages=pages)
            done, failed = done + r.done[b], r.failed[b]
        if self.metered:
            self._meter()  # the bulk cycling's own
        return done, failed

    def factory_bad(self) -> set[int]:
        marked: set[int] = set()
        # only the blocks it was given are read: a scan per run of consecutive ones
        for _, run in itertools.groupby(enumerate(sorted(self.blocks)), lambda kb: kb[1] - kb[0]):
            run = [b for _, b in run]
            marked.update(self.rig.scan_bad(run[0], len(run)))
        return {k for k, b in enumerate(self.blocks) if b in marked}


def page_read(r, t: int, codeword_bytes: int, expected: bytes) -> PageRead:
    """A READ's result as the FTL sees it, over the page's data codewords (the spare after them holds parity and
    markers): the decoded bytes against what the page should hold, codeword by codeword."""
    bounds = list(range(0, len(expected), codeword_bytes)) + [len(expected)]
    raw = corrected = failed = wrong = 0
    for c, lo, hi in zip(r.codewords, bounds, bounds[1:]):
        raw += c.errors
        intact = r.data[lo:hi] == expected[lo:hi]
        if t and c.corrected < 0:
            failed += 1
        elif t:
            corrected += c.corrected
            wrong += not intact
        else:
            failed += not intact  # no ECC: an error is reported, as the compare finds it
    return PageRead(r.busy_ns, raw, corrected, failed, wrong)
