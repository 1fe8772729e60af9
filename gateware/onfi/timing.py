"""ONFI asynchronous SDR timing modes in system-clock cycles: what the controller counts, and where it samples DQ.

The modes' values (nandrig.chip.timing) are rounded up to whole cycles at build time; the bus-functional model
checks the unrounded values.

Reads: the chip drives a byte from tREA after RE# falls until tRHOH after RE#
rises, and, only in EDO operation (a read cycle under 30 ns), until tRLOH after
the next RE# fall. The byte reaches the FPGA's input register after the board's
round-trip delay (:class:`Board`). :func:`mode_cycles` picks the capture point
with a stated setup and hold margin at both ends of the delay range, holding
RE# low longer when no sampling point falls inside the window. Sampling points
are the PHY's clock edges, or ``steps`` points per cycle where the board has
input gearing (the ECP5's IDDRX2F: four samples per cycle from an edge clock at
twice the PHY's); the capture point and its trim are counted in those steps.
"""
from __future__ import annotations

import math
from functools import lru_cache
from dataclasses import dataclass

from nandrig.chip.timing import EDO_BELOW_NS, MODES, TimingMode, data_valid_until
from nandrig.protocol import Limit


@dataclass(frozen=True)
class Board:
    """What lies between the FPGA's registers and the chip's pins, as read capture must allow for it."""

    delay_min_ns: float = 0.0  # RE# out to the chip and DQ back to the input register, round trip: fastest wiring
    delay_max_ns: float = 8.0  # ... slowest (output and input buffers, adapter and cable traces)
    setup_ns: float = 2.0  # margin kept between data valid and the sampling edge
    hold_ns: float = 1.0  # margin kept between the sampling edge and data going invalid
    reach_ns: float = 20.0  # with input gearing: the longest round trip the start-up sweep must find a point for


DEFAULT_BOARD = Board()

# The ECP5's IDDRX2F hands a PHY cycle's four samples to the PHY's logic this many steps after the latest was taken:
# two sample registers, the output stage its update toggle loads on every other edge-clock rise, then the divided
# clock's edge (Lattice's ECP5 simulation library, IDDRX2F.v with CLKDIVF.v; docs/ulx3s.md). The divider's other
# reset phase gives GEARING_LATENCY_SPREAD steps more. The PHY's capture point counts it (:func:`read_capture`).
GEARING_LATENCY_STEPS = 7
GEARING_LATENCY_SPREAD = 2


def input_latency_steps(steps: int) -> int:
    """Steps between DQ's sample and the PHY's logic seeing it: the gearing's, none for a plain input register."""
    return GEARING_LATENCY_STEPS if steps > 1 else 0


# 11.03 ns: whole cycles then keep every strobe width and period of every mode a tenth over its minimum (a read or
# write cycle of 22.07 ns at mode 5 against tRC/tWC 20, 33.1 at modes 3-4 against 30 and 25), where at 100 MHz a
# width of 10, 20, 30 or 50 ns sits exactly at its minimum and the next cycle costs half a mode-5 byte
# (docs/onfi.md). The ULX3S's NAND clock (its PLL makes no 90 MHz), whose period is also whole picoseconds in
# LiteX's simulator (90 MHz's 11,111 ps are not, at half a period)
DEFAULT_CLK_HZ = 90_625_000


def cycles(ns: float, clk_hz: float) -> int:
    """Whole clock cycles covering ``ns`` (at least one)."""
    return max(1, math.ceil(ns * clk_hz / 1e9 - 1e-9))


# the intervals between two lines' edges (waits the PHY counts, as against strobe widths and latch setups); tRHZ
# follows tRHW, tCLR and tAR follow tWHR
WAITS = ("tADL", "tAR", "tCCS", "tCEH", "tCLR", "tCS", "tRHW", "tRHZ", "tRR", "tWHR", "tWW")


# the PHY starts a beat that waited on one of these a cycle after the wait's count ends: its gates are flops
# (phy.OnfiPhy._gates), so every wait keeps a cycle over its minimum at the pins
WAIT_LAG_CYCLES = 1


