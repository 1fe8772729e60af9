"""What ONFI says every chip has: status bits, feature addresses, READ ID, the parameter-page codec.

Layout per ONFI 2.2, section 5.7 (parameter page data structure); only the
fields a characterization rig uses are filled, the rest are zero. Integers are
little-endian; the CRC-16 (polynomial 0x8005, initial 0x4F4E, no reflection,
no final XOR) covers bytes 0-253 and sits in bytes 254-255.
"""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from nandrig.errors import NandrigError

PARAM_PAGE_BYTES = 256
PARAM_PAGE_COPIES = 3
CRC16_INIT = 0x4F4E  # ONFI's CRC-16: x^16 + x^15 + x^2 + 1, initial value 4F4Eh, MSB first
CRC16_POLY = 0x8005
READ_ID_ONFI_ADDRESS = 0x20  # READ ID here answers "ONFI"
UNIQUE_ID_BYTES = 16  # READ UNIQUE ID (EDh): the ID, then its complement, in each copy
UNIQUE_ID_COPIES = 16


class OptionalCommand(enum.IntFlag):
    """The parameter page's optional-commands bits a rig looks at (ONFI 2.2, bytes 8-9)."""

    GET_SET_FEATURES = 1 << 2
    READ_UNIQUE_ID = 1 << 5


class StatusBit(enum.IntFlag):
    """READ STATUS (70h) bits."""

    FAIL = 0x01  # the last program or erase failed
    ARDY = 0x20  # array ready
    RDY = 0x40  # ready for another command
    WP_N = 0x80  # not write protected


class Feature(enum.IntEnum):
    """SET/GET FEATURES addresses."""

    TIMING_MODE = 0x01  # ONFI: P1 = timing mode
    READ_RETRY = 0x89  # vendor-specific: P1 = signed read-reference offset in retry steps


class ParamOffset(enum.IntEnum):
    """Byte offsets of the parameter-page fields a rig reads (ONFI 2.2, 5.7.1)."""

    SIGNATURE = 0
    REVISION = 4
    FEATURES = 6
    OPTIONAL_COMMANDS = 8
    PARAM_PAGES = 14
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
    CRC = 254


O = ParamOffset


def onfi_crc16(data: bytes, crc: int = CRC16_INIT) -> int:
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ CRC16_POLY) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


