"""The ONFI parameter page and its extended page: encode what a chip answers, decode what a rig read.

Decoding follows the rules Linux applies in ``nand_onfi_detect()`` (drivers/mtd/nand/raw/nand_onfi.c): the
first of three copies whose CRC holds, else the bit-wise majority of the three if *its* CRC holds; a revision
word with a known ONFI version bit; ECC bits per 512 bytes from byte 112 unless it is 0xFF, in which case an
ONFI 2.1+ page with the extended-page feature bit gives bits and codeword size in the extended page's ECC
section. The firmware's ``param_page.c`` applies the same rules to the same bytes (tested equal).
Layout: ONFI 2.2+ section 5.7.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from nandrig.chip.onfi import (ECC_IN_EXT_PAGE, ECC_STEP_DEFAULT, EXT_PAGE_HEADER_BYTES, EXT_PAGE_SECTIONS,
                               EXT_PAGE_SIGNATURE, EXT_SECTION_ECC, EXT_UNIT_BYTES, PARAM_ERROR_TEXT,
                               PARAM_PAGE_BYTES, PARAM_PAGE_COPIES, REVISION_BITS, OptionalCommand, ParamError,
                               ParamFeature, onfi_crc16)
from nandrig.chip.onfi import ParamOffset as O
from nandrig.errors import NandrigError
from nandrig.protocol.spec import Limit

EXT_ECC_SECTION_BYTES = 16  # ecc_bits, codeword_size (log2 bytes), bad blocks per LUN, endurance, reserved


class ParamPageError(NandrigError):
    """A dump that cannot describe a chip the rig drives; ``code`` is the :class:`ParamError` both sides report."""

    def __init__(self, code: ParamError, detail: str = "") -> None:
        super().__init__("parameter page: " + PARAM_ERROR_TEXT[code] + (f" ({detail})" if detail else ""))
        self.code = code


@dataclass(frozen=True)
class EccRequirement:
    bits: int  # correctable bits the chip needs ...
    step_bytes: int  # ... per this many data bytes


@dataclass(frozen=True)
class ParameterPage:
    """The fields of a parameter page a rig uses; ``encode`` fills the rest with zeros, as the spec allows."""

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
    ecc_bits: int  # byte 112: bits per 512 bytes, or 0xFF for "in the extended page"
    timing_modes: tuple[int, ...]
    t_prog_max_us: int
    t_bers_max_us: int
    t_r_max_us: int
    row_address_cycles: int = 3
    column_address_cycles: int = 2
    revision_bits: int = 0x001E  # ONFI 1.0, 2.0, 2.1, 2.2
    features: int = 0
    t_ccs_ns: int = 500  # change-column setup; ONFI's default, which a part may lower
    t_adl_ns: int = 0
    optional_commands: int = OptionalCommand.GET_SET_FEATURES
    copies: int = PARAM_PAGE_COPIES
    ext_page_units: int = 0  # extended page length in 16-byte units (0: none)

    @property
    def onfi_version(self) -> int | None:
        """10, 20, 21, 22 or 23 from the highest known revision bit (as the kernel), or None."""
        known = [v for bit, v in REVISION_BITS.items() if self.revision_bits >> bit & 1]
        return max(known) if known else None

    @property
    def bus_width(self) -> int:
        return 16 if self.features & ParamFeature.BUS_16 else 8

    def encode(self) -> bytes:
        p = bytearray(PARAM_PAGE_BYTES)
        p[O.SIGNATURE:O.SIGNATURE + 4] = b"ONFI"
        struct.pack_into("<HHH", p, O.REVISION, self.revision_bits, self.features, self.optional_commands)
        struct.pack_into("<H", p, O.EXT_PAGE_LENGTH, self.ext_page_units)
        p[O.PARAM_PAGES] = self.copies
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
        struct.pack_into("<H", p, O.T_ADL, self.t_adl_ns)
        struct.pack_into("<H", p, O.CRC, onfi_crc16(bytes(p[:O.CRC])))
        return bytes(p)

    @classmethod
    def decode(cls, raw: bytes) -> "ParameterPage":
        """One copy's fields, without checks (:func:`decode_dump` applies them)."""
        page_bytes, spare = struct.unpack_from("<IH", raw, O.PAGE_BYTES)
        ppb, bpl = struct.unpack_from("<II", raw, O.PAGES_PER_BLOCK)
        revision, features, optional = struct.unpack_from("<HHH", raw, O.REVISION)
        (modes,) = struct.unpack_from("<H", raw, O.TIMING_MODES)
        tprog, tbers, tr, tccs = struct.unpack_from("<HHHH", raw, O.T_PROG)
        return cls(
            manufacturer=_text(raw[O.MANUFACTURER:O.MODEL]), model=_text(raw[O.MODEL:O.JEDEC_ID]),
            jedec_id=raw[O.JEDEC_ID], page_bytes=page_bytes, spare_bytes=spare, pages_per_block=ppb,
            blocks_per_lun=bpl, luns=raw[O.LUNS], bits_per_cell=raw[O.BITS_PER_CELL],
            max_bad_blocks_per_lun=struct.unpack_from("<H", raw, O.MAX_BAD_BLOCKS)[0],
            endurance_cycles=raw[O.ENDURANCE] * 10 ** raw[O.ENDURANCE + 1], programs_per_page=raw[O.PROGRAMS_PER_PAGE],
            ecc_bits=raw[O.ECC_BITS], timing_modes=tuple(m for m in range(6) if modes >> m & 1),
            t_prog_max_us=tprog, t_bers_max_us=tbers, t_r_max_us=tr, t_ccs_ns=tccs,
            t_adl_ns=struct.unpack_from("<H", raw, O.T_ADL)[0],
            row_address_cycles=raw[O.ADDRESS_CYCLES] & 0xF, column_address_cycles=raw[O.ADDRESS_CYCLES] >> 4,
            revision_bits=revision, features=features, optional_commands=optional, copies=raw[O.PARAM_PAGES],
            ext_page_units=struct.unpack_from("<H", raw, O.EXT_PAGE_LENGTH)[0],
        )


