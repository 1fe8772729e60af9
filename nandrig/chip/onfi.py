"""What ONFI says every chip has: status bits, feature addresses, READ ID, parameter-page offsets and CRC.

The parameter-page codec is :mod:`nandrig.chip.param_page`. Integers in the page are little-endian; the
CRC-16 (polynomial 0x8005, initial 0x4F4E, no reflection, no final XOR) covers bytes 0-253 and sits in
bytes 254-255.
"""
from __future__ import annotations

import enum

PARAM_PAGE_BYTES = 256
PARAM_PAGE_COPIES = 3  # copies a host searches for one whose CRC holds (as Linux's nand_onfi_detect)
PARAM_DUMP_BYTES = 1024  # what the rig reads with READ PARAMETER PAGE: the copies, then the extended page
EXT_PAGE_SIGNATURE = b"EPPS"
EXT_PAGE_HEADER_BYTES = 32  # CRC, signature, reserved, eight (type, length) section descriptors
EXT_PAGE_SECTIONS = 8
EXT_SECTION_ECC = 2  # section type of the ECC information block
EXT_UNIT_BYTES = 16  # the extended page's lengths count 16-byte units
ECC_STEP_DEFAULT = 512  # byte 112 counts bits per 512 bytes
ECC_IN_EXT_PAGE = 0xFF  # byte 112's "see the extended parameter page"
CRC16_INIT = 0x4F4E  # ONFI's CRC-16: x^16 + x^15 + x^2 + 1, initial value 4F4Eh, MSB first
CRC16_POLY = 0x8005
READ_ID_ONFI_ADDRESS = 0x20  # READ ID here answers "ONFI"
UNIQUE_ID_BYTES = 16  # READ UNIQUE ID (EDh): the ID, then its complement, in each copy
UNIQUE_ID_COPIES = 16


class OptionalCommand(enum.IntFlag):
    """The parameter page's optional-commands bits a rig looks at (ONFI 2.2, bytes 8-9)."""

    PAGE_CACHE_PROGRAM = 1 << 0  # 80h ... 15h
    READ_CACHE = 1 << 1  # 31h / 3Fh
    GET_SET_FEATURES = 1 << 2
    READ_UNIQUE_ID = 1 << 5


class ParamFeature(enum.IntFlag):
    """The parameter page's features bits (bytes 6-7) a rig acts on."""

    BUS_16 = 1 << 0  # 16-bit data bus
    MULTI_LUN_OPS = 1 << 1
    EXT_PARAM_PAGE = 1 << 7  # an extended parameter page follows the copies (ONFI 2.1+)


# revision bits (bytes 4-5) and the ONFI version each means; a page with none of them is not one a host can trust
REVISION_BITS = {1: 10, 2: 20, 3: 21, 4: 22, 5: 23}


class ParamError(enum.IntEnum):
    """Why a parameter-page dump cannot describe a chip the rig drives: host and firmware name the same field."""

    OK = 0
    NO_VALID_COPY = 1  # no copy's CRC holds, and the bit-wise majority of the copies fails it too
    REVISION = 2  # no known ONFI revision bit is set
    GEOMETRY = 3  # a zero page size, pages per block, blocks per LUN or LUN count
    BUS_WIDTH = 4  # a 16-bit data bus: the adapter wires DQ0-7 only
    PAGE_SIZE = 5  # data + spare beyond the rig's page buffer
    ADDRESSING = 6  # the row address (LUN, block, page bits) does not fit the row cycles, or too many blocks


PARAM_ERROR_TEXT = {
    ParamError.NO_VALID_COPY: "no parameter-page copy passes its CRC, nor their bit-wise majority",
    ParamError.REVISION: "revision (bytes 4-5) names no ONFI version this rig knows",
    ParamError.GEOMETRY: "geometry (bytes 80-100) has a zero page size, block size, block count or LUN count",
    ParamError.BUS_WIDTH: "features bit 0 says a 16-bit data bus; the adapter drives DQ0-7 only",
    ParamError.PAGE_SIZE: "page_bytes + spare_bytes (bytes 80-85) exceed the rig's page buffer",
    ParamError.ADDRESSING: "LUN, block and page addresses (bytes 92-101) do not fit the rig's row address",
}


class StatusBit(enum.IntFlag):
    """READ STATUS (70h) bits."""

    FAIL = 0x01  # the last program or erase failed
    FAILC = 0x02  # in a cache program: the page before the last one failed
    ARDY = 0x20  # array ready
    RDY = 0x40  # ready for another command
    WP_N = 0x80  # not write protected


class Feature(enum.IntEnum):
    """SET/GET FEATURES addresses."""

    TIMING_MODE = 0x01  # ONFI: P1 = timing mode


class ParamOffset(enum.IntEnum):
    """Byte offsets of the parameter-page fields a rig reads (ONFI 2.2, 5.7.1)."""

    SIGNATURE = 0
    REVISION = 4
    FEATURES = 6
    OPTIONAL_COMMANDS = 8
    EXT_PAGE_LENGTH = 12  # in 16-byte units
    PARAM_PAGES = 14  # copies of the page
    MANUFACTURER = 32
    MODEL = 44
    JEDEC_ID = 64
    PAGE_BYTES = 80
    SPARE_BYTES = 84
    PAGES_PER_BLOCK = 92
    BLOCKS_PER_LUN = 96
    LUNS = 100
    ADDRESS_CYCLES = 101
    BITS_PER_CELL = 102
    MAX_BAD_BLOCKS = 103
    ENDURANCE = 105
    GUARANTEED_BLOCKS = 107
    PROGRAMS_PER_PAGE = 110
    ECC_BITS = 112
    TIMING_MODES = 129
    T_PROG = 133
    T_BERS = 135
    T_R = 137
    T_CCS = 139
    T_ADL = 154
    VENDOR_REVISION = 164
    CRC = 254


O = ParamOffset


def onfi_crc16(data: bytes, crc: int = CRC16_INIT) -> int:
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ CRC16_POLY) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def unique_id_copies(uid: bytes) -> bytes:
    """What READ UNIQUE ID streams: the ID and its complement, repeated."""
    assert len(uid) == UNIQUE_ID_BYTES
    return (uid + bytes(b ^ 0xFF for b in uid)) * UNIQUE_ID_COPIES


def decode_unique_id(raw: bytes) -> bytes | None:
    """The first copy whose complement checks out (every bit of ID XOR complement set), or None: a chip with no
    unique ID, or every copy damaged. The firmware's ``onfi_unique_id`` does the same."""
    step = 2 * UNIQUE_ID_BYTES
    for k in range(min(UNIQUE_ID_COPIES, len(raw) // step)):
        uid, inv = raw[k * step:k * step + UNIQUE_ID_BYTES], raw[k * step + UNIQUE_ID_BYTES:(k + 1) * step]
        if all(a ^ b == 0xFF for a, b in zip(uid, inv)):
            return bytes(uid)
    return None
