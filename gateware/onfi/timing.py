"""ONFI asynchronous SDR timing modes 0-5 as data, and their cost in system-clock cycles.

Values are the ONFI 2.x timing-mode table, in ns (all minima except tWB and
tREA, which are maxima the chip guarantees). The controller rounds each
minimum up to whole cycles at build time; the bus-functional model checks the
unrounded values.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class TimingMode:
    mode: int
    tADL: float  # last address WE# high to first data WE# high
    tALH: float  # ALE hold after WE# high
    tALS: float  # ALE setup to WE# high
    tAR: float  # ALE low to RE# low
    tCH: float  # CE# hold after WE# high
    tCLH: float  # CLE hold after WE# high
    tCLR: float  # CLE low to RE# low
    tCLS: float  # CLE setup to WE# high
    tCS: float  # CE# setup to WE# high
    tDH: float  # data hold after WE# high
    tDS: float  # data setup to WE# high
    tREA: float  # RE# low to data valid (max)
    tREH: float  # RE# high
    tRHOH: float  # data hold after RE# high
    tRHW: float  # RE# high to WE# low
    tRHZ: float  # RE# high to chip releasing DQ (max)
    tRLOH: float  # data hold after the next RE# low
    tRP: float  # RE# low
    tRC: float  # read cycle
    tRR: float  # R/B# high to RE# low
    tWB: float  # WE# high to R/B# low (max)
    tWC: float  # write cycle
    tWH: float  # WE# high
    tWHR: float  # WE# high to RE# low
    tWP: float  # WE# low


_COLUMNS = [f.name for f in fields(TimingMode)][1:]
_TABLE = {
    #     tADL tALH tALS tAR tCH tCLH tCLR tCLS tCS tDH tDS tREA tREH tRHOH tRHW tRHZ tRLOH tRP tRC tRR tWB tWC tWH tWHR tWP
    0: (200, 20, 50, 25, 20, 20, 20, 50, 70, 20, 40, 40, 30, 0, 200, 200, 0, 50, 100, 40, 200, 100, 30, 120, 50),
    1: (100, 10, 25, 10, 10, 10, 10, 25, 35, 10, 20, 30, 15, 15, 100, 100, 0, 25, 50, 20, 100, 45, 15, 80, 25),
    2: (100, 10, 15, 10, 10, 10, 10, 15, 25, 5, 15, 25, 15, 15, 100, 100, 0, 17, 35, 20, 100, 35, 15, 80, 17),
    3: (100, 5, 10, 10, 5, 5, 10, 10, 25, 5, 10, 20, 10, 15, 100, 100, 0, 15, 30, 20, 100, 30, 10, 60, 15),
    4: (70, 5, 10, 10, 5, 5, 10, 10, 20, 5, 10, 20, 10, 15, 100, 100, 5, 12, 25, 20, 100, 25, 10, 60, 12),
    5: (70, 5, 10, 10, 5, 5, 10, 10, 15, 5, 7, 16, 7, 15, 100, 100, 5, 10, 20, 20, 100, 20, 7, 60, 10),
}
MODES = {m: TimingMode(m, *map(float, row)) for m, row in _TABLE.items()}
assert all(len(row) == len(_COLUMNS) for row in _TABLE.values())

DEFAULT_CLK_HZ = 100e6  # 10 ns: every mode's write and read cycle within 0.83-1.0 of its limit


def cycles(ns: float, clk_hz: float) -> int:
    """Whole clock cycles covering ``ns`` (at least one)."""
    return max(1, math.ceil(ns * clk_hz / 1e9 - 1e-9))


@dataclass(frozen=True)
class ModeCycles:
    """A timing mode in system-clock cycles: what the PHY counts."""

    mode: int
    wp: int  # WE# low
    wh: int  # WE# high, stretched so wp + wh covers tWC
    rp: int  # RE# low
    reh: int  # RE# high, stretched so rp + reh covers tRC
    sample: int  # cycles after RE# low at which DQ is sampled (tREA, may fall after RE# rises: EDO)
    cs: int  # CE# low before the first WE# low (tCS beyond tWP)
    whr: int  # WE# high to RE# low (also covers tCLR/tAR, checked at build)
    rhw: int  # RE# high to WE# low
    adl: int  # last address WE# high to first data WE# high
    wb: int  # WE# high before R/B# is looked at
    rr: int  # R/B# high to RE# low
    capture_ok: bool  # the sample point lies inside the data-valid window

    @property
    def write_cycle(self) -> int:
        return self.wp + self.wh

    @property
    def read_cycle(self) -> int:
        return self.rp + self.reh


def mode_cycles(mode: int, clk_hz: float = DEFAULT_CLK_HZ) -> ModeCycles:
    t = MODES[mode]
    c = lambda ns: cycles(ns, clk_hz)  # noqa: E731
    period = 1e9 / clk_hz
    wp = c(max(t.tWP, t.tDS, t.tCLS, t.tALS))
    wh = max(c(t.tWH), c(max(t.tCLH, t.tALH, t.tDH, t.tCH)), c(t.tWC) - wp)
    rp = c(t.tRP)
    reh = max(c(t.tREH), c(t.tRC) - rp)
    sample = c(t.tREA)
    # valid from tREA after RE# low until tRHOH after RE# high or tRLOH after the next RE# low
    valid_until = max(rp * period + t.tRHOH, (rp + reh) * period + t.tRLOH)
    capture_ok = sample <= rp + reh and sample * period <= valid_until
    # CLE/ALE drop wh cycles after WE# rises; tWHR from WE# high must also give tCLR/tAR after that
    whr = max(c(t.tWHR), wh + c(max(t.tCLR, t.tAR)))
    return ModeCycles(mode, wp, wh, rp, reh, sample, max(0, c(t.tCS) - wp), whr, c(t.tRHW), c(t.tADL), c(t.tWB),
                      c(t.tRR), capture_ok)


def limit_ns(mode: int) -> tuple[float, float]:
    """(tWC, tRC): the fastest write and read cycle the mode allows."""
    return MODES[mode].tWC, MODES[mode].tRC