def ext_page(ecc: EccRequirement, max_bad_blocks_per_lun: int, endurance_cycles: int) -> bytes:
    """An extended parameter page holding one ECC section (what a part whose byte 112 is 0xFF streams)."""
    if ecc.step_bytes & (ecc.step_bytes - 1):
        raise NandrigError(f"ECC step {ecc.step_bytes} bytes is not a power of two")
    p = bytearray(EXT_PAGE_HEADER_BYTES + EXT_ECC_SECTION_BYTES)
    p[2:6] = EXT_PAGE_SIGNATURE
    p[16], p[17] = EXT_SECTION_ECC, EXT_ECC_SECTION_BYTES // EXT_UNIT_BYTES
    sec = EXT_PAGE_HEADER_BYTES
    p[sec], p[sec + 1] = ecc.bits, ecc.step_bytes.bit_length() - 1
    struct.pack_into("<H", p, sec + 2, max_bad_blocks_per_lun)
    p[sec + 4], p[sec + 5] = _endurance(endurance_cycles)
    struct.pack_into("<H", p, 0, onfi_crc16(bytes(p[2:])))
    return bytes(p)


def dump(page: ParameterPage, ext: bytes = b"") -> bytes:
    """What READ PARAMETER PAGE streams: the page's copies, then copies of the extended page."""
    if ext and len(ext) != page.ext_page_units * EXT_UNIT_BYTES:
        raise NandrigError("the extended page's length disagrees with the parameter page's bytes 12-13")
    return page.encode() * page.copies + ext * page.copies


