"""FLARES on the rig (docs/protocol.md, "FLARES on the rig"): the virtual rig's golden model of the firmware's.

The firmware decides with ``firmware/flares`` over the tables compiled into it
(``firmware/rig/rig_flares_tables.h``, made by :data:`RIG_TABLES`) until the
host sends others (FLARES_TABLES); this model decides with the Python
reference over the same tables, which tests hold bit for bit equal to the C.
With two models, an upper page (the host names the type) uses the second. Page profiles live in a table of fixed size keyed by
(block, page); p_cur, pecycles and writestamp also go into the page's spare
area as the 12-byte record of ``firmware/flares/pprof.c`` (lib/bch.c-
compatible BCH, here by bchlib), so a page whose RAM profile is gone (a new
configuration, a power cycle) is still read with the t it was written with.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache

import bchlib

from nandrig.characterization.flares import Decision, Flares, FlaresAccess, FlaresConfig, Pprof, TypeCounts, Zone
from nandrig.characterization.flares_tables import FixedTables
from nandrig.errors import NandrigError
from nandrig.protocol import Limit, ProfileSource, TablesSource
from nandrig.characterization import flares_wire as blobs
from nandrig.characterization.flares_wire import TableRecipe

PROFILE_SLOTS = Limit.PROFILE_SLOTS  # a module attribute, so a test can shrink the table
PE_MAX = Limit.FLARES_PE_MAX
RECORD_BYTES = Limit.ECC_PROFILE_BYTES


RIG_TABLES = TableRecipe()  # the compiled-in tables


@lru_cache(maxsize=None)
def rig_tables() -> FixedTables:
    return RIG_TABLES.build()[0]


@lru_cache(maxsize=4)
def _decoded(blob: bytes) -> list[FixedTables]:
    """Tables sent to the rig, read once (every FLARES operation decides with them)."""
    return blobs.decode(blob)


# -- the spare-area record: p_cur 7 bits, pecycles 17, writestamp 32 (big-endian), then 5 parity bytes --
@lru_cache(maxsize=None)
def _record_bch() -> bchlib.BCH:
    return bchlib.BCH(5, prim_poly=0x83)


def pack(pp: Pprof) -> bytes:
    v = (pp.p_cur & 0x7F) << 49 | (pp.pecycles & PE_MAX) << 32 | (pp.writestamp & 0xFFFF_FFFF)
    data = v.to_bytes(7, "big")
    return data + bytes(_record_bch().encode(data))


def unpack(rec: bytes) -> tuple[int, Pprof | None]:
    """(corrected bits, the record's fields) or (-2, None) erased, (-1, None) uncorrectable."""
    if rec == b"\xff" * RECORD_BYTES:
        return -2, None
    data, ecc = bytearray(rec[:7]), bytearray(rec[7:])
    n = _record_bch().decode(data, ecc)
    if n < 0:
        return -1, None
    _record_bch().correct(data, ecc)
    v = int.from_bytes(data, "big")
    p = v >> 49 & 0x7F
    pe = v >> 32 & PE_MAX
    return n, Pprof(p_cur=p, p_next=p, pecycles=pe, writestamp=v & 0xFFFF_FFFF, pe_win=pe)


@dataclass
class RigFlares:
    """The rig's FLARES state: constants and the RAM profile table."""

    t_cap: int
    config: FlaresConfig = field(init=False)
    profiles: dict[tuple[int, int], Pprof] = field(default_factory=dict)
    types: TypeCounts = field(default_factory=TypeCounts)  # guarded FLARES' counts per page type
    loaded: bytes | None = None  # the FLARES_TABLES blob in use; None: the compiled-in tables
    clock_credit_s: int = 0  # FLARES_CLOCK: 25 degC-equivalent seconds of bakes beyond the rig's clock
    stage: bytearray = field(default_factory=lambda: bytearray(Limit.PAGE_BUFFER_BYTES), repr=False)

    def __post_init__(self) -> None:
        self.configure(FlaresConfig())

    @property
    def tables(self) -> list[FixedTables]:
        return _decoded(self.loaded) if self.loaded is not None else [rig_tables()]

    @property
    def flares(self) -> Flares:
        tabs = self.tables
        return Flares(tabs[0], self.config, upper=tabs[1] if len(tabs) > 1 else None, types=self.types)

    @property
    def source(self) -> tuple[TablesSource, int]:
        """Which tables are in use, and their CRC-32 (0 for the compiled-in ones)."""
        if self.loaded is None:
            return TablesSource.BUILTIN, 0
        return TablesSource.LOADED, blobs.TablesBlob(self.loaded).crc

    def stage_chunk(self, offset: int, chunk: bytes) -> None:
        self.stage[offset:offset + len(chunk)] = chunk

    def commit(self, total: int, crc: int) -> bool:
        """Use the staged tables when their CRC and dimensions check out (False: the old ones stay)."""
        data = bytes(self.stage[:total])
        if blobs.TablesBlob(data).crc != crc:
            return False
        try:
            blobs.check_fits(_decoded(data), blobs.TablesDims.of(rig_tables()))
        except NandrigError:
            return False
        self.loaded = data
        self.forget()  # windows measured under the old model would mix with the new
        return True

    def builtin(self) -> None:
        self.loaded = None
        self.forget()

    def configure(self, cfg: FlaresConfig) -> None:
        """New constants; every RAM profile is forgotten (windows under old constants would mix)."""
        self.config = replace(cfg, t_cap=min(self.t_cap, rig_tables().t_max))
        self.forget()

    def forget(self) -> None:
        """Every page's window and every page type's counts (firmware/rig/flares_ops.c forget())."""
        self.profiles.clear()
        self.types = TypeCounts()

    def has_room(self, key: tuple[int, int]) -> bool:
        """Whether the page has a profile or the table a free slot for one."""
        return key in self.profiles or len(self.profiles) < PROFILE_SLOTS

    def program(self, key: tuple[int, int], pe: int, now: int, page_type: int) -> tuple[Pprof, Decision, bool]:
        """upPage for a program of the page at the block's wear ``pe``; (profile, decision, new).
        The caller checked there is room when the page has no profile."""
        f = self.flares
        pp = self.profiles.get(key)
        new = pp is None
        if new:
            pp = self.profiles[key] = f.new_page(f.cold_start(pe, page_type), pe - 1)
        pp.pecycles = pe - 1  # the host counts the block's wear; upPage adds this program
        d = f.up_page(pp, FlaresAccess.PROGRAM, 0, False, now, page_type)
        if new and f.cold_start_beyond(pe, page_type):
            d = replace(d, beyond_reach=True)
        return pp, d, new

    def profile_for_read(self, key: tuple[int, int], record: bytes) -> tuple[Pprof | None, ProfileSource]:
        if key in self.profiles:
            return self.profiles[key], ProfileSource.RAM
        n, disk = unpack(record)
        if n == -2:
            return None, ProfileSource.NONE
        if disk is None or not rig_tables().t_min <= disk.p_cur <= self.config.t_cap:
            return None, ProfileSource.UNREADABLE
        self.profiles[key] = disk
        return disk, ProfileSource.SPARE

    def read(self, pp: Pprof, deterr: int, fail: bool, now: int, page_type: int, corrected: int,
             codewords: int) -> Decision:
        return self.flares.up_page(pp, FlaresAccess.READ, min(deterr, 0xFFFF), fail, now, page_type, corrected,
                                   codewords)

    def state(self) -> dict:
        return {"t_cap": self.t_cap, "config": self.config.__dict__, "loaded": self.loaded,
                "profiles": [(k, v.__dict__) for k, v in self.profiles.items()], "types": self.types.__dict__,
                "clock_credit_s": self.clock_credit_s}

    @classmethod
    def from_state(cls, st: dict) -> "RigFlares":
        rf = cls(st["t_cap"])
        rf.config = FlaresConfig(**st["config"])
        rf.loaded = st.get("loaded")  # states saved before protocol 1.7 have none
        rf.profiles = {tuple(k): Pprof(**v) for k, v in st["profiles"]}
        rf.types = TypeCounts(**st.get("types", {}))  # states saved before guarded FLARES have none
        rf.clock_credit_s = st.get("clock_credit_s", 0)  # and before protocol 1.14, no credit
        return rf


NO_DECISION = Decision(Zone.NONE)
