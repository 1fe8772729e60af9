"""Chips whose array works faster than their profile says, for the RTL rig's tests.

The RTL rig simulates every clock cycle, so a page program's 1.4 ms of R/B# low is 140,000 cycles of the whole
SoC; most of an RTL campaign's time was the chip's busy time. What those tests compare (the rig against the
virtual rig, busy times counted from R/B#) does not depend on how long the chip is busy, only on both rigs
having the same chip."""
from __future__ import annotations

from dataclasses import replace

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.virtual_chip.profile import ChipProfile, load_profile

BUSY_SCALE = 0.1  # array times (tR, tPROG, tBERS) a tenth of the profile's


def short_busy(name: str, scale: float = BUSY_SCALE) -> ChipProfile:
    p = load_profile(name)
    t = p.timing
    return replace(p, timing=replace(
        t, t_r_us=t.t_r_us * scale, t_r_lsb_us=None if t.t_r_lsb_us is None else t.t_r_lsb_us * scale,
        t_prog_lsb_us=t.t_prog_lsb_us * scale, t_prog_msb_us=t.t_prog_msb_us * scale, t_bers_us=t.t_bers_us * scale))


def short_busy_chip(name: str, seed: int) -> VirtualChip:
    return VirtualChip(short_busy(name), seed)