@dataclass(frozen=True)
class DecodedParamPage:
    page: ParameterPage
    copy: int | None  # the copy whose CRC held, None when recovered by majority
    ecc: EccRequirement | None  # None when the chip gives no usable requirement
    notes: tuple[str, ...] = ()

    def fields(self) -> dict:
        """The decoded fields under their ONFI names (``rig decode-param-page --json``)."""
        p = self.page
        v = p.onfi_version
        return {
            "signature": "ONFI", "revision": f"{v // 10}.{v % 10}", "revision_bits": p.revision_bits,
            "features": p.features, "optional_commands": p.optional_commands, "copy": self.copy,
            "manufacturer": p.manufacturer, "model": p.model, "jedec_id": p.jedec_id,
            "page_bytes": p.page_bytes, "spare_bytes": p.spare_bytes, "pages_per_block": p.pages_per_block,
            "blocks_per_lun": p.blocks_per_lun, "luns": p.luns, "bits_per_cell": p.bits_per_cell,
            "bus_width": p.bus_width, "row_address_cycles": p.row_address_cycles,
            "column_address_cycles": p.column_address_cycles, "max_bad_blocks_per_lun": p.max_bad_blocks_per_lun,
            "endurance_cycles": p.endurance_cycles, "programs_per_page": p.programs_per_page,
            "ecc_bits": self.ecc.bits if self.ecc else None, "ecc_step_bytes": self.ecc.step_bytes if self.ecc else None,
            "ecc_in_ext_page": p.ecc_bits == ECC_IN_EXT_PAGE, "sdr_timing_modes": list(p.timing_modes),
            "t_prog_us": p.t_prog_max_us, "t_bers_us": p.t_bers_max_us, "t_r_us": p.t_r_max_us,
            "t_ccs_ns": p.t_ccs_ns, "t_adl_ns": p.t_adl_ns, "notes": list(self.notes),
        }


def decode_dump(raw: bytes) -> DecodedParamPage:
    """A READ PARAMETER PAGE dump (copies, then the extended page) as the kernel reads it; raises
    :class:`ParamPageError` naming the field when no chip can be described."""
    copies = param_copies(raw)
    chosen = first_valid_copy(raw)
    if chosen is not None:
        best = copies[chosen]
    else:
        best = majority(copies) if copies else b""
        if not best or not copy_ok(best):
            raise ParamPageError(ParamError.NO_VALID_COPY, f"{len(copies)} copies read")
    page = ParameterPage.decode(best)
    if page.onfi_version is None:
        raise ParamPageError(ParamError.REVISION, f"0x{page.revision_bits:04x}")
    notes = [] if chosen is not None else ["recovered by bit-wise majority of the copies"]
    if best[O.SIGNATURE:O.SIGNATURE + 4] != b"ONFI":  # the kernel trusts the CRC and READ ID 20h instead
        notes.append("bytes 0-3 are not \"ONFI\"")
    check_geometry(page)
    ecc, note = _ecc(page, raw)
    if note:
        notes.append(note)
    return DecodedParamPage(page, chosen, ecc, tuple(notes))


def check_geometry(page: ParameterPage) -> None:
    """Refuse a page describing no chip (zero sizes): a rig could not address it."""
    if not (page.page_bytes and page.pages_per_block and page.blocks_per_lun and page.luns):
        raise ParamPageError(ParamError.GEOMETRY, f"{page.page_bytes} B pages, {page.pages_per_block} pages/block, "
                                                  f"{page.blocks_per_lun} blocks/LUN, {page.luns} LUNs")


@dataclass(frozen=True)
class RigLimits:
    """What the rig's controller can drive (the protocol's Limit, the controller's row register)."""

    buffer_bytes: int
    max_blocks: int
    row_bits: int


RIG_LIMITS = RigLimits(Limit.PAGE_BUFFER_BYTES, Limit.MAX_BLOCKS, Limit.ROW_BITS)


def row_bits(page: ParameterPage) -> tuple[int, int, int]:
    """Bits of the row address for (page, block, LUN): each field rounded up to a power of two, as ONFI lays
    the row address out (page in the low bits, then block, then LUN)."""
    return tuple((n - 1).bit_length() for n in (page.pages_per_block, page.blocks_per_lun, page.luns))


