"""A chip's geometry and its MLC page map: which wordline each page is on, and whether it is the lower
(fast, LSB) or the upper (slow, MSB) page of it. The map is data: a part with another pairing is another
:class:`PageMap`, stored with the chip's record."""
from __future__ import annotations

import enum
import json
from dataclasses import dataclass

from nandrig.errors import NandrigError


@dataclass(frozen=True)
class Geometry:
    page_bytes: int
    spare_bytes: int
    pages_per_block: int
    blocks: int  # all LUNs'
    luns: int = 1  # block b is on LUN b // blocks_per_lun

    @property
    def blocks_per_lun(self) -> int:
        return self.blocks // self.luns

    @property
    def raw_page_bytes(self) -> int:
        return self.page_bytes + self.spare_bytes

    @property
    def wordlines(self) -> int:
        return self.pages_per_block // 2


class PageType(enum.IntEnum):
    LOWER = 0  # the LSB page of its wordline: programmed first, fast
    UPPER = 1  # the MSB page: programmed second, slow


@dataclass(frozen=True)
class PageMap:
    """Per page of a block, its (wordline, page type)."""

    pages: tuple[tuple[int, PageType], ...]

    @classmethod
    def shuffled_mlc(cls, pages_per_block: int) -> "PageMap":
        """The common MLC order (:func:`page_map`)."""
        return cls(tuple((wl, PageType(upper)) for wl, upper in
                         (page_map(p, pages_per_block) for p in range(pages_per_block))))

    def wordline(self, page: int) -> int:
        return self.pages[page][0]

    def page_type(self, page: int) -> PageType:
        return self.pages[page][1]

    def is_upper(self, page: int) -> bool:
        return self.pages[page][1] == PageType.UPPER

    def of_type(self, page_type: PageType) -> tuple[int, ...]:
        """The block's pages of one type, in program order (the lower ones: what a pseudo-SLC block programs)."""
        return tuple(p for p, (_, t) in enumerate(self.pages) if t == page_type)

    def page_of(self, wordline: int, page_type: PageType) -> int:
        return self.pages.index((wordline, PageType(page_type)))

    def to_json(self) -> str:
        return json.dumps([[wl, int(t)] for wl, t in self.pages])

    @classmethod
    def from_json(cls, text: str) -> "PageMap":
        try:
            pages = tuple((int(wl), PageType(t)) for wl, t in json.loads(text))
        except (ValueError, TypeError) as e:
            raise NandrigError(f"page map is malformed: {e}") from None
        if sorted(pages) != sorted(set(pages)):
            raise NandrigError("page map names one (wordline, page type) twice")
        return cls(pages)


def page_map(page: int, pages_per_block: int) -> tuple[int, bool]:
    """Page index -> (wordline, is_upper_page) in the shuffled MLC order: page 0 is WL0's lower page, then
    odd pages are the lower page of WL (p+1)/2 and even pages the upper page of WL p/2-1, the last page
    the last wordline's upper."""
    last = pages_per_block - 1
    if page == 0:
        return 0, False
    if page == last:
        return pages_per_block // 2 - 1, True
    if page % 2:
        return (page + 1) // 2, False
    return page // 2 - 1, True


def page_of(wordline: int, upper: bool, pages_per_block: int) -> int:
    """The inverse of :func:`page_map`."""
    if not upper:
        return 0 if wordline == 0 else 2 * wordline - 1
    return pages_per_block - 1 if wordline == pages_per_block // 2 - 1 else 2 * wordline + 2
