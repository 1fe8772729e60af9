"""On-rig data patterns: the campaign PRBS-31 (bit-exact with nandrig.boards.sim.pattern) and walking ones/zeros."""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

SEED_MASK = 0x7FFFFFFF


def walk_byte(i: int) -> int:
    """Byte i of the interface self-test: one DQ line high at a time, then one low at a time."""
    one = 0x80 >> (i % 8)
    return one if (i // 8) % 2 == 0 else one ^ 0xFF


class Prbs31(wiring.Component):
    """s[n] = s[n-31] ^ s[n-28], 8 bits per ``advance``, MSB first; ``load`` starts over from ``seed``.

    ``state`` bit j holds s[n + j]; the next byte is s[n .. n + 7] and the new
    bits s[n + 31 + i] = s[n + i] ^ s[n + 3 + i] only need bits already held.
    """

    def __init__(self):
        super().__init__({"seed": In(31), "load": In(1), "advance": In(1), "byte": Out(8)})

    def elaborate(self, platform):
        mod = Module()
        state = Signal(31, init=SEED_MASK)
        seed = Mux(self.seed == 0, SEED_MASK, self.seed)
        mod.d.comb += self.byte.eq(Cat(*(state[7 - k] for k in range(8))))  # s[n] is the MSB
        fresh = Cat(*(state[i] ^ state[i + 3] for i in range(8)))
        with mod.If(self.load):
            mod.d.sync += state.eq(Cat(*(seed[30 - j] for j in range(31))))
        with mod.Elif(self.advance):
            mod.d.sync += state.eq(Cat(state[8:], fresh))
        return mod


def walk_logic(index) -> object:
    """walk_byte as logic on a byte index."""
    one = Const(0x80, 8) >> index[:3]
    return Mux(index[3], ~one, one)
