"""Small logic helpers shared by the gateware cores."""
from __future__ import annotations

from amaranth import Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out


def popcount(v) -> object:
    """Set bits of v, as an adder tree (v at most 15 bits wide: a 4-bit result)."""
    return sum((v[i] for i in range(len(v))), Const(0, 4))


class SkidBuffer(wiring.Component):
    """A stream register whose input ready is a flop: the consumer's ready reaches only this buffer's output
    register, not the producer's enables (the BCH Chien search's stall fans out to every locator bit). Two
    entries: the output register and a spare that takes the item in flight when the output stalls."""

    def __init__(self, shape) -> None:
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape)), "empty": Out(1)})
        self.shape = shape

    def elaborate(self, platform):
        mod = Module()
        spare, spare_valid = Signal(self.shape), Signal()
        mod.d.comb += [self.i.ready.eq(~spare_valid), self.empty.eq(~self.o.valid & ~spare_valid)]
        with mod.If(~self.o.valid | self.o.ready):
            with mod.If(spare_valid):
                mod.d.sync += [self.o.payload.eq(spare), self.o.valid.eq(1), spare_valid.eq(0)]
            with mod.Else():
                mod.d.sync += [self.o.payload.eq(self.i.payload), self.o.valid.eq(self.i.valid)]
        with mod.Elif(self.i.valid):  # i.ready is ~spare_valid, so the spare is free here
            with mod.If(~spare_valid):
                mod.d.sync += [spare.eq(self.i.payload), spare_valid.eq(1)]
        return mod
