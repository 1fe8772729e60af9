"""What a chip's maker decides and ONFI does not: where factory bad-block marks sit, and the READ ID bytes.

Bad-block marks follow the per-manufacturer rules Linux applies (drivers/mtd/nand/raw/nand_samsung.c,
nand_hynix.c, nand_toshiba.c, nand_amd.c, nand_macronix.c): Samsung and Hynix MLC parts mark the last page of
a bad block; their SLC parts, and Toshiba, AMD/Spansion and Macronix SLC parts, the first and second pages;
everyone else the first page. The mark is the first spare byte (the first spare word on a 16-bit bus): any
value but 0xFF. The firmware gets these tables generated (``onfi_facts.h``) and applies the same rule.

The virtual chips' manufacturer ID is :data:`NANDRIG_MAKER_ID`, 0x4E ("N"): JEDEC JEP106 gives every
manufacturer code odd parity in bit 7, and 0x4E has four bits set, so no company can hold it. A profile that
models a real part uses that maker's code instead, and with it that maker's bad-block rule.
"""
from __future__ import annotations

import enum

from nandrig.errors import NandrigError

NANDRIG_MAKER_ID = 0x4E


class Maker(enum.IntEnum):
    """JEP106 bank-1 codes of NAND makers whose bad-block rule differs from the default."""

    AMD = 0x01  # AMD / Spansion / Cypress
    TOSHIBA = 0x98
    HYNIX = 0xAD
    MACRONIX = 0xC2
    SAMSUNG = 0xEC


LAST_PAGE_MLC = frozenset({Maker.SAMSUNG, Maker.HYNIX})  # multi-level parts: last page only
FIRST_TWO_SLC = frozenset({Maker.SAMSUNG, Maker.HYNIX, Maker.TOSHIBA, Maker.AMD, Maker.MACRONIX})  # SLC: pages 0, 1
BAD_BLOCK_MARK = 0xFF  # an unmarked (good) block's first spare byte


def bad_block_pages(maker_id: int, bits_per_cell: int, pages_per_block: int) -> tuple[int, ...]:
    """The pages of a block whose first spare byte carries the factory bad-block mark."""
    if bits_per_cell > 1 and maker_id in LAST_PAGE_MLC:
        return (pages_per_block - 1,)
    if bits_per_cell == 1 and maker_id in FIRST_TWO_SLC:
        return (0, 1)
    return (0,)


# legacy device codes of 3.3 V, 8-bit large-page parts by capacity in MiB (Linux's nand_flash_ids table)
DEVICE_CODES = {128: 0xF1, 256: 0xDA, 512: 0xDC, 1024: 0xD3, 2048: 0xD5, 4096: 0xD7, 8192: 0xDE, 16384: 0x3A,
                32768: 0x1C, 65536: 0x3C}
NO_DEVICE_CODE = 0x00  # a capacity without a legacy code: hosts find such a part by its parameter page


def read_id_bytes(maker_id: int, capacity_bytes: int, bits_per_cell: int, page_bytes: int, block_bytes: int,
                  bus_16: bool = False) -> bytes:
    """READ ID 00h's five bytes as a large-page part gives them: maker, device code by capacity, then the
    extended ID (cell type in byte 2; page size, 16 spare bytes per 512, block size and bus width in byte 3),
    which hosts decode when a part has no parameter page. The spare size those bits cannot express comes from the
    parameter page, as for every ONFI part."""
    page_code, block_code = _log2_step(page_bytes, 1024, 3, "page"), _log2_step(block_bytes, 64 * 1024, 3, "block")
    device = DEVICE_CODES.get(capacity_bytes >> 20, NO_DEVICE_CODE)
    cell = (bits_per_cell - 1) << 2
    byte3 = page_code | 1 << 2 | block_code << 4 | (1 << 6 if bus_16 else 0)
    return bytes([maker_id, device, cell, byte3, 0x00])


def decode_read_id(ident: bytes) -> dict:
    """The legacy extended-ID reading of READ ID bytes (Linux's nand_decode_ext_id), for checking identities."""
    return {"maker": ident[0], "device": ident[1], "bits_per_cell": ((ident[2] >> 2) & 3) + 1,
            "page_bytes": 1024 << (ident[3] & 3), "block_bytes": (64 * 1024) << ((ident[3] >> 4) & 3),
            "bus_width": 16 if ident[3] & 0x40 else 8}


def _log2_step(value: int, base: int, top: int, what: str) -> int:
    for code in range(top + 1):
        if base << code == value:
            return code
    raise NandrigError(f"a {value}-byte {what} has no legacy READ ID code ({base}-{base << top} bytes, powers of 2)")
