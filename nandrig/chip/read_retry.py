"""How a chip moves its read references: read-retry tables as data, one per chip design.

ONFI leaves read retry to the maker, and makers do it differently (Micron a retry *option* at feature 89h,
Hynix registers behind vendor commands), so a rig sets an MLC page's three references (VR1: L0|L1, VR2: L1|L2,
VR3: L2|L3) through a table: the SET FEATURES writes that carry the offsets, the offsets' range and the voltage
of one step. A chip with no table here cannot move its references one by one, and the rig refuses rather than
write features it does not know to a real part. The firmware gets these tables generated (``onfi_facts.h``) and
selects one by the parameter page's manufacturer and model, as the host does.

Some designs also let a host move the program-verify levels L1..L3 are programmed to (PV1..PV3), the knob
FlexLevel's NUNMA turns to widen the margins of the states that lose most charge. No datasheet this project has
documents such a feature for a real part (vendors keep verify trims behind test modes), so only the virtual chips
have one here, as a vendor feature of their design; a chip without it is refused, never written blind.

The tables below are the virtual chips' (maker "NANDRIG"); no real part's table is given, as none was measured.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from nandrig.errors import NandrigError

REFERENCES = ("VR1", "VR2", "VR3")  # an MLC page's read references, lowest first
VERIFY_LEVELS = ("PV1", "PV2", "PV3")  # the program-verify levels of L1..L3
_UNSET = bytes(4)  # a feature never set reads as zeros
RetrySource = int | str  # a parameter byte: a constant, or the name of the reference whose offset it carries


@dataclass(frozen=True)
class FeatureWrite:
    """One SET FEATURES: its address and its four parameter bytes (a reference's signed offset, or a constant)."""

    address: int
    params: tuple[RetrySource, RetrySource, RetrySource, RetrySource]

    def encode(self, offsets: Mapping[str, int]) -> bytes:
        return bytes(offsets[p] & 0xFF if isinstance(p, str) else p for p in self.params)


@dataclass(frozen=True)
class FeatureOffsets:
    """Three signed offsets a chip takes through SET FEATURES: the writes that carry them, their range in steps and
    the voltage of one step (the datasheet's figure)."""

    names: ClassVar[tuple[str, str, str]]  # what each offset moves
    what: ClassVar[str]  # the offsets' name in messages
    range_name: ClassVar[str]  # their range's
    writes: tuple[FeatureWrite, ...]
    min_offset: int
    max_offset: int
    step_mv: float

    def check(self, offsets: tuple[int, ...]) -> None:
        bad = [f"{r} {o:+d}" for r, o in zip(self.names, offsets) if not self.min_offset <= o <= self.max_offset]
        if len(offsets) != len(self.names) or bad:
            raise NandrigError(f"{self.what} offsets {', '.join(bad) or offsets} are outside this chip's "
                               f"{self.range_name} range {self.min_offset}..{self.max_offset}")

    def encode(self, offsets: tuple[int, ...]) -> list[tuple[int, bytes]]:
        """The SET FEATURES writes (address, four bytes) that put each one at its offset."""
        self.check(offsets)
        named = dict(zip(self.names, offsets))
        return [(w.address, w.encode(named)) for w in self.writes]

    def decode(self, features: Mapping[int, bytes]) -> tuple[int, int, int]:
        """What a chip holding these feature values works at (the virtual chip's side); unset features are 0."""
        return self._decode(tuple(features.get(w.address, _UNSET) for w in self.writes))

    @lru_cache(maxsize=256)  # the virtual chip asks at every read; the values change when a host moves them
    def _decode(self, values: tuple[bytes, ...]) -> tuple[int, int, int]:
        out = dict.fromkeys(self.names, 0)
        for w, data in zip(self.writes, values):
            for i, p in enumerate(w.params):
                if isinstance(p, str):
                    out[p] = data[i] - 256 if data[i] >= 128 else data[i]
        return tuple(max(self.min_offset, min(self.max_offset, out[r])) for r in self.names)  # type: ignore[return-value]


@dataclass(frozen=True)
class VerifyLevels(FeatureOffsets):
    """A vendor feature moving PV1..PV3: a wordline's upper-page program places its cells at the levels in force."""

    names, what, range_name = VERIFY_LEVELS, "program-verify", "verify"


@dataclass(frozen=True)
class ReadRetry(FeatureOffsets):
    """A chip design's read-retry table (and, where the design has one, its verify-level feature)."""

    names, what, range_name = REFERENCES, "read-reference", "retry"
    name: str = ""
    manufacturer: str = ""  # the parameter page's manufacturer field, trailing spaces removed
    model_prefix: str = ""  # the parameter page's model field starts with this
    verify: VerifyLevels | None = None

    def check(self, offsets: tuple[int, ...]) -> None:
        try:
            super().check(offsets)
        except NandrigError as e:
            raise NandrigError(f"{e} ({self.name})") from None


TABLES: tuple[ReadRetry, ...] = (
    # one feature, the three offsets in P1-P3
    ReadRetry((FeatureWrite(0x89, ("VR1", "VR2", "VR3", 0)),), -128, 127, 10.0, "nandrig-89", "NANDRIG",
              "NRV-MLC3X", VerifyLevels((FeatureWrite(0x8A, ("PV1", "PV2", "PV3", 0)),), -40, 40, 10.0)),
    # a feature per reference and a narrower range: a second shape, so nothing assumes the first
    ReadRetry(tuple(FeatureWrite(0xA0 + i, (r, 0, 0, 0)) for i, r in enumerate(REFERENCES)), -100, 100, 10.0,
              "nandrig-a0", "NANDRIG", "NRV-MLCSMALL",
              VerifyLevels(tuple(FeatureWrite(0xA4 + i, (0, r, 0, 0)) for i, r in enumerate(VERIFY_LEVELS)),
                           -30, 30, 10.0)),
)
MAX_WRITES = max(len(t.writes) for t in TABLES)
MAX_VERIFY_WRITES = max(len(t.verify.writes) for t in TABLES if t.verify)


@lru_cache(maxsize=64)  # a virtual chip's profile asks at every read
def table_for(manufacturer: str, model: str) -> ReadRetry | None:
    """The read-retry table of a chip, by its parameter page's manufacturer and model; None when none is known."""
    man, mod = manufacturer.rstrip(" \x00"), model.rstrip(" \x00")
    return next((t for t in TABLES if t.manufacturer == man and mod.startswith(t.model_prefix)), None)


def require_table(manufacturer: str, model: str) -> ReadRetry:
    t = table_for(manufacturer, model)
    if t is None:
        raise NandrigError(f"no read-retry table for {manufacturer.strip()} {model.strip()}: its references cannot be "
                           f"moved one by one (tables: nandrig/chip/read_retry.py)")
    return t


def require_offsets(manufacturer: str, model: str, offsets: Iterable[int], what: str = "offsets") -> ReadRetry:
    """The chip's table, every offset of a sweep (the same on each reference) within its range: a campaign
    refused before anything is worn, not at its first SET_READ_REFS."""
    t = require_table(manufacturer, model)
    offs = list(offsets)
    if offs and (min(offs) < t.min_offset or max(offs) > t.max_offset):
        raise NandrigError(f"{what} {min(offs):+d}..{max(offs):+d}, outside this chip's retry range "
                           f"{t.min_offset}..{t.max_offset} ({t.name})")
    return t


def require_verify(manufacturer: str, model: str) -> VerifyLevels:
    """The design's verify-level feature, or one line saying the chip has none."""
    t = table_for(manufacturer, model)
    if t is None or t.verify is None:
        raise NandrigError(f"{manufacturer.strip()} {model.strip()} cannot move its program-verify levels (no "
                           "verify-level feature in nandrig/chip/read_retry.py)")
    return t.verify
