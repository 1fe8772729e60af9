"""ONFI asynchronous SDR timing modes 0-5 as data: the chip's side of the bus, which the controller, its bus
model and the virtual rig all read.

Values are the ONFI timing-mode table, in ns (all minima except tWB, tREA and tRHZ, which are maxima the chip
guarantees), with the conservative values the Linux kernel applies to every ONFI chip where the table leaves a
choice to the part: tADL 400 ns in every mode, tWHR 80 ns from mode 1 on, and tCCS 500 ns (ONFI's value until
the parameter page names the part's own).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class TimingMode:
    mode: int
    tADL: float  # last address WE# high to first data WE# high
    tCCS: float  # change column setup: E0h's WE# high to RE# low (the parameter page may give the part's own)
    tCEH: float  # CE# high hold: CE# stays high at least this long between selections
    tWW: float  # WP# transition to WE# low
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
    #  tADL tCCS tCEH tWW tALH tALS tAR tCH tCLH tCLR tCLS tCS tDH tDS tREA tREH tRHOH tRHW tRHZ tRLOH tRP tRC tRR tWB tWC tWH tWHR tWP
    0: (400, 500, 20, 100, 20, 50, 25, 20, 20, 20, 50, 70, 20, 40, 40, 30, 0, 200, 200, 0, 50, 100, 40, 200, 100, 30, 120, 50),
    1: (400, 500, 20, 100, 10, 25, 10, 10, 10, 10, 25, 35, 10, 20, 30, 15, 15, 100, 100, 0, 25, 50, 20, 100, 45, 15, 80, 25),
    2: (400, 500, 20, 100, 10, 15, 10, 10, 10, 10, 15, 25, 5, 15, 25, 15, 15, 100, 100, 0, 17, 35, 20, 100, 35, 15, 80, 17),
    3: (400, 500, 20, 100, 5, 10, 10, 5, 5, 10, 10, 25, 5, 10, 20, 10, 15, 100, 100, 0, 15, 30, 20, 100, 30, 10, 80, 15),
    4: (400, 500, 20, 100, 5, 10, 10, 5, 5, 10, 10, 20, 5, 10, 20, 10, 15, 100, 100, 5, 12, 25, 20, 100, 25, 10, 80, 12),
    5: (400, 500, 20, 100, 5, 10, 10, 5, 5, 10, 10, 15, 5, 7, 16, 7, 15, 100, 100, 5, 10, 20, 20, 100, 20, 7, 80, 10),
}
EDO_BELOW_NS = 30.0  # read cycles shorter than this are EDO: data held tRLOH after the next RE# fall
MODES = {m: TimingMode(m, *map(float, row)) for m, row in _TABLE.items()}
assert all(len(row) == len(_COLUMNS) for row in _TABLE.values())


def data_valid_until(t: TimingMode, rp_ns: float, rc_ns: float) -> float:
    """When the chip stops driving a byte, from its RE# fall, without board delay: tRHOH after RE# rises, or in
    EDO operation tRLOH after the next RE# fall if that is later."""
    return max(rp_ns + t.tRHOH, rc_ns + t.tRLOH if rc_ns < EDO_BELOW_NS else -math.inf)


def limit_ns(mode: int) -> tuple[float, float]:
    """(tWC, tRC): the fastest write and read cycle the mode allows."""
    return MODES[mode].tWC, MODES[mode].tRC
