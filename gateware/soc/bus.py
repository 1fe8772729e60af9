"""A register stage between the SoC's Wishbone interconnect and a slave that spans much of the die.

The SRAM's 96 block RAMs are spread across the ECP5; driven straight from the bus, the arbiter's grant reached
every block RAM's write enable in one cycle, 16 of the ULX3S build's 19 ns of its worst path in routing
(docs/ulx3s.md). Here the request and the reply each cross a flop, so that wire gets a cycle of its own: an
access takes two cycles more, which the CPU's caches mostly hide.
"""
from __future__ import annotations

from migen import If, Module, Signal
from litex.soc.interconnect import wishbone


class RegisteredSlave(Module):
    """``bus`` faces the interconnect; ``slave`` (a single-cycle-request Wishbone slave, no bursts) sees it a cycle late."""

    def __init__(self, slave: wishbone.Interface) -> None:
        assert not slave.bursting, "the stage carries classic cycles only"
        self.bus = bus = wishbone.Interface.like(slave)
        busy = Signal()
        self.sync += [
            bus.ack.eq(0),
            If(~busy & bus.cyc & bus.stb & ~bus.ack,
                busy.eq(1),
                slave.cyc.eq(1), slave.stb.eq(1), slave.we.eq(bus.we),
                slave.adr.eq(bus.adr), slave.dat_w.eq(bus.dat_w), slave.sel.eq(bus.sel),
            ),
            If(busy & slave.ack,
                busy.eq(0),
                slave.cyc.eq(0), slave.stb.eq(0),
                bus.ack.eq(1), bus.dat_r.eq(slave.dat_r),
            ),
        ]
