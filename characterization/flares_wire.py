"""FLARES tables as FLARES_TABLES carries them: the head (:data:`spec.FLARES_TABLES_HEAD`), then the arrays,
little-endian, in the order its doc names. ``firmware/flares/flares_tables.c`` reads the same bytes.

One blob holds one model (every page) or two (lower pages, then upper pages) over one codeword and t range.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from nandrig.characterization.flares_tables import T_GRID, FixedTables
from nandrig.characterization.rber import RberParams, load_params
from nandrig.characterization.flares_tables import c_header
from nandrig.characterization.tables import CorrTable, RetentionGrid
from nandrig.characterization.uber import gf_degree
from nandrig.errors import NandrigError
from nandrig.protocol import spec

FORMAT = 1
HEAD = spec.FLARES_TABLES_HEAD


@dataclass(frozen=True)
class TablesBlob:
    """Tables ready to send, and the CRC-32 a rig reports for them."""

    data: bytes

    @property
    def crc(self) -> int:
        return zlib.crc32(self.data)

    @property
    def models(self) -> int:
        return self.data[HEAD.offset("models")]


def _pack(code: str, values) -> bytes:
    return struct.pack(f"<{len(values)}{code}", *values)


def encode(models: list[FixedTables]) -> TablesBlob:
    """One or two models (lower, upper) on one codeword, t range, P/E grid and time grid."""
    if not 1 <= len(models) <= spec.Limit.FLARES_TABLES_MODELS:
        raise NandrigError(f"a rig holds 1 or {spec.Limit.FLARES_TABLES_MODELS} FLARES models, not {len(models)}")
    m0 = models[0]
    for m in models[1:]:
        if (m.t_min, m.t_max, m.codeword_bits, m.pe_step, len(m.wr), m.t_grid, m.rber_max) != (
                m0.t_min, m0.t_max, m0.codeword_bits, m0.pe_step, len(m0.wr), m0.t_grid, m0.rber_max):
            raise NandrigError("the models of one FLARES table set must share codeword, target, t range and grids")
    out = HEAD.pack(FORMAT, len(models), gf_degree(m0.codeword_bits, m0.t_max), m0.t_min, m0.t_max, len(m0.wr),
                    len(m0.t_grid), m0.codeword_bits // 8, m0.pe_step)
    out += _pack("Q", m0.rber_max) + _pack("I", m0.t_grid)
    for m in models:
        out += _pack("Q", m.wr) + _pack("Q", m.rd_pe) + _pack("I", m.rd_t)
        out += b"".join(_pack("I", row) for row in m.mrt_min)
    return TablesBlob(out)


@dataclass(frozen=True)
class TablesDims:
    """What a table set must match to be used: the engine's codeword and t range, the grids."""

    codeword_bytes: int
    t_range: tuple[int, int]
    pe_step: int
    pe_cols: int
    t_grid: int

    @classmethod
    def of(cls, m: FixedTables) -> "TablesDims":
        return cls(m.codeword_bits // 8, (m.t_min, m.t_max), m.pe_step, len(m.wr), len(m.t_grid))


# every rig's (spec.Limit; the firmware's compiled-in tables are checked against the same limits)
RIG_DIMS = TablesDims(spec.Limit.RIG_CODEWORD_BYTES, (1, spec.Limit.RIG_TABLES_T_MAX), spec.Limit.RIG_TABLES_PE_STEP,
                      spec.Limit.RIG_TABLES_PE_COLS, T_GRID)


@dataclass(frozen=True)
class TableRecipe:
    """How a rig's tables are made (`nandrig tables` with these options): the compiled-in ones from the paper's
    model, others from a chip's fit."""

    params: str | RberParams = "flares-taco2014"
    uber: float = 1e-11
    codeword_bytes: int = spec.Limit.RIG_CODEWORD_BYTES
    t_max: int = spec.Limit.RIG_TABLES_T_MAX
    pe_max: int = spec.Limit.RIG_TABLES_PE_STEP * (spec.Limit.RIG_TABLES_PE_COLS - 1)
    pe_step: int = spec.Limit.RIG_TABLES_PE_STEP

    def fixed(self) -> FixedTables:
        return self.build()[0]

    def build(self) -> tuple[FixedTables, str]:
        params = load_params(self.params) if isinstance(self.params, str) else self.params
        table = CorrTable.build(self.uber, self.codeword_bytes * 8, 1, self.t_max)
        grid = RetentionGrid.build(params, table, self.pe_max, self.pe_step)
        return FixedTables.build(params, table, grid), c_header(params, table, grid)


def rig_blob(models: list[RberParams], uber: float = 1e-11) -> TablesBlob:
    """Tables for every rig's engine (RIG_DIMS) from one model, or two (lower pages, upper pages)."""
    return encode([TableRecipe(params=m, uber=uber).fixed() for m in models])


def check_fits(models: list[FixedTables], want: TablesDims = RIG_DIMS) -> None:
    """NandrigError naming what differs when tables were not made for ``want`` (a rig refuses such tables
    with BAD_PARAMETER)."""
    got = TablesDims.of(models[0])
    span = "{0[0]}..{0[1]}".format
    for what, g, w in (("codeword bytes", got.codeword_bytes, want.codeword_bytes),
                       ("t range", span(got.t_range), span(want.t_range)),
                       ("P/E step", got.pe_step, want.pe_step), ("P/E columns", got.pe_cols, want.pe_cols),
                       ("time grid points", got.t_grid, want.t_grid)):
        if g != w:
            raise NandrigError(f"FLARES tables made for {what} {g} do not fit the rig's engine ({what} {w})")
    if any(b <= a for a, b in zip((0, *models[0].t_grid), models[0].t_grid)):
        raise NandrigError("FLARES tables' time grid does not rise from above 0")


def expected_bytes(models: int, t_count: int, pe_cols: int, t_grid: int) -> int:
    return HEAD.size + 8 * t_count + 4 * t_grid + models * (16 * pe_cols + 4 * t_grid + 4 * t_count * pe_cols)


def decode(data: bytes) -> list[FixedTables]:
    """The models a blob holds; NandrigError when it is not a well-formed FLARES_TABLES blob."""
    if len(data) < HEAD.size:
        raise NandrigError(f"FLARES tables of {len(data)} bytes are shorter than their head")
    fmt, models, gf_m, t_min, t_max, pe_cols, t_grid, cw_bytes, pe_step = HEAD.unpack(data[:HEAD.size])
    t_count = t_max - t_min + 1
    if (fmt != FORMAT or not 1 <= models <= spec.Limit.FLARES_TABLES_MODELS or t_count < 1 or pe_cols < 2
            or gf_m != gf_degree(cw_bytes * 8, t_max)):
        raise NandrigError("FLARES tables head is malformed")
    if len(data) != expected_bytes(models, t_count, pe_cols, t_grid):
        raise NandrigError(f"FLARES tables are {len(data)} bytes; their head says "
                           f"{expected_bytes(models, t_count, pe_cols, t_grid)}")
    pos = HEAD.size

    def take(code: str, n: int) -> tuple[int, ...]:
        nonlocal pos
        size = struct.calcsize(f"<{n}{code}")
        vals = struct.unpack_from(f"<{n}{code}", data, pos)
        pos += size
        return vals

    rber_max, grid = take("Q", t_count), take("I", t_grid)
    out = []
    for _ in range(models):
        wr, rd_pe, rd_t = take("Q", pe_cols), take("Q", pe_cols), take("I", t_grid)
        mrt = tuple(take("I", pe_cols) for _ in range(t_count))
        out.append(FixedTables(t_min, t_max, cw_bytes * 8, pe_step, rber_max, mrt, wr, rd_pe, grid, rd_t))
    return out