def wait_guard_ns(ns: float, clk_hz: float) -> float:
    """The margin every interval keeps over its minimum at the pins (a wait, a setup or hold between two lines, a
    strobe's width or period), so that skew between the adapter's lines or a slow edge cannot eat it: a cycle, or a
    tenth of the interval when that is less (issue 50)."""
    return min(1e9 / clk_hz, ns / 10)


def guarded(clk_hz: float, *ns: float) -> float:
    """The longest of the minimums ``ns`` with its guard: what an interval bounded by all of them must last."""
    return max(n + wait_guard_ns(n, clk_hz) for n in ns)


@dataclass(frozen=True)
class ModeCycles:
    """A timing mode in system-clock cycles: what the PHY counts."""

    mode: int
    wp: int  # WE# low in a data-in cycle
    wh: int  # WE# high after it, stretched so wp + wh covers tWC
    wp_latch: int  # WE# low in a command or address cycle: CLE/ALE rise with WE#'s fall and keep a guard over tCLS/tALS
    wh_latch: int  # WE# high after it, stretched so the latch cycle covers tWC
    rp: int  # RE# low
    reh: int  # RE# high, stretched so rp + reh covers tRC
    sample: int  # capture steps after RE# low at which DQ is sampled (may fall after RE# rises, or after the next fall: EDO)
    cs: int  # CE# low before the first WE# low (tCS beyond tWP)
    whr: int  # WE# high to RE# low (also covers tCLR/tAR, checked at build)
    rhw: int  # RE# high to WE# low
    adl: int  # last address WE# high to first data WE# high
    wb: int  # WE# high before R/B# is looked at
    rr: int  # R/B# high to RE# low
    ccs: int  # E0h's WE# high to RE# low
    ceh: int  # CE# high between selections
    ww: int  # WP# change to WE# low
    setup_margin_ns: float  # sample edge after data valid at the slowest board delay
    hold_margin_ns: float  # sample edge before data invalid at the fastest board delay

    @property
    def capture_ok(self) -> bool:
        return self.setup_margin_ns >= 0 and self.hold_margin_ns >= 0

    @property
    def write_cycle(self) -> int:
        return self.wp + self.wh

    @property
    def latch_cycle(self) -> int:
        return self.wp_latch + self.wh_latch

    @property
    def read_cycle(self) -> int:
        return self.rp + self.reh


def read_capture(t: TimingMode, clk_hz: float, board: Board = DEFAULT_BOARD,
                 steps: int = 1) -> tuple[int, int, int, float, float]:
    """(rp, reh, sample, setup margin, hold margin): RE# low and high in cycles and the capture point in steps
    (``steps`` per cycle), RE# held low longer until a sampling point lies in the data-valid window with the
    board's margins at both delay extremes."""
    period = 1e9 / clk_hz
    step = period / steps
    sample = cycles(t.tREA + board.delay_max_ns + board.setup_ns, clk_hz * steps)
    rp = cycles(guarded(clk_hz, t.tRP), clk_hz)
    while True:
        reh = max(cycles(guarded(clk_hz, t.tREH), clk_hz), cycles(guarded(clk_hz, t.tRC), clk_hz) - rp)
        if steps > 1:  # fine enough to calibrate against: the window need only hold the calibrated point
            got = calibrated_capture(t, rp, period, steps, board)
            if got is not None:
                return rp, reh, *got
            rp += 1
            continue
        end = data_valid_until(t, rp * period, (rp + reh) * period) + board.delay_min_ns
        if sample * step <= end - board.hold_ns:
            return rp, reh, sample, sample * step - (t.tREA + board.delay_max_ns), end - sample * step
        rp += 1  # RE# low longer keeps the byte on DQ longer (tRHOH counts from RE# rising)


