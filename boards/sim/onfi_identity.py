"""ONFI identity of a chip: READ ID bytes and the 256-byte parameter page.

Layout per ONFI 2.2, section 5.7 (parameter page data structure); only the
fields a characterization rig uses are filled, the rest are zero. Integers are
little-endian; the CRC-16 (polynomial 0x8005, initial 0x4F4E, no reflection,
no final XOR) covers bytes 0-253 and sits in bytes 254-255.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from nandrig.errors import NandrigError

PARAM_PAGE_BYTES = 256
PARAM_PAGE_COPIES = 3


def onfi_crc16(data: bytes, crc: int = 0x4F4E) -> int:
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) if crc & 0x8000 else (crc << 1)
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

    def encode(self) -> bytes:
        p = bytearray(PARAM_PAGE_BYTES)
        p[0:4] = b"ONFI"
        struct.pack_into("<H", p, 4, self.revision_bits)
        struct.pack_into("<H", p, 8, 1 << 2)  # optional commands: GET/SET FEATURES
        p[14] = PARAM_PAGE_COPIES
        p[32:44] = self.manufacturer.encode("ascii")[:12].ljust(12)
        p[44:64] = self.model.encode("ascii")[:20].ljust(20)
        p[64] = self.jedec_id
        struct.pack_into("<IH", p, 80, self.page_bytes, self.spare_bytes)
        struct.pack_into("<II", p, 92, self.pages_per_block, self.blocks_per_lun)
        p[100] = self.luns
        p[101] = (self.column_address_cycles << 4) | self.row_address_cycles
        p[102] = self.bits_per_cell
        struct.pack_into("<H", p, 103, self.max_bad_blocks_per_lun)
        p[105], p[106] = _endurance(self.endurance_cycles)
        p[107] = 1  # block 0 guaranteed valid
        p[110] = self.programs_per_page
        p[112] = self.ecc_bits
        struct.pack_into("<H", p, 129, sum(1 << m for m in self.timing_modes))
        struct.pack_into("<HHH", p, 133, self.t_prog_max_us, self.t_bers_max_us, self.t_r_max_us)
        struct.pack_into("<H", p, 254, onfi_crc16(bytes(p[:254])))
        return bytes(p)

    @classmethod
    def decode(cls, raw: bytes) -> "ParameterPage":
        if len(raw) < PARAM_PAGE_BYTES or raw[:4] != b"ONFI":
            raise NandrigError("parameter page lacks the ONFI signature")
        (crc,) = struct.unpack_from("<H", raw, 254)
        if onfi_crc16(raw[:254]) != crc:
            raise NandrigError("parameter page CRC mismatch")
        page_bytes, spare = struct.unpack_from("<IH", raw, 80)
        ppb, bpl = struct.unpack_from("<II", raw, 92)
        (modes,) = struct.unpack_from("<H", raw, 129)
        tprog, tbers, tr = struct.unpack_from("<HHH", raw, 133)
        return cls(
            manufacturer=raw[32:44].decode("ascii", "replace").rstrip(),
            model=raw[44:64].decode("ascii", "replace").rstrip(),
            jedec_id=raw[64], page_bytes=page_bytes, spare_bytes=spare, pages_per_block=ppb,
            blocks_per_lun=bpl, luns=raw[100], bits_per_cell=raw[102],
            max_bad_blocks_per_lun=struct.unpack_from("<H", raw, 103)[0],
            endurance_cycles=raw[105] * 10 ** raw[106], programs_per_page=raw[110], ecc_bits=raw[112],
            timing_modes=tuple(m for m in range(6) if modes >> m & 1),
            t_prog_max_us=tprog, t_bers_max_us=tbers, t_r_max_us=tr,
            row_address_cycles=raw[101] & 0xF, column_address_cycles=raw[101] >> 4,
            revision_bits=struct.unpack_from("<H", raw, 4)[0],
        )


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
