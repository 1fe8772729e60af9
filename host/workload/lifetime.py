"""A workload to the end of the flash's life: the drive filled, the workload run until the FTL is in its steady
state, then replayed in windows until the first read reported lost or until no spare block is left.

A flash rated for thousands of P/E takes millions of page writes to wear out, so between two windows the whole
flash can be aged at once: every block in use counts ``skip`` more P/E cycles (``Ftl.age_evenly``), given by
the chip's bulk cycling just before the FTL next erases it. Such a skip stands for the host writes that many
cycles took in the window before it (its host writes per erase, times the cycles, times the blocks aged), so a
policy's write amplification, mode and retirements at each age carry into the count. It also stands for the time
those writes took at the window's pace: the chip's clock moves on by it, so the data kept across the skip ages
as data nobody rewrote would (cold data's truth; hot data, rewritten in the next window, is older than it would
be until then: retention is counted at its upper bound). Each window is replayed operation by operation at the
wear reached, so the policy's t, its errors, its retired blocks and the end itself are the chip's. What a skip
does not keep: the spread of wear across blocks grows only in the windows (skips age every block alike, as wear
leveling aims to). An end inside a skip is counted at the skip's end: the count is over by at most one skip's
worth. ``tests/host/test_workload_lifetime.py`` checks the whole against replaying every write.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from nandrig.host.ftl.ftl import BlockState, FlashFull, Ftl
from nandrig.host.ftl.policy import BlockMode
from nandrig.host.workload.replay import BusTiming, ReplayResult, replay
from nandrig.host.workload.trace import IoOp, Request


@dataclass(frozen=True)
class Stage:
    """One window replayed, after the skip before it."""

    skipped_cycles: int  # every block in use aged by this many first
    stood_for: int  # the host page writes the skip stands for
    stood_for_s: float  # and the time they took at the window before's pace (the chip's clock moved on by it)
    host_writes: int  # page writes replayed in the window
    erases: int
    write_amplification: float
    mean_pe: float  # over the blocks in use, at the window's end
    max_pe: int
    retired_blocks: int  # so far
    rber: float  # raw bit errors per bit read in the window
    damaged_reads: int  # host reads reported lost in the window
    host_bytes: int  # read and written by the window's requests
    energy_pj: int | None  # the chip's supply energy over the window's operations (None: the rig has no meter)
    service_ns: float  # the device's time serving the window's requests (their waits apart)
    mean_t: float  # the mean ECC strength of the window's page programs
    pslc_blocks: int  # blocks in pseudo-SLC among those in use, at the window's end


@dataclass
class Lifetime:
    host_writes: int  # page writes the flash took before its end: replayed, and stood for by skips
    replayed_writes: int
    end: str  # "uncorrectable", "spares exhausted" or "workload ended"
    replay: ReplayResult  # the replayed requests after the fill
    stages: list[Stage] = field(default_factory=list)


def run_to_end(ftl: Ftl, requests: Iterator[Request], bus: BusTiming, window_writes: int, skip: int = 0,
               warm_up: float = 2.0, max_windows: int = 100_000) -> Lifetime:
    """Fill every logical page once, replay ``warm_up`` times the logical capacity of the workload's writes, then
    windows of ``window_writes`` page writes, each after a skip of ``skip`` P/E cycles (0: every write
    replayed), until the flash's end."""
    c = ftl.counters
    page = ftl.flash.geometry.page_bytes
    replay(ftl, (Request(0, IoOp.WRITE, lpn * page, page) for lpn in range(ftl.logical_pages)), bus)
    out = ReplayResult()
    life = Lifetime(c.host_writes, 0, "workload ended", out)
    warm = c.host_writes + int(warm_up * ftl.logical_pages)
    stream = iter(requests)
    last_span_ns = 0.0  # the trace time the last window took
    for k in range(max_windows + 1):
        aged = ftl.age_evenly(skip) if k and skip else 0
        before = (c.host_writes, c.erases, c.bit_errors, c.bits_read, out.damaged_reads, c.lost_pages,
                  c.flash_programs, out.service_ns, c.programmed_t)
        per_erase = life.stages[-1].host_writes / max(life.stages[-1].erases, 1) if life.stages else 0.0
        stood_for = int(round(skip * aged * per_erase))
        stood_for_ns = stood_for * last_span_ns / life.stages[-1].host_writes if stood_for else 0.0
        if stood_for_ns:
            ftl.flash.idle(stood_for_ns)
        start_ns = out.end_ns
        target = warm if k == 0 else c.host_writes + window_writes
        host_bytes = out.bytes_read + out.bytes_written
        ftl.flash.energy_pj()  # from here: the window's own
        try:
            replay(ftl, _until(stream, ftl, target), bus, result=out)
        except FlashFull:
            life.end = "spares exhausted"
        writes = c.host_writes - before[0]
        alive = np.isin(ftl.state, (BlockState.FREE, BlockState.OPEN, BlockState.FULL))
        in_use = ftl.pe[alive]
        programs = c.flash_programs - before[6]
        last_span_ns = out.end_ns - start_ns
        life.stages.append(Stage(
            skip if aged else 0, stood_for, stood_for_ns / 1e9, writes, c.erases - before[1],
            programs / writes if writes else 0.0, float(in_use.mean()) if len(in_use) else 0.0,
            int(in_use.max()) if len(in_use) else 0, c.retired_blocks,
            (c.bit_errors - before[2]) / max(c.bits_read - before[3], 1), out.damaged_reads - before[4],
            out.bytes_read + out.bytes_written - host_bytes, ftl.flash.energy_pj(), out.service_ns - before[7],
            (c.programmed_t - before[8]) / programs if programs else 0.0,
            int(np.sum(alive & (ftl.mode == BlockMode.PSLC)))))
        life.host_writes += stood_for + writes
        life.replayed_writes += writes
        if life.end == "workload ended" and (out.damaged_reads > before[4] or c.lost_pages > before[5]):
            life.end = "uncorrectable"
        if life.end != "workload ended" or c.host_writes < target:
            break
    return life


def _until(stream: Iterator[Request], ftl: Ftl, host_writes: int) -> Iterator[Request]:
    """Requests from ``stream`` while the FTL has taken fewer than ``host_writes`` page writes (none taken from
    it beyond)."""
    while ftl.counters.host_writes < host_writes:
        req = next(stream, None)
        if req is None:
            return
        yield req