@dataclass(frozen=True)
class ParameterPage:
    manufacturer: str
    model: str
    jedec_id: int
    page_bytes: int
    spare_bytes: int
    pages_per_block: int
    blocks_per_lun: int
    luns: int
    bits_per_cell: int
    max_bad_blocks_per_lun: int
    endurance_cycles: int
    programs_per_page: int
    ecc_bits: int
    timing_modes: tuple[int, ...]
    t_prog_max_us: int
    t_bers_max_us: int
    t_r_max_us: int
    row_address_cycles: int = 3
    column_address_cycles: int = 2
    revision_bits: int = 0x001E  # ONFI 1.0, 2.0, 2.1, 2.2
    t_ccs_ns: int = 500  # change-column setup; ONFI's default, which a part may lower
    optional_commands: int = OptionalCommand.GET_SET_FEATURES

    def encode(self) -> bytes:
        p = bytearray(PARAM_PAGE_BYTES)
        p[O.SIGNATURE:O.SIGNATURE + 4] = b"ONFI"
        struct.pack_into("<H", p, O.REVISION, self.revision_bits)
        struct.pack_into("<H", p, O.OPTIONAL_COMMANDS, self.optional_commands)
        p[O.PARAM_PAGES] = PARAM_PAGE_COPIES
        p[O.MANUFACTURER:O.MODEL] = self.manufacturer.encode("ascii")[:12].ljust(12)
        p[O.MODEL:O.JEDEC_ID] = self.model.encode("ascii")[:20].ljust(20)
        p[O.JEDEC_ID] = self.jedec_id
        struct.pack_into("<IH", p, O.PAGE_BYTES, self.page_bytes, self.spare_bytes)
        struct.pack_into("<II", p, O.PAGES_PER_BLOCK, self.pages_per_block, self.blocks_per_lun)
        p[O.LUNS] = self.luns
        p[O.ADDRESS_CYCLES] = (self.column_address_cycles << 4) | self.row_address_cycles
        p[O.BITS_PER_CELL] = self.bits_per_cell
        struct.pack_into("<H", p, O.MAX_BAD_BLOCKS, self.max_bad_blocks_per_lun)
        p[O.ENDURANCE], p[O.ENDURANCE + 1] = _endurance(self.endurance_cycles)
        p[O.GUARANTEED_BLOCKS] = 1  # block 0 guaranteed valid
        p[O.PROGRAMS_PER_PAGE] = self.programs_per_page
        p[O.ECC_BITS] = self.ecc_bits
        struct.pack_into("<H", p, O.TIMING_MODES, sum(1 << m for m in self.timing_modes))
        struct.pack_into("<HHHH", p, O.T_PROG, self.t_prog_max_us, self.t_bers_max_us, self.t_r_max_us, self.t_ccs_ns)
        struct.pack_into("<H", p, O.CRC, onfi_crc16(bytes(p[:O.CRC])))
        return bytes(p)

    @classmethod
    def decode(cls, raw: bytes) -> "ParameterPage":
        if len(raw) < PARAM_PAGE_BYTES or raw[O.SIGNATURE:O.SIGNATURE + 4] != b"ONFI":
            raise NandrigError("parameter page lacks the ONFI signature")
        (crc,) = struct.unpack_from("<H", raw, O.CRC)
        if onfi_crc16(raw[:O.CRC]) != crc:
            raise NandrigError("parameter page CRC mismatch")
        page_bytes, spare = struct.unpack_from("<IH", raw, O.PAGE_BYTES)
        ppb, bpl = struct.unpack_from("<II", raw, O.PAGES_PER_BLOCK)
        (modes,) = struct.unpack_from("<H", raw, O.TIMING_MODES)
        tprog, tbers, tr, tccs = struct.unpack_from("<HHHH", raw, O.T_PROG)
        return cls(
            manufacturer=raw[O.MANUFACTURER:O.MODEL].decode("ascii", "replace").rstrip(),
            model=raw[O.MODEL:O.JEDEC_ID].decode("ascii", "replace").rstrip(),
            jedec_id=raw[O.JEDEC_ID], page_bytes=page_bytes, spare_bytes=spare, pages_per_block=ppb,
            blocks_per_lun=bpl, luns=raw[O.LUNS], bits_per_cell=raw[O.BITS_PER_CELL],
            max_bad_blocks_per_lun=struct.unpack_from("<H", raw, O.MAX_BAD_BLOCKS)[0],
            endurance_cycles=raw[O.ENDURANCE] * 10 ** raw[O.ENDURANCE + 1], programs_per_page=raw[O.PROGRAMS_PER_PAGE],
            ecc_bits=raw[O.ECC_BITS],
            timing_modes=tuple(m for m in range(6) if modes >> m & 1),
            t_prog_max_us=tprog, t_bers_max_us=tbers, t_r_max_us=tr, t_ccs_ns=tccs,
            row_address_cycles=raw[O.ADDRESS_CYCLES] & 0xF, column_address_cycles=raw[O.ADDRESS_CYCLES] >> 4,
            revision_bits=struct.unpack_from("<H", raw, O.REVISION)[0],
            optional_commands=struct.unpack_from("<H", raw, O.OPTIONAL_COMMANDS)[0],
        )


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


def decode_first_valid(raw: bytes) -> ParameterPage:
    """Parse the redundant copies in order, falling back past a CRC mismatch."""
    errors = []
    for i in range(len(raw) // PARAM_PAGE_BYTES):
        try:
            return ParameterPage.decode(raw[i * PARAM_PAGE_BYTES:(i + 1) * PARAM_PAGE_BYTES])
        except NandrigError as e:
            errors.append(f"copy {i}: {e}")
    raise NandrigError("no valid parameter page copy (" + "; ".join(errors) + ")")


def _endurance(cycles: int) -> tuple[int, int]:
    """ONFI's (value, power of ten) pair for the rated endurance."""
    exp = 0
    while cycles > 255:
        cycles //= 10
        exp += 1
    return cycles, exp