def centred_point(first_ps: int, last_ps: int, step_ps: int) -> int | None:
    """The sampling point a start-up sweep settles on for a window (first, last]: the centre of the points
    inside it, of two the later, in steps (:func:`trim_centre`'s rule; a point exactly at ``first`` has no setup
    margin, so it fails as in :func:`trim_passes`); None when none is."""
    lo, hi = first_ps // step_ps + 1, last_ps // step_ps
    return lo + (hi - lo + 1) // 2 if hi >= lo else None


def calibrated_capture(t: TimingMode, rp: int, period: float, steps: int,
                       board: Board = DEFAULT_BOARD) -> tuple[int, float, float] | None:
    """With RE# low ``rp`` cycles: (the calibrated point in steps, the worst setup and hold margins of the
    calibrated point over the board's delay range, in 0.1 ns steps), or None when at some delay it misses the
    margins. Calibration sees the last byte of a burst (:func:`data_window_ps`). The point is the one centred for
    the middle of the round trips the sweep must reach (0 to ``board.reach_ns``, the gearing's latency anywhere in
    its spread), so the trims either side reach them all."""
    step_ps = round(period * 1000) // steps
    latency = input_latency_steps(steps) * step_ps
    first, last = round(t.tREA * 1000) + latency, round((rp * period + t.tRHOH) * 1000) + latency
    setup = hold = math.inf
    for d in range(round(board.delay_min_ns * 1000), round(board.delay_max_ns * 1000) + 1, 100):
        point = centred_point(first + d, last + d, step_ps)
        if point is None:
            return None
        setup, hold = min(setup, point * step_ps - first - d), min(hold, last + d - point * step_ps)
    if setup < board.setup_ns * 1000 or hold < board.hold_ns * 1000:
        return None
    mid = (round((board.delay_min_ns + max(board.delay_max_ns, board.reach_ns)) * 500)
           + GEARING_LATENCY_SPREAD * step_ps // 2)
    return centred_point(first + mid, last + mid, step_ps), setup / 1000, hold / 1000


@lru_cache(maxsize=64)  # every command on the virtual rig asks for its mode's
def mode_cycles(mode: int, clk_hz: float = DEFAULT_CLK_HZ, board: Board = DEFAULT_BOARD, steps: int = 1) -> ModeCycles:
    """``steps``: DQ samples per PHY cycle (the capture point's and the trim's unit)."""
    t = MODES[mode]
    c = lambda ns: cycles(ns, clk_hz)  # noqa: E731
    # strobe widths and periods, and the setups and holds between two of the adapter's lines, keep wait_guard_ns over
    # their minimum, as the waits do; the tCLS/tALS guard lengthens command and address cycles only, never a data byte
    g = lambda *ns: guarded(clk_hz, *ns)  # noqa: E731
    wp = c(g(t.tWP, t.tDS))
    wp_latch = c(g(t.tWP, t.tDS, t.tCLS, t.tALS))
    high = c(g(t.tWH, t.tCLH, t.tALH, t.tDH, t.tCH))
    wh, wh_latch = (max(high, c(g(t.tWC)) - low) for low in (wp, wp_latch))
    rp, reh, sample, setup, hold = read_capture(t, clk_hz, board, steps)
    # CLE/ALE drop wh_latch (<= wh) cycles after WE# rises; tWHR from WE# high must also give tCLR/tAR after that
    whr = max(c(t.tWHR), wh + c(max(t.tCLR, t.tAR)))
    return ModeCycles(mode, wp, wh, wp_latch, wh_latch, rp, reh, sample, max(0, c(t.tCS) - wp), whr, c(t.tRHW),
                      c(t.tADL), c(t.tWB), c(t.tRR), max(whr, c(t.tCCS)), c(t.tCEH), c(t.tWW), round(setup, 3),
                      round(hold, 3))


def capture_depth(clk_hz: float, board: Board = DEFAULT_BOARD, steps: int = 1) -> int:
    """The latest capture point the PHY can take, in steps after RE# falls (a trimmed sample point is clamped
    to 1..depth): the latest mode's moved by the largest trim, and a step more. The capture pipe is that many
    cycles long, so no deeper than the trims reach (with input gearing its load was the NAND clock's critical
    path at one seed)."""
    return max(mode_cycles(m, clk_hz, board, steps).sample for m in MODES) + Limit.CAPTURE_TRIM_MAX + 1


def data_window_ps(mode: int, clk_hz: float, delay_ns: float, board: Board = DEFAULT_BOARD,
                   steps: int = 1, latency_steps: int | None = None) -> tuple[int, int]:
    """When a byte is on the FPGA's input for every byte of a burst, as the PHY's logic sees it (after the input
    gearing's ``latency_steps``, by default :func:`input_latency_steps`), in ps after its RE# fall, on wiring with
    round-trip delay ``delay_ns`` (no margins: what the chip guarantees). From tREA; until tRHOH after RE#
    rises: the last byte of a burst has no next RE# fall, so EDO's tRLOH extension does not cover it."""
    t, c = MODES[mode], mode_cycles(mode, clk_hz, board, steps)
    latency = input_latency_steps(steps) if latency_steps is None else latency_steps
    period = round(1e12 / clk_hz)
    delay = round(delay_ns * 1000) + latency * period // steps
    return round(t.tREA * 1000) + delay, c.rp * period + round(t.tRHOH * 1000) + delay


def trim_range(mode: int, clk_hz: float, trim_min: int, trim_max: int, board: Board = DEFAULT_BOARD,
               steps: int = 1) -> range:
    """The trims (in capture steps) within [trim_min, trim_max] that move the capture point in ``mode``: the
    PHY clamps the trimmed point to 1..:func:`capture_depth` steps, and a sweep skips trims that land on a
    clamped point."""
    sample = mode_cycles(mode, clk_hz, board, steps).sample
    return range(max(trim_min, 1 - sample), min(trim_max, capture_depth(clk_hz, board, steps) - sample) + 1)


def trim_passes(mode: int, clk_hz: float, trim: int, delay_ns: float, board: Board = DEFAULT_BOARD,
                steps: int = 1, latency_steps: int | None = None) -> bool:
    """Whether reads with capture trim ``trim`` (within :func:`trim_range`) return the chip's bytes on wiring
    with round-trip delay ``delay_ns``: the trimmed point lies inside :func:`data_window_ps`, after its start (tREA
    is the latest the chip may put the byte out: a sample exactly there has no margin)."""
    sample = mode_cycles(mode, clk_hz, board, steps).sample + trim
    first, last = data_window_ps(mode, clk_hz, delay_ns, board, steps, latency_steps)
    return first < sample * round(1e12 / clk_hz) // steps <= last


def trim_centre(passing: int, trim_min: int) -> int | None:
    """The trim a rig settles on: the centre of the longest run of passing trims in the mask (bit i: trim
    ``trim_min + i``; the first run wins a tie), of two central trims the later, which samples further after data
    valid (setup margin, which a slow edge on a real adapter eats first), or None when none passes. The
    firmware's ``capture_trim_centre`` does the same."""
    best_lo, best_len, i = 0, 0, 0
    while passing >> i:
        if not passing >> i & 1:
            i += 1
            continue
        j = i
        while passing >> j & 1:
            j += 1
        if j - i > best_len:
            best_lo, best_len = i, j - i
        i = j
    return trim_min + best_lo + best_len // 2 if best_len else None


def passing_trims(mode: int, clk_hz: float, delay_ns: float, trim_min: int, trim_max: int, steps: int = 1,
                  latency_steps: int | None = None) -> int:
    """The mask a start-up sweep over [trim_min, trim_max] finds at round trip ``delay_ns`` (bit i: trim
    ``trim_min + i`` read the chip correctly), the input gearing's latency ``latency_steps`` (None: its nominal)."""
    return sum(1 << (t - trim_min) for t in trim_range(mode, clk_hz, trim_min, trim_max, steps=steps)
               if trim_passes(mode, clk_hz, t, delay_ns, steps=steps, latency_steps=latency_steps))
