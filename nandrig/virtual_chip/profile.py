"""Chip profiles: a chip design as data (geometry, identity, timing, defects, physics)."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from nandrig.chip.geometry import Geometry
from nandrig.chip.onfi import ECC_IN_EXT_PAGE, ECC_STEP_DEFAULT, OptionalCommand, ParamFeature
from nandrig.chip.read_retry import ReadRetry, table_for
from nandrig.chip.param_page import EccRequirement, ParameterPage, dump, ext_page
from nandrig.chip.vendor import bad_block_pages, read_id_bytes
from nandrig.virtual_chip.physics import Physics
from nandrig.virtual_chip.power import Power
from nandrig.errors import NandrigError


BAD_BLOCK_MARK_BYTES = 2  # spare bytes a controller leaves to the factory mark (a word, whatever the bus width)


def parity_bytes(ecc: EccRequirement, page_bytes: int) -> int:
    """Spare bytes a binary BCH code meeting ``ecc`` needs per page: bits x m per codeword, m the field degree
    that holds the codeword (data and parity bits below 2^m)."""
    m = (ecc.step_bytes * 8).bit_length()
    while ecc.step_bytes * 8 + ecc.bits * m >= 1 << m:
        m += 1
    return -(-ecc.bits * m // 8) * (page_bytes // ecc.step_bytes)


@dataclass(frozen=True)
class Timing:
    t_r_us: float  # the upper page's read: two references (VR1, VR3), the datasheet's tR
    t_prog_lsb_us: float
    t_prog_msb_us: float
    t_prog_drop: float  # fractional drop of program time at the rated endurance
    t_bers_us: float
    t_bers_growth: float  # fractional rise of erase time at the rated endurance
    jitter: float  # per-operation relative spread
    chip_sigma: float  # chip-to-chip relative spread
    t_r_lsb_us: float | None = None  # the lower page's read: one reference (VR2, or VR1 alone); None: t_r_us
    # cache operations: moving a page between the cache and data registers once the array is free (R/B# low for
    # this after 15h / 31h / 3Fh); a few microseconds in MLC datasheets, 3 us assumed
    t_cbsy_us: float = 3.0
    t_rcbsy_us: float = 3.0


@dataclass(frozen=True)
class Defects:
    factory_bad_rate: float
    wearout_median: float  # P/E count where a block's program/erase starts failing (median)
    wearout_sigma: float  # lognormal spread of that onset
    factory_bad: tuple[int, ...] | None = None  # a known chip's own factory-bad blocks (a twin's), not drawn


@dataclass(frozen=True)
class Variation:
    chip_sigma: float  # relative spread of program noise from chip to chip
    block_sigma: float  # ... and from block to block
    rd_onset_min: float  # block reads at which read disturb becomes visible: log-uniform range
    rd_onset_max: float
    # per die: each programmed state's verify level (V, normal) and the rate oxides wear at (lognormal); the
    # calibration holds the chip at the centre of both (nandrig/virtual_chip/calibrate.py)
    place_sigma: float = 0.0
    wear_sigma: float = 0.0


@dataclass(frozen=True)
class ChipProfile:
    name: str
    description: str
    identity: dict
    geometry: Geometry
    onfi: dict
    timing: Timing
    defects: Defects
    variation: Variation
    physics: Physics
    power: Power

    @property
    def read_retry(self) -> ReadRetry | None:
        return table_for(self.identity["manufacturer"], self.identity["model"])

    @classmethod
    def from_mapping(cls, d: dict) -> "ChipProfile":
        try:
            ph = dict(d["physics"])
            for k in ("vref", "mu", "ret_k"):
                ph[k] = tuple(ph[k])
            prof = cls(
                name=d["name"], description=d.get("description", ""), identity=dict(d["identity"]),
                geometry=Geometry(**d["geometry"]), onfi=dict(d["onfi"]), timing=Timing(**d["timing"]),
                defects=Defects(**d["defects"]), variation=Variation(**d["variation"]), physics=Physics(**ph),
                power=Power(**d.get("power", {})),
            )
            retry = prof.read_retry
            if retry is not None:  # the cells move by what the table's datasheet figure says a step is
                prof = dataclasses.replace(prof, physics=dataclasses.replace(
                    prof.physics, retry_step=retry.step_mv / 1e3,
                    verify_step=retry.verify.step_mv / 1e3 if retry.verify else 0.0))
        except (KeyError, TypeError) as e:
            raise NandrigError(f"chip profile is malformed: {e}") from None
        g = prof.geometry
        if g.pages_per_block % 2 or g.pages_per_block < 4 or g.blocks < 1 or g.page_bytes < 8:
            raise NandrigError("chip geometry needs an even page count >= 4 per block, >= 1 block, >= 8-byte pages")
        if g.luns < 1 or g.blocks % g.luns:
            raise NandrigError(f"chip profile {prof.name}: {g.blocks} blocks do not split evenly over {g.luns} LUNs")
        ecc = prof.ecc
        if ecc.step_bytes & (ecc.step_bytes - 1) or g.page_bytes % ecc.step_bytes:
            raise NandrigError(f"chip profile {prof.name}: ECC step {ecc.step_bytes} B does not divide the page")
        need = parity_bytes(ecc, g.page_bytes)
        if need > g.spare_bytes - BAD_BLOCK_MARK_BYTES:
            raise NandrigError(f"chip profile {prof.name}: {ecc.bits} ECC bits per {ecc.step_bytes} B need {need} "
                               f"parity bytes; the spare holds {g.spare_bytes - BAD_BLOCK_MARK_BYTES} after the mark")
        prof.read_id()  # a geometry the legacy ID bytes cannot state needs the real part's bytes in the profile
        return prof

    @property
    def bad_block_pages(self) -> tuple[int, ...]:
        return bad_block_pages(self.identity["jedec_id"], 2, self.geometry.pages_per_block)

    @property
    def ecc(self) -> EccRequirement:
        o = self.onfi
        return EccRequirement(o["ecc_bits"], o.get("ecc_step_bytes", ECC_STEP_DEFAULT))

    def parameter_page(self) -> ParameterPage:
        g, o, t = self.geometry, self.onfi, self.timing
        in_ext = self.ecc.step_bytes != ECC_STEP_DEFAULT  # byte 112 counts per 512 bytes only: 0xFF + the ext page
        return ParameterPage(
            manufacturer=self.identity["manufacturer"], model=self.identity["model"],
            jedec_id=self.identity["jedec_id"], page_bytes=g.page_bytes, spare_bytes=g.spare_bytes,
            pages_per_block=g.pages_per_block, blocks_per_lun=g.blocks_per_lun, luns=g.luns, bits_per_cell=2,
            max_bad_blocks_per_lun=o["max_bad_blocks"], endurance_cycles=o["endurance_cycles"],
            programs_per_page=o["programs_per_page"], ecc_bits=ECC_IN_EXT_PAGE if in_ext else self.ecc.bits,
            timing_modes=tuple(o["timing_modes"]),
            t_prog_max_us=int(round(t.t_prog_msb_us * 1.5)), t_bers_max_us=int(round(t.t_bers_us * 3)),
            t_r_max_us=int(round(t.t_r_us * 1.3)), t_ccs_ns=o["t_ccs_ns"],
            revision_bits=0x003E if in_ext else 0x001E,  # the extended page needs ONFI 2.1+
            features=ParamFeature.EXT_PARAM_PAGE if in_ext else 0,
            ext_page_units=len(self._ext_page()) // 16 if in_ext else 0,
            optional_commands=OptionalCommand.GET_SET_FEATURES
            | (OptionalCommand.READ_UNIQUE_ID if o.get("unique_id", True) else 0)
            | (OptionalCommand.PAGE_CACHE_PROGRAM | OptionalCommand.READ_CACHE if o.get("cache", True) else 0),
        )

    def _ext_page(self) -> bytes:
        return ext_page(self.ecc, self.onfi["max_bad_blocks"], self.onfi["endurance_cycles"])

    def parameter_dump(self) -> bytes:
        """What READ PARAMETER PAGE streams: the copies, then (when byte 112 is 0xFF) the extended page's."""
        page = self.parameter_page()
        return dump(page, self._ext_page() if page.ext_page_units else b"")

    def read_id(self) -> bytes:
        """READ ID 00h: a real part's bytes when the profile models one, else derived from the geometry."""
        if "read_id" in self.identity:
            return bytes(self.identity["read_id"])
        g = self.geometry
        return read_id_bytes(self.identity["jedec_id"], g.page_bytes * g.pages_per_block * g.blocks, 2, g.page_bytes,
                             g.page_bytes * g.pages_per_block)


def profile_names() -> list[str]:
    pkg = resources.files("nandrig.virtual_chip") / "profiles"
    return sorted(p.name[:-5] for p in pkg.iterdir() if p.name.endswith(".json"))


def load_profile(name_or_path: str) -> ChipProfile:
    if name_or_path in profile_names():
        text = (resources.files("nandrig.virtual_chip") / "profiles" / f"{name_or_path}.json").read_text()
    elif Path(name_or_path).suffix == ".json":
        try:
            text = Path(name_or_path).read_text()
        except OSError as e:
            raise NandrigError(f"cannot read chip profile {name_or_path}: {e.strerror}") from None
    else:
        raise NandrigError(f"unknown chip profile {name_or_path!r} (known: {', '.join(profile_names())})")
    try:
        return ChipProfile.from_mapping(json.loads(text))
    except json.JSONDecodeError as e:
        raise NandrigError(f"chip profile {name_or_path} is not valid JSON: {e.msg}") from None