def check_drivable(page: ParameterPage, limits: RigLimits) -> None:
    """Refuse a chip the rig cannot drive, naming the field: a 16-bit bus, a page beyond the buffer, a row
    address beyond the controller's (or the chip's row cycles), more blocks than the rig's bad-block table."""
    if page.bus_width != 8:
        raise ParamPageError(ParamError.BUS_WIDTH)
    if page.page_bytes + page.spare_bytes > limits.buffer_bytes:
        raise ParamPageError(ParamError.PAGE_SIZE, f"{page.page_bytes}+{page.spare_bytes} bytes, "
                                                   f"buffer {limits.buffer_bytes}")
    bits = sum(row_bits(page))
    if bits > min(limits.row_bits, 8 * page.row_address_cycles) or page.luns * page.blocks_per_lun > limits.max_blocks:
        raise ParamPageError(ParamError.ADDRESSING, f"{bits} row bits in {page.row_address_cycles} cycles, "
                                                    f"{page.luns * page.blocks_per_lun} blocks; the rig takes "
                                                    f"{limits.row_bits} bits, {limits.max_blocks} blocks")


def majority(copies: list[bytes]) -> bytes:
    """Each bit as most copies have it (Linux's nand_bit_wise_majority)."""
    out = bytearray(len(copies[0]))
    for i in range(len(out)):
        for bit in range(8):
            ones = sum(c[i] >> bit & 1 for c in copies)
            if 2 * ones > len(copies):
                out[i] |= 1 << bit
    return bytes(out)


def _ecc(page: ParameterPage, raw: bytes) -> tuple[EccRequirement | None, str | None]:
    if page.ecc_bits != ECC_IN_EXT_PAGE:
        return EccRequirement(page.ecc_bits, ECC_STEP_DEFAULT), None
    if page.onfi_version < 21 or not page.features & ParamFeature.EXT_PARAM_PAGE:
        return None, "ECC bits 0xFF without an extended parameter page: no ECC requirement"
    start, n = PARAM_PAGE_BYTES * page.copies, page.ext_page_units * EXT_UNIT_BYTES
    ext = raw[start:start + n]  # the kernel reads the first copy only
    if n < EXT_PAGE_HEADER_BYTES or len(ext) < n or onfi_crc16(ext[2:]) != struct.unpack_from("<H", ext)[0]:
        return None, "extended parameter page missing or its CRC fails: no ECC requirement"
    if ext[2:6] != EXT_PAGE_SIGNATURE:
        return None, "extended parameter page lacks its EPPS signature: no ECC requirement"
    cursor = EXT_PAGE_HEADER_BYTES
    for s in range(EXT_PAGE_SECTIONS):
        kind, units = ext[16 + 2 * s], ext[17 + 2 * s]
        if kind == EXT_SECTION_ECC:
            if cursor + 2 > len(ext) or not ext[cursor + 1]:
                return None, "extended page's ECC section has no codeword size: no ECC requirement"
            return EccRequirement(ext[cursor], 1 << ext[cursor + 1]), None
        cursor += units * EXT_UNIT_BYTES
    return None, "extended parameter page has no ECC section: no ECC requirement"


def param_copies(raw: bytes) -> list[bytes]:
    copies = [raw[k * PARAM_PAGE_BYTES:(k + 1) * PARAM_PAGE_BYTES] for k in range(PARAM_PAGE_COPIES)]
    return [c for c in copies if len(c) == PARAM_PAGE_BYTES]


def first_valid_copy(raw: bytes) -> int | None:
    """The first of the copies whose CRC holds: what tells the rig its read capture works."""
    return next((k for k, c in enumerate(param_copies(raw)) if copy_ok(c)), None)


def copy_ok(copy: bytes) -> bool:
    return onfi_crc16(copy[:O.CRC]) == struct.unpack_from("<H", copy, O.CRC)[0]


def _text(b: bytes) -> str:
    """ASCII with anything unprintable dropped and trailing spaces trimmed (the kernel's sanitize_string)."""
    return "".join(chr(c) if 0x20 <= c < 0x7F else "?" for c in b).rstrip()


def _endurance(cycles: int) -> tuple[int, int]:
    """ONFI's (value, power of ten) pair for the rated endurance."""
    exp = 0
    while cycles > 255:
        cycles //= 10
        exp += 1
    return cycles, exp
