"""The sequencer's side of the PHY: beats out, read bytes back, in one clock domain or across two.

With a NAND clock of its own (``nand``), the PHY runs faster than the system
clock, so bus cycles are counted in finer steps than the SoC can run at. Beats
cross in an asynchronous FIFO; read bytes come back in another, followed by a
marker when the PHY has carried out a DESELECT. Every program ends with its
only DESELECT and the PHY carries out no beat after a timeout until it (it
drops them), so the marker says the operation's bus work is over and every
byte read has arrived before it: ordering by construction, not by counting
synchronizer latencies. The marker also says whether a WAIT_RB timed out.
``mode``, ``target``, ``rd_trim``, ``timeout``, ``ccs`` and ``wp_n`` are set before an operation's
first beat and steady while it runs; each passes a two-flop synchronizer.
``busy_cycles`` (NAND clock cycles) is steady long before the marker arrives.
"""
from __future__ import annotations

from amaranth import Cat, Module, Signal, signed
from amaranth.lib import fifo
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import Component, In, Out

from nandrig.gateware.onfi.phy import BEAT_LAYOUT, Kind, OnfiPhy
from nandrig.gateware.onfi.registers import CCS_BITS, TARGET_BITS, TRIM_BITS

NAND_DOMAIN = "nand"
BEAT_DEPTH = 16  # beats queued ahead: covers the write side's view of the read pointer, a few cycles late
BACK_DEPTH = 8  # the system side takes one entry every cycle; the PHY gives at most one every other NAND cycle


class PhyLink(Component):
    """Connects ``phy`` (already a submodule, renamed into the ``nand`` domain when ``two_clocks``)."""

    def __init__(self, phy: OnfiPhy, two_clocks: bool) -> None:
        super().__init__({
            "mode": In(range(6)), "target": In(TARGET_BITS), "rd_trim": In(TRIM_BITS), "timeout": In(32), "wp_n": In(1, init=1), "ccs": In(CCS_BITS),
            "rdata": Out(8), "rdata_valid": Out(1),
            "deselected": Out(1),  # one cycle: the operation's DESELECT is done and all its bytes have arrived
            "timed_out": Out(1),  # with deselected: a WAIT_RB of the operation gave up
            "busy_cycles": Out(32),
        })
        self.phy = phy
        self.two_clocks = two_clocks
        if two_clocks:
            self.queue = fifo.AsyncFIFO(width=BEAT_LAYOUT.size, depth=BEAT_DEPTH, w_domain="sync", r_domain=NAND_DOMAIN)
        else:  # two beats keep the PHY's ready off the sequencer's paths
            self.queue = fifo.SyncFIFOBuffered(width=BEAT_LAYOUT.size, depth=2)

    def elaborate(self, platform):
        mod = Module()
        phy, queue = self.phy, self.queue
        nd = NAND_DOMAIN if self.two_clocks else "sync"
        mod.submodules.queue = queue
        if self.two_clocks:
            # the PHY takes its beat from a register the FIFO refills when it is empty: the PHY's ready (timing
            # compares) never reaches the FIFO's read pointer, the board's critical path at 100 MHz otherwise.
            # A refill takes a cycle, within every data beat's two
            held, held_valid = Signal(BEAT_LAYOUT), Signal()
            mod.d.comb += [queue.r_en.eq(~held_valid), phy.beats.payload.eq(held), phy.beats.valid.eq(held_valid)]
            with mod.If(~held_valid):
                mod.d[nd] += [held.eq(queue.r_data), held_valid.eq(queue.r_rdy)]
            with mod.Elif(phy.beats.ready):
                mod.d[nd] += held_valid.eq(0)
        else:
            mod.d.comb += [phy.beats.payload.eq(queue.r_data), phy.beats.valid.eq(queue.r_rdy),
                           queue.r_en.eq(phy.beats.ready)]

        # in the PHY's domain: a marker the cycle after a DESELECT (the last capture was the cycle before)
        marker, tmo = Signal(), Signal()
        mod.d[nd] += marker.eq(phy.beats.valid & phy.beats.ready & (phy.beats.payload.kind == Kind.DESELECT))
        with mod.If(phy.timeout_hit):
            mod.d[nd] += tmo.eq(1)
        with mod.If(marker):
            mod.d[nd] += tmo.eq(0)

        rd_trim = Signal(signed(TRIM_BITS))
        mod.d.comb += rd_trim.eq(self.rd_trim)
        ins = [(self.mode, phy.mode), (rd_trim, phy.rd_trim), (self.timeout, phy.timeout), (self.wp_n, phy.wp_n),
               (self.ccs, phy.ccs), (self.target, phy.target)]
        if not self.two_clocks:
            mod.d.comb += [dst.eq(src) for src, dst in ins]
            mod.d.comb += [self.rdata.eq(phy.rdata.payload), self.rdata_valid.eq(phy.rdata.valid),
                           self.deselected.eq(marker), self.timed_out.eq(tmo), self.busy_cycles.eq(phy.busy_cycles)]
            return mod

        for i, (src, dst) in enumerate(ins):
            mod.submodules[f"sync_in{i}"] = FFSynchronizer(src, dst, o_domain=NAND_DOMAIN, init=src.init)
        mod.submodules.sync_busy = FFSynchronizer(phy.busy_cycles, self.busy_cycles, o_domain="sync")
        # never full: the system side takes an entry every cycle
        mod.submodules.back = back = fifo.AsyncFIFO(width=10, depth=BACK_DEPTH, w_domain=NAND_DOMAIN, r_domain="sync")
        mod.d.comb += [back.w_data.eq(Cat(phy.rdata.payload, marker, tmo)), back.w_en.eq(phy.rdata.valid | marker),
                       back.r_en.eq(1),
                       self.rdata.eq(back.r_data[:8]), self.rdata_valid.eq(back.r_rdy & ~back.r_data[8]),
                       self.deselected.eq(back.r_rdy & back.r_data[8]), self.timed_out.eq(back.r_data[9])]
        return mod
