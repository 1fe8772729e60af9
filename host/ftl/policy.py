"""The FTL's ECC and density policies: the t a page is programmed with, and whether a block opens as MLC or
pseudo-SLC (its lower pages only: half the capacity, a fraction of the errors and wear; Kgil et al.'s density
control).

- ``fixed``: one t for the whole life, the worst case the model projects (end of rated life, the retention
  target, the upper page), as a controller without adaptation provisions it;
- ``flares``: FLARES' start-of-window t for a page at its block's wear and page type (its model's projection over
  the retention target with the margin of 2; docs/flares.md), which grows with wear;
- ``flares+density``: FLARES, and a block whose MLC pages would need more than the engine corrects opens as
  pseudo-SLC, on the lower pages' model;
- ``ldpc``: an LDPC controller at FlexLevel's setting instead of the BCH engine: pages are read raw and decoded
  by a code whose reach (sensing levels by raw BER) a flexlevel campaign measured (host/ftl/sensing.py);
- ``ldpc+accesseval``: that, with FlexLevel's AccessEval: data read often whose reads need soft sensing moves
  to blocks in reduced state (three levels per cell, host/ftl/reduced.py), at a quarter of their capacity.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from nandrig.characterization.flares import Flares, FlaresConfig
from nandrig.characterization.flares_wire import TableRecipe
from nandrig.characterization.rber import RberParams
from nandrig.chip.geometry import PageType
from nandrig.errors import NandrigError
from nandrig.host.ftl.sensing import DEFAULT, SensingReach


class BlockMode(enum.IntEnum):
    MLC = 0
    PSLC = 1
    REDUCED = 2  # three levels per cell, ReduceCode (AccessEval's blocks)


class EccPolicy(Protocol):
    name: str

    def t_for(self, pe: int, page_type: PageType, mode: BlockMode) -> int: ...

    def mode_for(self, pe: int) -> BlockMode: ...


@dataclass(frozen=True)
class FixedT:
    t: int
    name: str = "fixed"

    def t_for(self, pe: int, page_type: PageType, mode: BlockMode) -> int:
        return self.t

    def mode_for(self, pe: int) -> BlockMode:
        return BlockMode.MLC


class FlaresT:
    """FLARES' t by wear and page type on the tables of a lower- and an upper-page model; with ``density``, a
    block beyond the engine's reach in MLC opens as pseudo-SLC."""

    def __init__(self, lower: RberParams, upper: RberParams, t_max: int, codeword_bytes: int,
                 retention_s: int = 365 * 24 * 3600, density: bool = False) -> None:
        tables = [TableRecipe(params=m, codeword_bytes=codeword_bytes).fixed() for m in (lower, upper)]
        self.flares = Flares(tables[0], FlaresConfig(req_ret_s=retention_s, t_cap=t_max), upper=tables[1])
        self.density = density
        self.name = "flares+density" if density else "flares"

    def t_for(self, pe: int, page_type: PageType, mode: BlockMode) -> int:
        # a pseudo-SLC page is a lower page on a wordline whose upper page stays erased
        return self.flares.cold_start(pe, PageType.LOWER if mode == BlockMode.PSLC else page_type)

    def mode_for(self, pe: int) -> BlockMode:
        beyond = self.flares.cold_start_beyond(pe, PageType.UPPER)
        return BlockMode.PSLC if self.density and beyond else BlockMode.MLC


@dataclass(frozen=True)
class AccessEval:
    """FlexLevel's AccessEval: a logical page read at least ``hot_reads`` times since it was written whose last
    read needed ``min_levels`` sensing levels or more is hot and costly to read; a reduced block's worth of such
    pages moves to a block in reduced state, read there with VR2 and VR3 at ``refs`` (read-retry steps: the middle
    of L1 and L3; mlc-3x's, docs/flexlevel.md)."""

    hot_reads: int = 4
    min_levels: int = 2
    refs: tuple[int, int] = (60, -60)

    def __post_init__(self) -> None:
        if self.hot_reads < 1 or self.min_levels < 1:
            raise NandrigError("AccessEval needs at least one read and one sensing level to call data hot")


@dataclass(frozen=True)
class LdpcSensing:
    """An LDPC controller: every page programmed and read raw (t 0), decoded at the sensing levels ``reach``
    gives its raw BER; with ``access_eval``, hot data needing soft sensing moves to reduced state."""

    reach: SensingReach
    access_eval: AccessEval | None = None

    @property
    def name(self) -> str:
        return "ldpc+accesseval" if self.access_eval else "ldpc"

    def t_for(self, pe: int, page_type: PageType, mode: BlockMode) -> int:
        return 0

    def mode_for(self, pe: int) -> BlockMode:
        return BlockMode.MLC


def worst_case_t(lower: RberParams, upper: RberParams, t_max: int, codeword_bytes: int, rated_pe: int,
                 retention_s: int = 365 * 24 * 3600) -> int:
    """The fixed policy's t: FLARES' projection for an upper page at the rated wear (no adaptation sees the chip
    age, so it provisions for the end), capped at what the engine corrects."""
    return FlaresT(lower, upper, t_max, codeword_bytes, retention_s).t_for(rated_pe, PageType.UPPER, BlockMode.MLC)


POLICIES = ("fixed", "flares", "flares+density")
LDPC_POLICIES = ("ldpc", "ldpc+accesseval")


def make_policy(name: str, lower: RberParams, upper: RberParams, t_max: int, codeword_bytes: int,
                rated_pe: int, reach: SensingReach | None = None,
                access_eval: AccessEval = AccessEval()) -> EccPolicy:
    if name == "fixed":
        return FixedT(worst_case_t(lower, upper, t_max, codeword_bytes, rated_pe))
    if name in ("flares", "flares+density"):
        return FlaresT(lower, upper, t_max, codeword_bytes, density=name == "flares+density")
    if name in LDPC_POLICIES:
        return LdpcSensing(reach or SensingReach.load(DEFAULT), access_eval if name == "ldpc+accesseval" else None)
    raise NandrigError(f"policy {name!r}: one of {', '.join(POLICIES + LDPC_POLICIES)}")
